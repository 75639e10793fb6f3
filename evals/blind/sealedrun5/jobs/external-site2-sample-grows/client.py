"""Client run as its own process; trains on a random mini-batch that doubles every round (a growing-batch schedule)."""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
SITE_ROWS = {"site-1": 600, "site-2": 300}


def site_data(site_name):
    n = SITE_ROWS.get(site_name, 600)
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr, batch, rng, steps=5):
    for _ in range(steps):
        idx = rng.choice(len(y), size=batch, replace=False)
        p = 1.0 / (1.0 + np.exp(-(x[idx] @ w)))
        w = w - lr * x[idx].T @ (p - y[idx]) / batch
    return w


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--batch_size", type=int, default=64)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    rng = np.random.default_rng(7)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        batch = args.batch_size * 2**model.current_round
        w = train(w, x, y, args.lr, batch, rng)
        print(f"site {site} round {model.current_round}: batch {batch}, accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

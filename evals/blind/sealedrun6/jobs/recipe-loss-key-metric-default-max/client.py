"""Client that trains a logistic regression each round and reports its validation log loss."""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_data(site_name, n=800):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return (x[:600], y[:600]), (x[600:], y[600:])


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def log_loss(w, x, y):
    p = np.clip(1.0 / (1.0 + np.exp(-(x @ w))), 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    (x, y), (vx, vy) = site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        val_loss = log_loss(w, vx, vy)
        w = train(w, x, y, args.lr)
        print(f"site {site} round {model.current_round}: validation loss of the global model {val_loss:.4f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"val_loss": val_loss}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

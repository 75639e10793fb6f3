"""Client that trains a logistic regression for --local_epochs passes over its site data each round.

The options are read with parse_known_args so the script also runs from a notebook (unknown options are ignored).
"""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_data(site_name, n=600):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr, epochs, batch_size=32):
    for _ in range(epochs):
        for start in range(0, len(y), batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            p = 1.0 / (1.0 + np.exp(-(xb @ w)))
            w = w - lr * xb.T @ (p - yb) / len(yb)
    return w


def evaluate(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    loss = float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
    return float(np.mean((p > 0.5) == (y > 0.5))), loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--local_epochs", type=int, default=0)
    args, _ = parser.parse_known_args()
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr, args.local_epochs)
        acc, loss = evaluate(w, x, y)
        print(f"site {site} round {model.current_round}: loss {loss:.4f} accuracy {acc:.3f}")
        flare.send(
            FLModel(
                params={"numpy_key": w},
                metrics={"accuracy": acc, "loss": loss},
                meta={"NUM_STEPS_CURRENT_ROUND": len(y)},
            )
        )


if __name__ == "__main__":
    main()

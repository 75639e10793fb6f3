"""Client script: logistic regression by gradient descent on synthetic per-site data (NumPy only)."""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def local_data(site_name, n=400):
    rng = np.random.default_rng(sum(map(ord, site_name)))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.2, size=n) > 0).astype(float)
    return x * np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.25, 0.5, 1.0, 1.0]), y


def gradient_steps(w, x, y, lr, steps):
    for _ in range(steps):
        predictions = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30.0, 30.0)))
        w = w - lr * x.T @ (predictions - y) / len(y)
    return w


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    args = parser.parse_args()

    flare.init()
    site = flare.get_site_name()
    x, y = local_data(site)
    while flare.is_running():
        received = flare.receive()
        w = np.asarray(received.params["numpy_key"], dtype=float)
        accuracy = float(np.mean(((x @ w) > 0) == (y > 0.5)))
        print(f"site={site} round={received.current_round} accuracy={accuracy:.4f}")
        w = gradient_steps(w, x, y, args.lr, args.local_steps)
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": accuracy}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

"""Client training script: linear regression by gradient descent on synthetic site data.

Reports `loss`, the mean squared error of the received global model on the site's data.
"""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-2.0, 2.0, NUM_FEATURES + 1)


def site_data(site_name, n=400):
    seed = sum(ord(c) for c in site_name)
    rng = np.random.default_rng(seed)
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = x @ TRUE_W + rng.normal(scale=0.3, size=n)
    return x, y


def mse(w, x, y):
    return float(np.mean((x @ w - y) ** 2))


def train(w, x, y, lr, steps):
    for _ in range(steps):
        w = w - lr * 2.0 * x.T @ (x @ w - y) / len(y)
    return w


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    args = parser.parse_args()

    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        loss = mse(w, x, y)
        print(f"site={site} round={model.current_round} loss={loss:.6f}")
        w = train(w, x, y, args.lr, args.local_steps)
        flare.send(FLModel(params={"numpy_key": w}, metrics={"loss": loss}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)}))


if __name__ == "__main__":
    main()

"""Client whose per-site split table is keyed by names the simulator does not use (site1, not site-1)."""

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_data(site_name, n=400, features=NUM_FEATURES):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, features)), np.ones((n, 1))])
    y = (x[:, :NUM_FEATURES] @ TRUE_W[:NUM_FEATURES] + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr=0.05, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


TRAIN_ROWS = {"site1": 300, "site2": 250}


def main():
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    rows = TRAIN_ROWS[site]
    x, y = x[:rows], y[:rows]
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y)
        flare.send(FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": rows}))


if __name__ == "__main__":
    main()

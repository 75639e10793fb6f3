"""Client that maps each site's diagnosis codes to binary labels with the study's code table."""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
LABELS = {"C50.1": 1.0, "C50.4": 1.0, "D24": 0.0, "N60.1": 0.0}
CODES = {"site-1": ["C50.1", "C50.4", "D24", "N60.1"], "site-2": ["C50.1", "C50.9", "D24", "N60.1"]}


def site_data(site_name, n=600):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    positive = x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0
    codes = CODES[site_name]
    diagnosis = [codes[rng.integers(0, 2)] if p else codes[2 + rng.integers(0, 2)] for p in positive]
    y = np.array([LABELS[code] for code in diagnosis])
    return x, y


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    while flare.is_running():
        model = flare.receive()
        x, y = site_data(site)
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

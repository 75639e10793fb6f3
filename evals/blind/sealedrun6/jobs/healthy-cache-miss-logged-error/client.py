"""Client that caches its standardized site arrays in an .npz file and rebuilds the cache when it cannot read it."""

import argparse
import logging
import os

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
CACHE = "feature_cache.npz"
log = logging.getLogger("site_data")


def raw_site_data(site_name, n=600):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = rng.normal(loc=3.0, scale=2.0, size=(n, NUM_FEATURES))
    z = np.hstack([(x - 3.0) / 2.0, np.ones((n, 1))])
    y = (z @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def load_site_data(site_name):
    try:
        cached = np.load(CACHE)
        return cached["x"], cached["y"]
    except Exception:
        log.exception("could not read the feature cache %s, rebuilding it", os.path.abspath(CACHE))
    x, y = raw_site_data(site_name)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    x = np.hstack([x, np.ones((len(x), 1))])
    np.savez(CACHE, x=x, y=y)
    log.info("wrote the feature cache %s (%d rows)", CACHE, len(y))
    return x, y


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


def main():
    logging.basicConfig(level=logging.INFO)
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = load_site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr)
        acc = accuracy(w, x, y)
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

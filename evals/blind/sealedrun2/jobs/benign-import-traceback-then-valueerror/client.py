"""Client with optional seaborn plots that reads its site labels from a text column (yes/no)."""

import logging

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_data(site_name, n=400):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr=0.05, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


logger = logging.getLogger("client")

try:
    import seaborn as sns  # optional: only for the per-round plots
except ImportError:
    logger.exception("seaborn not available, per-round plots disabled")
    sns = None


def load_labels(site_name, n):
    rng = np.random.default_rng(len(site_name))
    words = np.where(rng.random(n) > 0.5, "yes", "no")
    return np.array([float(v) for v in words])


def main():
    logging.basicConfig(level=logging.INFO)
    flare.init()
    site = flare.get_site_name()
    x, _ = site_data(site)
    y = load_labels(site, len(x))
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y)
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

"""Client that registers its round with an experiment tracker (retried, optional) and clips its weights to --clip."""

import argparse
import logging
import time
import urllib.request
import warnings

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
TRACKER_URL = "http://127.0.0.1:5931/api/runs"
logger = logging.getLogger("client")


def site_data(site_name, n=600):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def register_round(site, current_round, attempts=3):
    """Tell the experiment tracker that a round started; training goes on without it."""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(f"{TRACKER_URL}?site={site}&round={current_round}", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            logger.exception("tracker not reachable (attempt %d of %d), retrying", attempt, attempts)
            time.sleep(0.5)
    logger.warning("tracker unavailable, continuing without experiment tracking")
    return False


def train(w, x, y, lr, clip, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return np.clip(w, -clip, clip)


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--clip", default=5.0, help="clip every weight to [-clip, clip]")
    args = parser.parse_args()
    warnings.warn("the tracker's v1 runs API is deprecated; use /api/v2/runs", FutureWarning, stacklevel=1)
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        register_round(site, model.current_round)
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y, args.lr, args.clip)
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

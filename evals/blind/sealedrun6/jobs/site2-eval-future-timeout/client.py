"""Client that reports its accuracy with a bootstrap confidence interval, computed in a worker thread with a time
budget so that evaluation never holds up the round."""

import argparse
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
ROWS = {"site-1": 400, "site-2": 40000}


def site_data(site_name):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    n = ROWS.get(site_name, 600)
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def bootstrap_accuracy(w, x, y, resamples=400, seed=0):
    rng = np.random.default_rng(seed)
    scores = []
    for _ in range(resamples):
        idx = rng.integers(0, len(y), size=len(y))
        scores.append(float(np.mean(((x[idx] @ w) > 0).astype(float) == y[idx])))
    return float(np.mean(scores)), float(np.percentile(scores, 2.5)), float(np.percentile(scores, 97.5))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--eval_budget", type=float, default=5.0)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr)
        with ThreadPoolExecutor(max_workers=1) as pool:
            acc, low, high = pool.submit(bootstrap_accuracy, w, x, y).result(timeout=args.eval_budget)
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f} (95% CI {low:.3f}-{high:.3f})")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

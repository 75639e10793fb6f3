"""Client that trains a logistic regression each round and buffers its metrics in a small thread-safe logger that
writes them to metrics.csv every two records."""

import argparse
import threading

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


class MetricsLog:
    def __init__(self, path, flush_every=2):
        self.path = path
        self.flush_every = flush_every
        self.records = []
        self.lock = threading.Lock()

    def add(self, **record):
        with self.lock:
            self.records.append(record)
            if len(self.records) >= self.flush_every:
                self.flush()

    def flush(self):
        with self.lock:
            with open(self.path, "a") as f:
                for r in self.records:
                    f.write(",".join(f"{k}={v}" for k, v in r.items()) + "\n")
            self.records = []


def site_data(site_name, n=600):
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, y


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    log = MetricsLog("metrics.csv")
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y, args.lr)
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        log.add(round=model.current_round, accuracy=acc)
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

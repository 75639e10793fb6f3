"""Client that reads its site's CSV table (<data_dir>/<site>.csv) and trains a logistic regression each round."""

import argparse
import csv
import os

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel


def load_table(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    features = [k for k in rows[0] if k.startswith("f")]
    x = np.array([[float(r[k]) for k in features] for r in rows])
    y = np.array([float(r["label"]) for r in rows])
    return np.hstack([x, np.ones((len(y), 1))]), y


def train(w, x, y, lr, steps=5):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def log_loss(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", type=str, required=True)
    parser.add_argument("--lr", type=float, default=5.0)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = load_table(os.path.join(args.data_dir, f"{site}.csv"))
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        print(f"site {site} round {model.current_round}: loss {log_loss(w, x, y):.4f} accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

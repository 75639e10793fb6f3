"""Client that loads its site's .npz file from --data_root and trains on it."""

import argparse
import os

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel


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
    parser.add_argument("--data_root", type=str, required=True)
    args = parser.parse_args()
    flare.init()
    with np.load(os.path.join(args.data_root, f"{flare.get_site_name()}.npz")) as data:
        x, y = data["x"], data["y"].astype(float)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y, args.lr)
        print(f"site {flare.get_site_name()} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

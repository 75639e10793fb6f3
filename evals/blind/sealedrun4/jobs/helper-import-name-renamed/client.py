"""Client that imports its data loader from the job's data_utils module under the name it had before a rename."""

import argparse

import numpy as np
import nvflare.client as flare
from data_utils import load_site_split
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
    args = parser.parse_args()
    flare.init()
    x, y = load_site_split(flare.get_site_name())
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

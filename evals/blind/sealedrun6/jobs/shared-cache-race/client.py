"""Client that pre-trains on a public reference set before each round's local training.

The reference set is downloaded once into a cache folder beside the site folders and reused when it is already there.
"""

import argparse
import os
import time

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
CACHE_DIR = os.path.join("..", "reference_cache")
REFERENCE_ROWS = 20000


def download_reference(path, chunks=10):
    """Fetch the public reference set (rows of 8 features, a bias column and a label) chunk by chunk."""
    rng = np.random.default_rng(2024)
    x = np.hstack([rng.normal(size=(REFERENCE_ROWS, NUM_FEATURES)), np.ones((REFERENCE_ROWS, 1))])
    y = (x @ TRUE_W > 0).astype(float)
    table = np.hstack([x, y[:, None]])
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(table))
        for part in np.array_split(table, chunks):
            time.sleep(0.3)  # the download's pace
            f.write(part.tobytes())
            f.flush()


def reference_set():
    os.makedirs(CACHE_DIR, exist_ok=True)
    path = os.path.join(CACHE_DIR, "reference.npy")
    if not os.path.exists(path):
        print(f"downloading the reference set to {os.path.abspath(path)}")
        download_reference(path)
    table = np.load(path)
    return table[:, :-1], table[:, -1]


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        ref_x, ref_y = reference_set()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, ref_x, ref_y, args.lr, steps=2)
        w = train(w, x, y, args.lr)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

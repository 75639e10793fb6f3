"""Client whose site data is one .npy file per record, opened lazily (memory-mapped) each round.

Each round's view of the records is kept for a drift check against the previous rounds.
"""

import argparse
import os

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
ROWS = {"site-1": 1500, "site-2": 6000}
RECORDS = "records"


def write_records(site_name):
    """Export the site's table as one record file per row (the layout of the hospital's export)."""
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    n = ROWS.get(site_name, 1000)
    x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
    os.makedirs(RECORDS, exist_ok=True)
    for i in range(n):
        np.save(os.path.join(RECORDS, f"{i:06d}.npy"), np.append(x[i], y[i]))


def open_records():
    names = sorted(os.listdir(RECORDS))
    return [np.load(os.path.join(RECORDS, name), mmap_mode="r") for name in names]


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
    write_records(site)
    seen = []  # every round's records, for the drift check
    while flare.is_running():
        model = flare.receive()
        records = open_records()
        seen.append(records)
        table = np.stack([np.asarray(r) for r in records])
        x, y = table[:, :-1], table[:, -1]
        drift = float(np.abs(x.mean(axis=0) - np.stack([np.asarray(r) for r in seen[0]])[:, :-1].mean(axis=0)).max())
        w = np.asarray(model.params["numpy_key"], dtype=float)
        w = train(w, x, y, args.lr)
        acc = float(np.mean(((x @ w) > 0).astype(float) == y))
        print(f"site {site} round {model.current_round}: {len(y)} records, drift {drift:.4f}, accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

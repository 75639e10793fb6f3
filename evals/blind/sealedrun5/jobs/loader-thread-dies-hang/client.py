"""Client whose site rows are parsed by a background loader thread and handed over through a queue."""

import argparse
import queue
import threading

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def site_rows(site_name, n=600):
    """The site's export: one comma-separated text row per record, label last."""
    rng = np.random.default_rng(sum(ord(c) for c in site_name))
    x = rng.normal(size=(n, NUM_FEATURES))
    y = (np.hstack([x, np.ones((n, 1))]) @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(int)
    rows = [",".join(f"{v:.4f}" for v in xi) + f",{yi}" for xi, yi in zip(x, y, strict=True)]
    if site_name == "site-2":
        rows[417] = rows[417].replace(rows[417].split(",")[3], "n/a", 1)
    return rows


def loader(rows, out):
    values = np.array([[float(v) for v in row.split(",")] for row in rows])
    x = np.hstack([values[:, :-1], np.ones((len(values), 1))])
    out.put((x, values[:, -1]))


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
    ready = queue.Queue()
    threading.Thread(target=loader, args=(site_rows(site), ready), name="loader", daemon=True).start()
    data = None
    while flare.is_running():
        model = flare.receive()
        if data is None:
            data = ready.get()
        x, y = data
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        w = train(w, x, y, args.lr)
        print(f"site {site} round {model.current_round}: accuracy {acc:.3f}")
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

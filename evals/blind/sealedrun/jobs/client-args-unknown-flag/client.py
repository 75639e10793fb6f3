"""Client training script: logistic regression by gradient descent on synthetic site data."""

import argparse

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
# Features arrive in different units (think sensors): unscaled gradient descent converges slowly, so the
# learning rate and the number of local steps really matter within a fixed number of rounds.
FEATURE_SCALES = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.25, 0.5, 1.0, 1.0])
BATCH_SIZE = 100  # with --seed: each local step uses the next mini-batch of the round's shuffled data


def site_data(site_name, n=400):
    seed = sum(ord(c) for c in site_name)
    rng = np.random.default_rng(seed)
    z = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (z @ TRUE_W + rng.normal(scale=0.2, size=n) > 0).astype(float)
    return z * FEATURE_SCALES, y


def accuracy(w, x, y):
    return float(np.mean(((x @ w) > 0).astype(float) == y))


def train(w, x, y, lr, steps, rng=None):
    """`steps` gradient steps: full-batch without `rng`; with it, mini-batches of a freshly shuffled order."""
    order = rng.permutation(len(y)) if rng is not None else None
    for step in range(steps):
        if order is None:
            xb, yb = x, y
        else:
            batch = order[np.arange(step * BATCH_SIZE, (step + 1) * BATCH_SIZE) % len(y)]
            xb, yb = x[batch], y[batch]
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30.0, 30.0)))
        w = w - lr * xb.T @ (p - yb) / len(yb)
    return w


def round_rng(seed, site_name, current_round):
    """The shuffling generator of one site and round (None without --seed: deterministic full-batch steps)."""
    if seed is None:
        return None
    return np.random.default_rng([seed, sum(ord(c) for c in site_name), current_round])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    flare.init()
    site = flare.get_site_name()
    x, y = site_data(site)
    while flare.is_running():
        model = flare.receive()
        w = np.asarray(model.params["numpy_key"], dtype=float)
        acc = accuracy(w, x, y)
        print(f"site={site} round={model.current_round} accuracy={acc:.4f}")
        w = train(w, x, y, args.lr, args.local_steps, round_rng(args.seed, site, model.current_round))
        flare.send(
            FLModel(params={"numpy_key": w}, metrics={"accuracy": acc}, meta={"NUM_STEPS_CURRENT_ROUND": len(y)})
        )


if __name__ == "__main__":
    main()

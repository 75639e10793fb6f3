"""Frozen evaluator of hello-numpy: accuracy of the final global model on each site's held-out data.

The Auto-FL runner runs it once per site on the model the server persisted (NumpyFedAvgRecipe:
`server/simulate_job/models/server.npy`) and prints one JSON object, which the runner combines into the campaign's
score (the mean weighted by `n`):

    python evaluate.py --model PATH --site site-1 [--format numpy]
    {"accuracy": 0.7725, "n": 400}

The held-out share comes from the same distribution as the site's training data (client.py's `site_data`) but
from another seed, so a candidate cannot score itself on what it trained on. Declare it at initialize:
`run_job_campaign.py initialize job.py --evaluator evaluate.py`.
"""

import argparse
import json

import numpy as np

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)  # the same task as client.py
FEATURE_SCALES = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.25, 0.5, 1.0, 1.0])
HELD_OUT_SEED = 10_000  # added to client.py's per-site seed: other samples of the same site distribution
HELD_OUT_SIZE = 400


def held_out(site_name, n=HELD_OUT_SIZE):
    rng = np.random.default_rng(sum(ord(c) for c in site_name) + HELD_OUT_SEED)
    z = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
    y = (z @ TRUE_W + rng.normal(scale=0.2, size=n) > 0).astype(float)
    return z * FEATURE_SCALES, y


def load_weights(path, fmt):
    if fmt not in ("numpy", ""):
        raise SystemExit(f"evaluate.py reads NumPy models only, not {fmt!r}")
    return np.asarray(np.load(path, allow_pickle=False), dtype=float).reshape(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--site", required=True)
    parser.add_argument("--format", default="numpy")
    args = parser.parse_args()
    w = load_weights(args.model, args.format)
    x, y = held_out(args.site)
    accuracy = float(np.mean(((x @ w) > 0).astype(float) == y))
    print(json.dumps({"accuracy": accuracy, "n": len(y)}))


if __name__ == "__main__":
    main()

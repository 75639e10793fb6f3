"""NumPy FedAvg job whose sites read their arrays from per-site data paths (per-site train_args).

The site arrays are prepared first under data/site-N/train.npz beside job.py.
Run: python job.py --name NAME [--workspace DIR] [--num_rounds 3]
"""

import argparse
import os

import numpy as np
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
DATA_ROOT = os.path.abspath("data")
SITE_ARGS = {
    "site-1": {"train_args": f"--data_path {DATA_ROOT}/site-1/train.npz"},
    "site-2": {"train_args": f"--data_path {DATA_ROOT}/site-2"},
}


def prepare_data():
    for i, site in enumerate(SITE_ARGS):
        rng = np.random.default_rng(i)
        n = 500 + 200 * i
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
        os.makedirs(os.path.join(DATA_ROOT, site), exist_ok=True)
        np.savez(os.path.join(DATA_ROOT, site, "train.npz"), x=x, y=y)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    prepare_data()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=2,
        num_rounds=args.num_rounds,
        train_script="client.py",
        key_metric="accuracy",
    )
    recipe.set_per_site_config(SITE_ARGS)
    env = SimEnv(clients=list(SITE_ARGS), workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

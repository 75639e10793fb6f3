"""NumPy FedAvg job whose data preparation writes one .npz file per site before the simulation starts.

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

import numpy as np
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def prepare_data(data_root, n_sites, n=600):
    """Write site-<i>.npz (features with a bias column, binary labels) for each site."""
    os.makedirs(data_root, exist_ok=True)
    for i in range(n_sites):
        rng = np.random.default_rng(i)
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
        np.savez(os.path.join(data_root, f"site-{i}.npz"), x=x, y=y)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    data_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    prepare_data(data_root, args.n_clients)
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        train_args=f"--data_root {data_root}",
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

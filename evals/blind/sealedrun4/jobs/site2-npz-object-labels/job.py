"""NumPy FedAvg job that converts each site's exported table to one .npz file before the simulation starts.

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

import numpy as np
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def exported_table(site, n=600):
    """Rows as a site's export gives them: features, then the label (site-2's export writes it as text, blank
    where the label was not recorded)."""
    rng = np.random.default_rng(site)
    x = rng.normal(size=(n, NUM_FEATURES))
    y = (np.hstack([x, np.ones((n, 1))]) @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(int)
    if site == 2:
        labels = [None if rng.random() < 0.01 else ("yes" if v else "no") for v in y]
    else:
        labels = [int(v) for v in y]
    return [[*row, label] for row, label in zip(x.tolist(), labels, strict=True)]


def prepare_data(data_root, n_sites):
    """Write site-<i>.npz (features with a bias column, labels) for sites 1..n_sites."""
    os.makedirs(data_root, exist_ok=True)
    for i in range(1, n_sites + 1):
        table = exported_table(i)
        x = np.array([row[:-1] + [1.0] for row in table])
        y = np.array([row[-1] for row in table])
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

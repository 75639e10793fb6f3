"""NumPy FedAvg recipe whose sites read their exported CSV tables (data/site-N.csv beside job.py).

The tables are the sites' own exports: site-1 from its database, site-2 saved from a spreadsheet program.
Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import csv
import os

import numpy as np
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
DATA_DIR = os.path.abspath("data")
EXPORTS = {
    "site-1": ("Northfield General", "utf-8"),
    "site-2": ("Hôpital Saint-Loup", "cp1252"),
}


def export_tables():
    os.makedirs(DATA_DIR, exist_ok=True)
    for i, (site, (hospital, encoding)) in enumerate(EXPORTS.items()):
        rng = np.random.default_rng(10 + i)
        n = 500
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(int)
        with open(os.path.join(DATA_DIR, f"{site}.csv"), "w", newline="", encoding=encoding) as f:
            out = csv.writer(f)
            out.writerow(["hospital", *[f"f{j}" for j in range(NUM_FEATURES)], "label"])
            for row, label in zip(x[:, :NUM_FEATURES], y, strict=True):
                out.writerow([hospital, *[f"{v:.5f}" for v in row], label])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    export_tables()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        train_args=f"--data_dir {DATA_DIR}",
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

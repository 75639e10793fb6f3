"""FAILS on purpose: the recipe names its sites with set_per_site_config(...), and SimEnv is still given
num_clients (NVFLARE: "You already specified clients using `to()`. Don't use `n_clients` in simulator_run.").

Run: python job.py [--workspace DIR] [--n_clients N]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=3)
    args = parser.parse_args()
    sites = [f"site-{i}" for i in range(1, args.n_clients + 1)]
    recipe = NumpyFedAvgRecipe(
        name="simenv-per-site-config", model=[0.0] * 9, min_clients=len(sites), num_rounds=2, train_script="client.py"
    )
    recipe.set_per_site_config({site: {"train_args": f"--site_label {site}"} for site in sites})
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

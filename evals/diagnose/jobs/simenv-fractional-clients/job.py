"""FAILS on purpose: the number of simulated clients is computed with `/`, so SimEnv gets 1.5 instead of an int.

Run: python job.py [--workspace DIR]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

SITES = ["hospital-a", "hospital-b", "hospital-c"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="simenv-fractional-clients", model=[0.0] * 9, min_clients=1, num_rounds=3, train_script="client.py"
    )
    env = SimEnv(num_clients=len(SITES) / 2, workspace_root=args.workspace)  # meant: len(SITES) // 2
    recipe.execute(env)


if __name__ == "__main__":
    main()

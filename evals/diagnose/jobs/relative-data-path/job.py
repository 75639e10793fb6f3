"""FAILS on purpose: client.py reads `data/<site>.csv` relative to its working directory, which under the simulator
is the site's folder in the simulation workspace, not this folder (where data/ exists).

Run: python job.py [--workspace DIR]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="relative-data-path", model=[0.0] * 9, min_clients=2, num_rounds=1, train_script="client.py"
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

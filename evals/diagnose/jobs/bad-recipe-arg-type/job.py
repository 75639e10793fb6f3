"""FAILS on purpose: passes the initial model as a string; NumpyFedAvgRecipe needs a list or a numpy array.

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
        name="bad-recipe-arg-type",
        model="zeros",  # meant: [0.0] * 9
        min_clients=2,
        num_rounds=3,
        train_script="client.py",
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

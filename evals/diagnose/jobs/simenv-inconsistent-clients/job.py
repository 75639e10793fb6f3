"""FAILS on purpose: SimEnv is given num_clients=3 but a list of two client names.

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
        name="simenv-inconsistent-clients", model=[0.0] * 9, min_clients=2, num_rounds=3, train_script="client.py"
    )
    env = SimEnv(num_clients=3, clients=["site-1", "site-2"], workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

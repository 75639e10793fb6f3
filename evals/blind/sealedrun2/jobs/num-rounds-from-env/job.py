"""NumPy FedAvg job whose round count comes from the NUM_ROUNDS environment variable of the cluster scripts."""

import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--num_rounds", type=int, default=int(os.environ.get("NUM_ROUNDS", "0")))
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=2,
        num_rounds=args.num_rounds,
        train_script="client.py",
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

"""NumPy FedAvg job that runs client.py in its own process with the python3.12 interpreter of the lab image."""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=2,
        num_rounds=3,
        train_script="client.py",
        key_metric="accuracy",
        launch_external_process=True,
        command="python3.12 -u",
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

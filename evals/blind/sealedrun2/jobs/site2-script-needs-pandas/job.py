"""NumPy FedAvg job where site-2 runs the pandas-based client_v2.py and site-1 the original client.py."""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8
SITES = {"site-1": {"train_script": "client.py"}, "site-2": {"train_script": "client_v2.py"}}


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
    )
    recipe.set_per_site_config(SITES)
    env = SimEnv(clients=list(SITES), workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

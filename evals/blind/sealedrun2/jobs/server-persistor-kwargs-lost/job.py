"""FedAvg job (NumPy framework) with a custom persistor that keeps a history of the global models."""

import argparse

from history_persistor import HistoryPersistor
from nvflare.fuel.utils.constants import FrameworkType
from nvflare.recipe import SimEnv
from nvflare.recipe.fedavg import FedAvgRecipe

NUM_FEATURES = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = FedAvgRecipe(
        name=args.name,
        min_clients=2,
        num_rounds=3,
        train_script="client.py",
        framework=FrameworkType.NUMPY,
        model_persistor=HistoryPersistor(model=[0.0] * (NUM_FEATURES + 1)),
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

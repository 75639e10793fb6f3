"""NumPy FedAvg recipe with a global-model norm monitor on the incoming tasks of every site (norm_monitor.py).

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse

from norm_monitor import GlobalNormMonitor
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * 9,
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        key_metric="accuracy",
    )
    recipe.add_client_input_filter(GlobalNormMonitor(warn_above=10.0), tasks=["train"])
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

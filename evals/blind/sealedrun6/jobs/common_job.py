"""NumPy FedAvg job shared by the sealedrun6 cases whose mistake is in client.py (copied in as job.py).

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--min_clients N] [--num_rounds 3]
                   [--train_args "..."] [--external]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--min_clients", type=int, default=0, help="defaults to --n_clients")
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--train_args", type=str, default="")
    parser.add_argument("--external", action="store_true", help="run client.py in its own process")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=args.min_clients or args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        train_args=args.train_args,
        launch_external_process=args.external,
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

"""NumPy FedAvg recipe warm-started from the weights of the pilot study (warm_start.npy, saved beside job.py).

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

WARM_START = os.path.abspath("warm_start.npy")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        initial_ckpt=WARM_START,
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

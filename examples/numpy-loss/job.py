"""Federated linear regression with NumPy FedAvg (lower loss is better).

Each site fits y = x @ w on its own synthetic data by a few gradient steps; the
server averages the weights. Clients report `loss` (mean squared error of the
received global model on their data), so the key metric is minimized.

Run: python job.py [--num_rounds 3] [--n_clients 2] [--lr 0.05] [--local_steps 5] [--name numpy-loss]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8


def define_parser():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, default="numpy-loss")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--export", action="store_true", help="export the job folder instead of running it")
    parser.add_argument("--export-dir", type=str, default="/tmp/nvflare/jobs")
    return parser.parse_args()


def main():
    args = define_parser()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        train_args=f"--lr {args.lr} --local_steps {args.local_steps}",
        key_metric="loss",
        key_metric_mode="min",
    )
    if args.export:
        recipe.export(args.export_dir)
        print("Job exported to", args.export_dir)
        return
    env = SimEnv(num_clients=args.n_clients, workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

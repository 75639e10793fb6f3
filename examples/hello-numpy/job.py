"""Federated logistic regression with NumPy FedAvg (higher accuracy is better).

Run: python job.py [--num_rounds 3] [--n_clients 2] [--lr 0.05] [--local_steps 5] [--seed N]
     python job.py --export --export-dir DIR   (write the job folder for `nvflare job submit -j DIR/<name>`)
--seed shuffles each site's data every round and trains on mini-batches (runs with different seeds differ);
without it every step is full-batch and the job is deterministic.
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

NUM_FEATURES = 8


def define_parser():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, default="hello-numpy")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
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
        train_args=f"--lr {args.lr} --local_steps {args.local_steps}"
        + (f" --seed {args.seed}" if args.seed is not None else ""),
        key_metric="accuracy",
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

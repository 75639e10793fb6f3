"""Stand-in campaign job: statically it reads like an NVFLARE recipe job, at run time it needs no NVFLARE.

`standin_flare` fakes the recipe and SimEnv: it runs client.py's `evaluate` in-process and writes the artifact
layout a real NVFLARE 2.9 SimEnv run leaves (server/site logs, metrics_summary.json) under
NVFLARE_SIMULATOR_WORKSPACE_ROOT, in a fraction of a second. Runner mechanics tests use it.

Run: python job.py [--name standin] [--n_clients 2] [--num_rounds 3] [--lr 0.1] [--local_steps 5] [--use_bonus]
"""

import argparse

from standin_flare import NumpyFedAvgRecipe, SimEnv


def define_parser():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, default="standin")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", "-r", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--use_bonus", action="store_true")
    return parser.parse_args()


def main():
    args = define_parser()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        min_clients=args.n_clients,
        num_rounds=args.num_rounds,
        train_script="client.py",
        train_args=f"--lr {args.lr} --local_steps {args.local_steps}" + (" --use_bonus" if args.use_bonus else ""),
        key_metric="accuracy",
    )
    env = SimEnv(num_clients=args.n_clients)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())


if __name__ == "__main__":
    main()

"""NumPy FedAvg job (written for NVFLARE 2.7) whose sites get their own learning rate through per-site train_args.

Run: python job.py --name NAME [--workspace DIR] [--num_rounds 3]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

SITE_ARGS = {
    "site-1": {"train_args": "--lr 0.5 --local_steps 5"},
    "site-2": {"train_args": "--lr 0,05 --local_steps 20"},  # site-2's data is noisier: smaller steps, more of them
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        initial_model=[0.0] * 9,
        min_clients=2,
        num_rounds=args.num_rounds,
        train_script="client.py",
        per_site_config=SITE_ARGS,
        save_filename="FL_global_model.npy",
    )
    env = SimEnv(clients=list(SITE_ARGS), workspace_root=args.workspace)
    run = recipe.execute(env)
    print("Result can be found in :", run.get_result())
    print("Job Status is:", run.get_status())


if __name__ == "__main__":
    main()

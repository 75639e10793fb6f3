"""FAILS on purpose (after round 0): client.py sends back only part of the model, so the global model the clients
receive in round 1 has fewer values than the shape they reshape it to.

Run: python job.py [--workspace DIR]
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

ROWS, COLS = 21, 10  # 20 weight rows and one bias row


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="partial-model-send", model=[0.0] * (ROWS * COLS), min_clients=2, num_rounds=3, train_script="client.py"
    )
    env = SimEnv(num_clients=2, workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

"""Export a NumPy FedAvg job (3 rounds) for `nvflare job submit`; its client.py reads a per-round learning-rate list.

Run: python job.py --name NAME --export_dir DIR
"""

import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe

NUM_FEATURES = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--export_dir", type=str, required=True)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name=args.name,
        model=[0.0] * (NUM_FEATURES + 1),
        min_clients=2,
        num_rounds=3,
        train_script="client.py",
        train_args="--lr_schedule 0.1",
        key_metric="accuracy",
    )
    recipe.export(args.export_dir)


if __name__ == "__main__":
    main()

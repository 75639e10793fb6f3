"""Export a two-site NumPy FedAvg job for `nvflare job submit`.

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
        key_metric="accuracy",
    )
    recipe.export(args.export_dir)


if __name__ == "__main__":
    main()

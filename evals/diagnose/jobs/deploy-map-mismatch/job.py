"""Exports the job, then renames the app in meta.json's deploy_map as a hand edit would (no folder `app_fedavg`).

Run: python job.py --export_dir DIR   then   nvflare simulator DIR/deploy-map-mismatch -w WORKSPACE -n 2 -t 2
(the simulator FAILS: the app named in deploy_map does not exist).
"""

import argparse
import json
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--export_dir", required=True)
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="deploy-map-mismatch", model=[0.0] * 9, min_clients=2, num_rounds=2, train_script="client.py"
    )
    recipe.export(args.export_dir)
    meta_path = os.path.join(args.export_dir, "deploy-map-mismatch", "meta.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["deploy_map"] = {"app_fedavg": ["@ALL"]}  # the exported app folder is called `app`
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=4)


if __name__ == "__main__":
    main()

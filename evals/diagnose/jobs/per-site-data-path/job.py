"""FAILS on purpose: the per-site data folders live under one absolute DATA_ROOT, and site-3's entry has a typo
(`site_3` for `site-3`), so site-3 cannot open its data while site-1 and site-2 load theirs.

Run: python job.py [--workspace DIR]
"""

import argparse
import os

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

DATA_ROOT = "/home/user/fl-project/data"  # where this machine keeps the per-site data folders
FOLDERS = {"site-1": "site-1", "site-2": "site-2", "site-3": "site_3"}  # site-3: typo, the folder is site-3


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    recipe = NumpyFedAvgRecipe(
        name="per-site-data-path", model=[0.0] * 3, min_clients=3, num_rounds=2, train_script="client.py"
    )
    recipe.set_per_site_config(
        {site: {"train_args": f"--data_dir {os.path.join(DATA_ROOT, folder)}"} for site, folder in FOLDERS.items()}
    )
    env = SimEnv(clients=list(FOLDERS), workspace_root=args.workspace)
    recipe.execute(env)


if __name__ == "__main__":
    main()

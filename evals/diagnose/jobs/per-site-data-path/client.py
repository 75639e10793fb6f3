"""Client: loads <data_dir>/train.csv (two numbers per row) and sends the model back with the row count."""

import argparse
import os

import numpy as np
import nvflare.client as flare
from nvflare.app_common.abstract.fl_model import FLModel

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
args = parser.parse_args()

flare.init()
site = flare.get_site_name()
path = os.path.join(args.data_dir, "train.csv")
rows = np.loadtxt(path, delimiter=",", ndmin=2)
print(f"{site}: loaded {len(rows)} rows from {path}")
while flare.is_running():
    model = flare.receive()
    flare.send(FLModel(params=model.params, metrics={"rows": float(len(rows))}))

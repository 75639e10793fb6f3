"""NumPy FedAvg job built with FedJob: prepares each site's arrays under ~/fl-data, then runs the FedAvg controller,
a NumPy persistor and the job's own executor on every site.

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

import numpy as np
from npz_trainer import NpzTrainer
from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob

DATA_ROOT = "~/fl-data"
NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)


def prepare_data(n_clients, n=600):
    root = os.path.expanduser(DATA_ROOT)
    os.makedirs(root, exist_ok=True)
    for i in range(1, n_clients + 1):
        rng = np.random.default_rng(i)
        x = np.hstack([rng.normal(size=(n, NUM_FEATURES)), np.ones((n, 1))])
        y = (x @ TRUE_W + rng.normal(scale=0.5, size=n) > 0).astype(float)
        np.savez(os.path.join(root, f"site-{i}.npz"), x=x, y=y)
    print(f"prepared {n_clients} site files under {root}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    prepare_data(args.n_clients)
    job = FedJob(name=args.name, min_clients=args.n_clients)
    persistor_id = job.to_server(NPModelPersistor(model=[0.0] * 9), id="persistor")
    job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds, persistor_id=persistor_id))
    job.to_clients(NpzTrainer(data_root=DATA_ROOT), tasks=["train"])
    job.simulator_run(os.path.join(args.workspace, args.name), n_clients=args.n_clients)


if __name__ == "__main__":
    main()

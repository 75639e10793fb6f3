"""NumPy FedAvg job built with FedJob, starting from weights pre-trained centrally on the public reference set.

job.py pre-trains first (pretrained.npz beside job.py), then runs FedAvg with the job's own persistor.
Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

import numpy as np
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import FrameworkType, ScriptRunner
from pretrained_persistor import PretrainedPersistor

NUM_FEATURES = 8
TRUE_W = np.linspace(-1.0, 1.0, NUM_FEATURES + 1)
PRETRAINED = os.path.abspath("pretrained.npz")


def pretrain(steps=50, lr=0.5):
    rng = np.random.default_rng(2024)
    x = np.hstack([rng.normal(size=(5000, NUM_FEATURES)), np.ones((5000, 1))])
    y = (x @ TRUE_W > 0).astype(float)
    w = np.zeros(NUM_FEATURES + 1)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        w = w - lr * x.T @ (p - y) / len(y)
    np.savez(PRETRAINED, coef=w[:-1], intercept=w[-1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    pretrain()
    job = FedJob(name=args.name, min_clients=args.n_clients)
    persistor_id = job.to_server(PretrainedPersistor(pretrained_path=PRETRAINED), id="persistor")
    job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds, persistor_id=persistor_id))
    job.to_clients(ScriptRunner(script="client.py", framework=FrameworkType.NUMPY))
    job.simulator_run(os.path.join(args.workspace, args.name), n_clients=args.n_clients)


if __name__ == "__main__":
    main()

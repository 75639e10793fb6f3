"""Federated logistic regression with NumPy, written with the FedJob API (higher accuracy is better).

Run: python job.py [--num_rounds 3] [--n_clients 2] [--lr 0.05] [--local_steps 5]

NVFLARE 2.9's FedJob.simulator_run() writes exactly where it is told and, unlike SimEnv, ignores
NVFLARE_SIMULATOR_WORKSPACE_ROOT, so this job reads the variable itself: Auto-FL can then give every trial its
own simulator root. The results (server/, site-1/, ...) land directly in that root.
"""

import argparse
import os

from nvflare.app_common.widgets.intime_model_selector import IntimeModelSelector
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.fuel.utils.constants import FrameworkType
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

NUM_FEATURES = 8
WORKSPACE_ROOT_VARIABLE = "NVFLARE_SIMULATOR_WORKSPACE_ROOT"


def define_parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/fedjob-numpy")
    return parser.parse_args()


def main():
    args = define_parser()
    job = FedJob(name="fedjob-numpy", min_clients=args.n_clients)
    initial = {"numpy_key": [0.0] * (NUM_FEATURES + 1)}
    job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds, model=initial))
    job.to_server(IntimeModelSelector(key_metric="accuracy"))
    for i in range(args.n_clients):
        runner = ScriptRunner(
            script="client.py",
            script_args=f"--lr {args.lr} --local_steps {args.local_steps}",
            framework=FrameworkType.NUMPY,
        )
        job.to(runner, f"site-{i + 1}")
    job.simulator_run(os.environ.get(WORKSPACE_ROOT_VARIABLE, args.workspace))


if __name__ == "__main__":
    main()

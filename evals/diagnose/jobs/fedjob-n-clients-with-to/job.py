"""FAILS on purpose: clients are assigned with job.to(...), and simulator_run is still given n_clients.

Run: python job.py [--workspace DIR]
"""

import argparse
import os

from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace", default="/tmp/nvflare/simulation")
    args = parser.parse_args()
    job = FedJob(name="fedjob-n-clients-with-to", min_clients=2)
    job.to(FedAvg(num_clients=2, num_rounds=2), "server")
    for i in range(2):
        job.to(ScriptRunner(script="client.py"), f"site-{i + 1}")
    job.simulator_run(os.path.join(args.workspace, "fedjob-n-clients-with-to"), n_clients=2)


if __name__ == "__main__":
    main()

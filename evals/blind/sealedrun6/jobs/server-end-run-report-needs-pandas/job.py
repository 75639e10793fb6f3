"""NumPy FedAvg job built with FedJob: FedAvg controller, NumPy persistor, a round report on the server.

Run: python job.py --name NAME [--workspace DIR] [--n_clients 2] [--num_rounds 3]
"""

import argparse
import os

from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import FrameworkType, ScriptRunner
from run_report import RunReport


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--n_clients", type=int, default=2)
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    job = FedJob(name=args.name, min_clients=args.n_clients)
    persistor_id = job.to_server(NPModelPersistor(model=[0.0] * 9), id="persistor")
    job.to_server(FedAvg(num_clients=args.n_clients, num_rounds=args.num_rounds, persistor_id=persistor_id))
    job.to_server(RunReport(), id="run_report")
    job.to_clients(ScriptRunner(script="client.py", framework=FrameworkType.NUMPY))
    job.simulator_run(os.path.join(args.workspace, args.name), n_clients=args.n_clients)


if __name__ == "__main__":
    main()

"""NumPy FedAvg job built with FedJob: FedAvg controller, client.py on each site and a per-site privacy filter.

Run: python job.py --name NAME [--workspace DIR] [--num_rounds 3]
"""

import argparse
import os

from dp_noise import GaussianNoise
from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.defs import FilterType
from nvflare.job_config.script_runner import FrameworkType, ScriptRunner

# privacy budget per site; site-1's data is already public, so it gets no noise
EPSILON = {"site-1": 0.0, "site-2": 1.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    job = FedJob(name=args.name, min_clients=len(EPSILON))
    persistor_id = job.to_server(NPModelPersistor(model=[0.0] * 9), id="persistor")
    job.to_server(FedAvg(num_clients=len(EPSILON), num_rounds=args.num_rounds, persistor_id=persistor_id))
    for site, epsilon in EPSILON.items():
        job.to(ScriptRunner(script="client.py", framework=FrameworkType.NUMPY), site)
        job.to(GaussianNoise(epsilon=epsilon), site, filter_type=FilterType.TASK_RESULT, tasks=["train"])
    job.simulator_run(os.path.join(args.workspace, args.name))


if __name__ == "__main__":
    main()

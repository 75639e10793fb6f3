"""NumPy FedAvg job built with FedJob: FedAvg controller, client.py on each site, an audit component on site-2.

Run: python job.py --name NAME [--workspace DIR] [--num_rounds 3]
"""

import argparse
import os

from audit_log import TaskAudit
from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import FrameworkType, ScriptRunner

SITES = ["site-1", "site-2"]
AUDITED = ["site-2"]  # the hospital whose data steward asked for a record of every task


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--workspace", type=str, default="/tmp/nvflare/simulation")
    parser.add_argument("--num_rounds", type=int, default=3)
    args = parser.parse_args()
    job = FedJob(name=args.name, min_clients=len(SITES))
    persistor_id = job.to_server(NPModelPersistor(model=[0.0] * 9), id="persistor")
    job.to_server(FedAvg(num_clients=len(SITES), num_rounds=args.num_rounds, persistor_id=persistor_id))
    for site in SITES:
        job.to(ScriptRunner(script="client.py", framework=FrameworkType.NUMPY), site)
        if site in AUDITED:
            job.to(TaskAudit(), site, id="task_audit")
    job.simulator_run(os.path.join(args.workspace, args.name))


if __name__ == "__main__":
    main()

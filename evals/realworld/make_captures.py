"""Produce the real captures of the real-world eval set: failures of older NVFLARE releases, run for real.

Usage:
    python -m venv /tmp/nvf25 && /tmp/nvf25/bin/pip install "nvflare==2.5.*" numpy
    /root/.pyenv/versions/3.10.13/bin/python -m venv /tmp/nvf24 && /tmp/nvf24/bin/pip install "nvflare==2.4.*" numpy
    python evals/realworld/make_captures.py --py25 /tmp/nvf25/bin/python --py24 /tmp/nvf24/bin/python \
        [--scratch /tmp/rwcap] [--ports 18602 18603] [--only NAME ...]

Not part of `make eval` or CI (it needs the throwaway venvs and about ten minutes): the captures it writes under
evals/realworld/files/real/ are committed, and evals/realworld/cases.json names them. Every run happens outside
the repository, in --scratch, with HOME and the POC workspace there too (nothing touches ~/.nvflare); processes run
in their own session and every process left over (its command line names the scratch folder) is killed at the end
of its scenario. Machine paths are replaced by placeholders (scrub). Only log and console text is copied: no
startup kit, key or certificate ever leaves the scratch folder.

Scenarios (NVFLARE 2.5.2 unless named otherwise):
  sim-2.5-torch-default     ScriptRunner's default framework (PyTorch) without torch installed
  sim-2.5-import-error      client.py imports a module the sites lack (the simulator then hangs: stopped)
  sim-2.5-user-exception    client.py raises in its training function
  sim-2.5-data-path         client.py reads a relative data path that does not exist
  sim-2.5-client-killed     client.py SIGKILLs its own worker (as the OOM killer would); 2.5 reports an EOFError
  sim-2.4-import-error      NVFLARE 2.4.2 (Python 3.10) job folder whose custom executor imports a missing module
  poc-nvflare-not-installed-2.5  the POC site's start.sh runs a python3 without nvflare
  poc-no-server-2.5         a POC site started while no server runs
  poc-wrong-kit-2.5         a site whose startup kit comes from another provision (other root CA)
  poc-deploy-map-2.5        a job whose meta.json names an app the job folder lacks, submitted two ways
  poc-kill9-2.5             a POC job whose client process is SIGKILLed mid-task
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "evals" / "realworld" / "files" / "real"
PLACEHOLDERS = {"scratch": "/tmp/nvflare", "py25": "/opt/nvflare-2.5/.venv", "py24": "/opt/nvflare-2.4/.venv"}

JOB_25 = """
import sys
from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import FrameworkType, ScriptRunner

framework = FrameworkType.NUMPY if "--numpy" in sys.argv else FrameworkType.PYTORCH
job = FedJob(name=sys.argv[2])
job.to_server(FedAvg(num_clients=2, num_rounds=2, persistor_id="persistor"))
job.to_server(NPModelPersistor(), id="persistor")
for i in range(2):
    job.to(ScriptRunner(script="client.py", framework=framework), f"site-{i + 1}")
if sys.argv[1] == "export":
    job.export_job(sys.argv[3])
else:
    job.simulator_run(sys.argv[1], gpu=None)
"""
CLIENT_HEAD = (
    "import numpy as np\nimport nvflare.client as flare\nfrom nvflare.app_common.abstract.fl_model import FLModel\n"
)
CLIENTS = {
    "import-error": CLIENT_HEAD
    + "import sklearn_extra_utils  # noqa: F401  (not installed on the sites)\n\n"
    + "flare.init()\nwhile flare.is_running():\n    model = flare.receive()\n    flare.send(model)\n",
    "user-exception": CLIENT_HEAD
    + textwrap.dedent(
        """

        def train(params):
            weights = params["numpy_key"]
            bias = np.zeros((4,))
            return {"numpy_key": weights @ bias}  # shapes do not match: (3, 3) @ (4,)


        flare.init()
        while flare.is_running():
            model = flare.receive()
            flare.send(FLModel(params=train(model.params), metrics={"accuracy": 0.5}))
        """
    ),
    "data-path": CLIENT_HEAD
    + textwrap.dedent(
        """
        flare.init()
        site = flare.get_site_name()
        data = np.loadtxt(f"data/{site}/train.csv", delimiter=",")
        while flare.is_running():
            model = flare.receive()
            flare.send(FLModel(params={k: v + data.mean() for k, v in model.params.items()}))
        """
    ),
    "client-killed": textwrap.dedent(
        """
        import os
        import signal

        import nvflare.client as flare

        flare.init()
        while flare.is_running():
            model = flare.receive()
            if flare.get_site_name() == "site-1":
                os.kill(os.getpid(), signal.SIGKILL)  # stands in for the kernel OOM killer
            flare.send(model)
        """
    ),
}
SERVER_24 = {
    "format_version": 2,
    "workflows": [
        {
            "id": "scatter_and_gather",
            "path": "nvflare.app_common.workflows.scatter_and_gather.ScatterAndGather",
            "args": {
                "min_clients": 2,
                "num_rounds": 2,
                "wait_time_after_min_received": 1,
                "aggregator_id": "aggregator",
                "persistor_id": "persistor",
                "shareable_generator_id": "shareable_generator",
                "train_task_name": "train",
                "train_timeout": 0,
            },
        }
    ],
    "components": [
        {"id": "persistor", "path": "nvflare.app_common.np.np_model_persistor.NPModelPersistor", "args": {}},
        {
            "id": "shareable_generator",
            "path": "nvflare.app_common.shareablegenerators.full_model_shareable_generator.FullModelShareableGenerator",
            "args": {},
        },
        {
            "id": "aggregator",
            "path": "nvflare.app_common.aggregators.intime_accumulate_model_aggregator."
            "InTimeAccumulateWeightedAggregator",
            "args": {"expected_data_kind": "WEIGHTS"},
        },
    ],
}
CLIENT_24 = {
    "format_version": 2,
    "executors": [{"tasks": ["train"], "executor": {"path": "trainer.SiteTrainer", "args": {}}}],
    "task_result_filters": [],
    "task_data_filters": [],
    "components": [],
}
TRAINER_24 = """import numpy as np
import pandas_profiling_lite  # noqa: F401  (not installed on the sites)

from nvflare.apis.executor import Executor
from nvflare.apis.shareable import Shareable


class SiteTrainer(Executor):
    def execute(self, task_name, shareable, fl_ctx, abort_signal) -> Shareable:
        return shareable
"""
SUBMIT = """import sys
from nvflare.fuel.flare_api.flare_api import new_secure_session

sess = new_secure_session("admin@nvidia.com", sys.argv[2], timeout=30)
try:
    print(sess.submit_job(sys.argv[1]))
finally:
    sess.close()
"""


class Lab:
    """The scratch folder, the venvs and the bookkeeping every scenario shares."""

    def __init__(self, scratch: Path, py25: Path, py24: Path | None, ports: tuple[int, int]):
        self.scratch, self.py25, self.py24, self.ports = scratch, py25, py24, ports
        self.home = scratch / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.handles: dict[int, object] = {}
        pairs = [(str(scratch), PLACEHOLDERS["scratch"]), (str(py25.parent.parent), PLACEHOLDERS["py25"])]
        pairs += [(str(py24.parent.parent), PLACEHOLDERS["py24"])] if py24 else []
        bases = {Path(sys.base_prefix), Path(os.path.realpath(sys.base_prefix))}
        bases |= {base for venv in (py25, py24) if venv for base in [_base_prefix(venv)] if base}
        pairs += [(str(base), "/opt/python") for base in bases]
        self.pairs = sorted(pairs, key=lambda kv: len(kv[0]), reverse=True)

    def env(self, python: Path, poc: Path | None = None, path_first: Path | None = None) -> dict[str, str]:
        bins = [str(path_first or python.parent), "/usr/bin", "/bin"]
        env = {"PATH": os.pathsep.join(bins), "HOME": str(self.home), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
        if poc is not None:
            env["NVFLARE_POC_WORKSPACE"] = str(poc)
        return env

    def run(self, argv: list[str], env: dict, cwd: Path, seconds: float, stdin: str | None = None) -> str:
        """Run argv in its own session for at most `seconds`; its output (stdout and stderr)."""
        with subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ) as proc:
            try:
                out, _ = proc.communicate(stdin.encode() if stdin is not None else None, timeout=seconds)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                self.sweep()  # children in sessions of their own hold the pipe open
                out, _ = proc.communicate()
        return out.decode("utf-8", "replace")

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path) -> subprocess.Popen:
        """Start argv in its own session, its output going to `log` (closed by stop)."""
        handle = open(log, "wb")
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        self.handles[proc.pid] = handle
        return proc

    def stop(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.handles.pop(proc.pid).close()

    def sweep(self) -> None:
        """Kill every process whose command line names the scratch folder (only ours can)."""
        marker = str(self.scratch).encode()
        spared = _ancestors()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in spared:
                continue
            try:
                if marker in (entry / "cmdline").read_bytes():
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue

    def save(self, case: str, name: str, text: str) -> None:
        for path, placeholder in self.pairs:
            text = text.replace(path, placeholder)
        target = OUT / case / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def save_logs(self, case: str, root: Path, into: str) -> None:
        """Every log.txt under `root` (never a kit, key or certificate), at the same relative place."""
        for log in sorted(root.rglob("log.txt")):
            self.save(case, f"{into}/{log.relative_to(root)}", log.read_text(encoding="utf-8", errors="replace"))


def _base_prefix(python: Path) -> Path | None:
    """The interpreter a venv was made from (pyvenv.cfg's `home` is its bin folder)."""
    config = python.parent.parent / "pyvenv.cfg"
    for line in config.read_text(encoding="utf-8").splitlines() if config.is_file() else []:
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    return None


def _ancestors() -> set[int]:
    """This process and the ones that started it (their command lines may name the scratch folder too)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            break
        pid = int(stat[1])
    return pids


def sim_25(lab: Lab, name: str, framework: str = "--numpy", seconds: float = 90) -> None:
    folder = lab.scratch / "sim" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "job.py").write_text(JOB_25, encoding="utf-8")
    (folder / "client.py").write_text(CLIENTS.get(name, CLIENTS["import-error"]), encoding="utf-8")
    workspace = lab.scratch / "ws" / name
    argv = [str(lab.py25), "job.py", str(workspace), "hello-numpy"] + ([framework] if framework else [])
    out = lab.run(argv, lab.env(lab.py25), folder, seconds)
    lab.sweep()
    case = f"sim-2.5-{'torch-default' if not framework else name}"
    lab.save(case, "stdout.txt", out)
    if name == "import-error" and framework:
        lab.save_logs(case, workspace, "workspace/hello-numpy")


def sim_24(lab: Lab) -> None:
    if lab.py24 is None:
        print("sim-2.4-import-error: skipped (no --py24)", file=sys.stderr)
        return
    import json

    job = lab.scratch / "j24" / "hello-np"
    shutil.rmtree(job.parent, ignore_errors=True)
    (job / "app" / "config").mkdir(parents=True)
    (job / "app" / "custom").mkdir()
    meta = {"name": "hello-np", "resource_spec": {}, "min_clients": 2, "deploy_map": {"app": ["@ALL"]}}
    (job / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (job / "app" / "config" / "config_fed_server.json").write_text(json.dumps(SERVER_24, indent=2), encoding="utf-8")
    (job / "app" / "config" / "config_fed_client.json").write_text(json.dumps(CLIENT_24, indent=2), encoding="utf-8")
    (job / "app" / "custom" / "trainer.py").write_text(TRAINER_24, encoding="utf-8")
    workspace = lab.scratch / "ws24"
    shutil.rmtree(workspace, ignore_errors=True)
    nvflare = str(lab.py24.parent / "nvflare")
    argv = [nvflare, "simulator", str(job), "-w", str(workspace), "-n", "2", "-t", "2"]
    out = lab.run(argv, lab.env(lab.py24), lab.scratch, 60)
    lab.sweep()
    lab.save("sim-2.4-import-error", "stdout.txt", out)
    lab.save_logs("sim-2.4-import-error", workspace, "workspace/hello-np")


class Poc:
    """One provisioned POC project of NVFLARE 2.5 in the scratch folder, on the given ports."""

    def __init__(self, lab: Lab, name: str):
        self.lab, self.root = lab, lab.scratch / name
        self.prod = self.root / "example_project" / "prod_00"

    def prepare(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        nvflare = str(self.lab.py25.parent / "nvflare")
        env = self.lab.env(self.lab.py25, self.root)
        self.lab.run([nvflare, "poc", "prepare", "-n", "2"], env, self.lab.scratch, 120, stdin="y\n")
        fl_port, admin_port = self.lab.ports
        project = (self.root / "project.yml").read_text(encoding="utf-8")
        project = project.replace("8002", str(fl_port)).replace("8003", str(admin_port))
        custom = self.lab.scratch / f"{self.root.name}-project.yml"
        custom.write_text(project, encoding="utf-8")
        shutil.rmtree(self.root, ignore_errors=True)
        self.lab.run([nvflare, "poc", "prepare", "-i", str(custom)], env, self.lab.scratch, 120, stdin="y\n")

    def start(self, participant: str, log: Path, path_first: Path | None = None) -> subprocess.Popen:
        for marker in ("shutdown.fl", "pid.fl", "daemon_pid.fl"):  # left by the last stop: a new start would quit
            (self.prod / participant / marker).unlink(missing_ok=True)
        nvflare = str(self.lab.py25.parent / "nvflare")
        env = self.lab.env(self.lab.py25, self.root, path_first)
        return self.lab.start([nvflare, "poc", "start", "-p", participant], env, self.lab.scratch, log)

    def stop(self, procs: list[subprocess.Popen]) -> None:
        nvflare = str(self.lab.py25.parent / "nvflare")
        self.lab.run([nvflare, "poc", "stop"], self.lab.env(self.lab.py25, self.root), self.lab.scratch, 90)
        for proc in procs:
            self.lab.stop(proc)
        self.lab.sweep()


def poc_not_installed(lab: Lab, poc: Poc) -> None:
    shim = lab.scratch / "system-bin"
    shim.mkdir(exist_ok=True)
    target = shim / "python3"
    if not target.exists():
        target.symlink_to(Path(sys.base_prefix) / "bin" / "python3")  # an interpreter without nvflare
    log = lab.scratch / "console-not-installed.txt"
    proc = poc.start("site-1", log, path_first=shim)
    time.sleep(40)
    poc.stop([proc])
    lab.save("poc-nvflare-not-installed-2.5", "site-1_console.txt", log.read_text(encoding="utf-8", errors="replace"))


def poc_no_server(lab: Lab, poc: Poc) -> None:
    log = lab.scratch / "console-no-server.txt"
    (poc.prod / "site-1" / "log.txt").unlink(missing_ok=True)
    proc = poc.start("site-1", log)
    time.sleep(40)
    poc.stop([proc])
    lab.save("poc-no-server-2.5", "site-1_console.txt", log.read_text(encoding="utf-8", errors="replace"))
    lab.save("poc-no-server-2.5", "site-1_log.txt", (poc.prod / "site-1" / "log.txt").read_text(encoding="utf-8"))


def poc_wrong_kit(lab: Lab, poc: Poc, other: Poc) -> None:
    for log in (poc.prod / "server" / "log.txt", other.prod / "site-1" / "log.txt"):
        log.unlink(missing_ok=True)
    server = poc.start("server", lab.scratch / "console-server.txt")
    time.sleep(25)
    console = lab.scratch / "console-wrong-kit.txt"
    site = other.start("site-1", console)
    time.sleep(40)
    other.stop([site])
    poc.stop([server])
    case = "poc-wrong-kit-2.5"
    lab.save(case, "site-1_console.txt", console.read_text(encoding="utf-8", errors="replace"))
    lab.save(case, "site-1_log.txt", (other.prod / "site-1" / "log.txt").read_text(encoding="utf-8"))
    lab.save(case, "server_log.txt", (poc.prod / "server" / "log.txt").read_text(encoding="utf-8"))


def export_job(lab: Lab, name: str, client: str) -> Path:
    folder = lab.scratch / "export" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "job.py").write_text(JOB_25, encoding="utf-8")
    (folder / "client.py").write_text(CLIENTS[client], encoding="utf-8")
    jobs = lab.scratch / "jobs"
    lab.run([str(lab.py25), "job.py", "export", name, str(jobs), "--numpy"], lab.env(lab.py25), folder, 60)
    return jobs / name


def poc_deploy_map(lab: Lab, poc: Poc) -> None:
    job = export_job(lab, "hello-numpy", "user-exception")
    shutil.rmtree(job / "app_site-2")  # meta.json's deploy_map still names it
    (poc.prod / "server" / "log.txt").unlink(missing_ok=True)
    server = poc.start("server", lab.scratch / "console-server.txt")
    time.sleep(25)
    admin = poc.prod / "admin@nvidia.com"
    env = lab.env(lab.py25, poc.root)
    console = lab.run(
        ["bash", str(admin / "startup" / "fl_admin.sh")], env, lab.scratch, 40, stdin=f"submit_job {job}\nbye\n"
    )
    (lab.scratch / "submit.py").write_text(SUBMIT, encoding="utf-8")
    api = lab.run([str(lab.py25), "submit.py", str(job), str(admin)], env, lab.scratch, 60)
    poc.stop([server])
    case = "poc-deploy-map-2.5"
    lab.save(case, "admin_console.txt", console)
    lab.save(case, "flare_api_stdout.txt", api)
    lab.save(case, "server_log.txt", (poc.prod / "server" / "log.txt").read_text(encoding="utf-8"))


def poc_kill9(lab: Lab, poc: Poc) -> None:
    job = export_job(lab, "kill9", "client-killed")
    for participant in ("server", "site-1", "site-2"):
        (poc.prod / participant / "log.txt").unlink(missing_ok=True)
    procs = [poc.start(p, lab.scratch / f"console-{p}.txt") for p in ("server", "site-1", "site-2")]
    time.sleep(35)
    (lab.scratch / "submit.py").write_text(SUBMIT, encoding="utf-8")
    admin = poc.prod / "admin@nvidia.com"
    lab.run([str(lab.py25), "submit.py", str(job), str(admin)], lab.env(lab.py25, poc.root), lab.scratch, 60)
    time.sleep(45)
    case = "poc-kill9-2.5"
    for participant in ("server", "site-1", "site-2"):
        lab.save_logs(case, poc.prod / participant, participant)
    poc.stop(procs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--py25", type=Path, required=True, help="python of a venv with nvflare 2.5.x and numpy")
    parser.add_argument("--py24", type=Path, help="python (3.8-3.10) of a venv with nvflare 2.4.x and numpy")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/rwcap"), help="work folder outside the repo")
    parser.add_argument("--ports", type=int, nargs=2, default=(18602, 18603), help="POC fl and admin ports")
    parser.add_argument("--only", nargs="*", help="scenario names (see the module docstring)")
    args = parser.parse_args(argv)
    scratch = args.scratch.resolve()
    if REPO in scratch.parents or scratch == REPO:
        parser.error("--scratch must be outside the repository")
    lab = Lab(scratch, args.py25, args.py24, tuple(args.ports))
    wanted = set(args.only or [])

    def want(name: str) -> bool:
        return not wanted or name in wanted

    for name, framework in (
        ("torch-default", ""),
        ("import-error", "--numpy"),
        ("user-exception", "--numpy"),
        ("data-path", "--numpy"),
        ("client-killed", "--numpy"),
    ):
        if want(f"sim-2.5-{name}"):
            sim_25(lab, "import-error" if name == "torch-default" else name, framework)
    if want("sim-2.4-import-error"):
        sim_24(lab)
    poc_cases = [n for n in ("not-installed", "no-server", "wrong-kit", "deploy-map", "kill9")]
    if any(want(f"poc-{n.replace('not-installed', 'nvflare-not-installed')}-2.5") for n in poc_cases):
        poc, other = Poc(lab, "pocA"), Poc(lab, "pocB")
        poc.prepare()
        steps = (
            ("poc-nvflare-not-installed-2.5", lambda: poc_not_installed(lab, poc)),
            ("poc-no-server-2.5", lambda: poc_no_server(lab, poc)),
            ("poc-wrong-kit-2.5", lambda: (other.prepare(), poc_wrong_kit(lab, poc, other))),
            ("poc-deploy-map-2.5", lambda: poc_deploy_map(lab, poc)),
            ("poc-kill9-2.5", lambda: poc_kill9(lab, poc)),
        )
        for name, step in steps:
            if want(name):
                print(f"{name} ...", file=sys.stderr)
                step()
    lab.sweep()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The dry-run boot is a package run by path (`python -I dryrun_boot/__main__.py`): it runs from its own folder
alone, job.py's modules named like the boot's (and like the package) are job.py's own while the boot keeps its own,
and the dry-run cache key changes when any file of the package changes."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
from pathlib import Path

import pytest
from autofl_core.importer import dryrun, recorded
from runner_support import dry_run

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests" / "fixtures" / "jobs" / "dryrun" / "computed_budget" / "client.py"
PACKAGE = dryrun.BOOT.parent
MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("__"))

JOB = """import argparse

import {modules}
import dryrun_boot

others = [m.__name__ for m in ({modules}, dryrun_boot) if getattr(m, "OWN", None) != "job"]
parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=5 if not others else 0)
parser.add_argument("--run", action="store_true")
args = parser.parse_args()
if others:
    raise RuntimeError(f"not job.py's own modules: {{others}}")
if args.run:
    from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
    from nvflare.recipe import SimEnv

    recipe = NumpyFedAvgRecipe(name="own", model=[0.0], min_clients=2, num_rounds=args.num_rounds,
                               train_script="client.py")
    recipe.execute(SimEnv(num_clients=2))
"""


def _job_with_modules_named_like_the_boots(folder: Path) -> Path:
    """A job whose folder holds a module named like each of the boot's, and a package named like the boot's whose
    `serve` module ends the program that imports it."""
    folder.mkdir()
    for name in MODULES:
        (folder / f"{name}.py").write_text('OWN = "job"\n', encoding="utf-8")
    (folder / "dryrun_boot").mkdir()
    (folder / "dryrun_boot" / "__init__.py").write_text('OWN = "job"\n', encoding="utf-8")
    (folder / "dryrun_boot" / "serve.py").write_text('raise SystemExit("the job\'s serve ran")\n', encoding="utf-8")
    shutil.copy(CLIENT, folder / "client.py")
    job = folder / "job.py"
    job.write_text(JOB.format(modules=", ".join(MODULES)), encoding="utf-8")
    return job


def test_the_job_names_a_module_like_each_of_the_boots():
    assert {"serve", "run", "records", "stand_ins", "processes", "entry_points"} <= set(MODULES)
    assert dryrun.BOOT.name == "__main__.py" and (PACKAGE / "__init__.py").is_file()


def test_the_boot_runs_alone_by_path_and_the_job_imports_its_own_modules(tmp_path, python_exe):
    """The package copied alone runs isolated (-I); the job's modules named like the boot's are the job's."""
    boot = tmp_path / "alone" / "dryrun_boot"
    shutil.copytree(PACKAGE, boot, ignore=shutil.ignore_patterns("__pycache__"))
    job = _job_with_modules_named_like_the_boots(tmp_path / "job")
    out = tmp_path / "record.json"
    proc = subprocess.Popen(
        [python_exe, "-I", str(boot / "__main__.py"), "--serve", str(job)],
        cwd=job.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the boot ends its whole group when its requests' pipe closes early
    )
    try:
        proc.stdin.write((json.dumps({"runs": [{"out": str(out), "args": [], "env": {}}]}) + "\n").encode())
        proc.stdin.flush()
        assert select.select([proc.stdout], [], [], 120)[0], "the boot answered nothing in 120 s"
        assert proc.stdout.readline() == b"done\n", proc.stderr.read1().decode()
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["status"] == "no_run", record
    (action,) = [a for a in record["parsers"][0]["actions"] if a["dest"] == "num_rounds"]
    assert (action["default"], action["value"]) == (5, 5)  # every module job.py imported was its own


@pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")
def test_a_sealed_dry_run_keeps_the_boots_modules_and_the_jobs_apart(tmp_path):
    """In the sandbox too: the boot (its package readable there) records the run; job.py got its own modules."""
    job = _job_with_modules_named_like_the_boots(tmp_path / "job")
    record = dry_run(job, ["--run"])
    assert (record.status, record.exception, record.message) == ("recorded", "", "")
    assert recorded.budget(record)["num_rounds"]["value"] == 5


def test_the_cache_key_changes_with_any_file_of_the_boot_package(tmp_path, monkeypatch):
    copy = tmp_path / "dryrun_boot"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(dryrun, "BOOT", copy / "__main__.py")
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.py").write_text("print('job')\n", encoding="utf-8")
    keys = [dryrun.job_digest(job, None, [], "python")]
    for name in ("__main__.py", "stand_ins.py", "state.py"):
        with open(copy / name, "a", encoding="utf-8") as handle:
            handle.write("# changed\n")
        keys.append(dryrun.job_digest(job, None, [], "python"))
    (copy / "added.py").write_text("", encoding="utf-8")
    keys.append(dryrun.job_digest(job, None, [], "python"))
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "state.cpython-311.pyc").write_bytes(b"not read")
    keys.append(dryrun.job_digest(job, None, [], "python"))
    assert len(set(keys[:-1])) == len(keys) - 1 and None not in keys  # every change of a module moved the key
    assert keys[-1] == keys[-2]  # compiled files are not the package's code

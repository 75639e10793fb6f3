"""The trial sandbox launcher is a package run by path (`python -I trial/sandbox/__main__.py`): what it writes is
what the single-file launcher wrote on this host (the probe's status JSON and a trial's status file, byte for
byte), it never loads a module from the command's folders or its own cwd, and the command it runs imports its own
modules named like the launcher's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from autofl_core.trial import seal

PYTHON = sys.executable
PACKAGE = seal.LAUNCHER.parent
MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("__"))
PROTECTIONS = (
    "capabilities_dropped",
    "mount_namespace",
    "network",
    "pid_namespace",
    "private_proc",
    "read_only_host",
    "user_namespace",
    "workspace_view",
)
LIMITS = {"memory": 2 << 30, "disk": 1 << 30, "processes": 256}


def _document(protections: dict, limits: dict | None = None) -> str:
    """The status JSON the launcher writes: sorted keys, `json.dumps`' default separators."""
    document = {"missing": [], "protections": protections}
    if limits is not None:
        document["limits"] = limits
    return json.dumps(document, sort_keys=True)


@pytest.fixture(scope="module")
def sealable():
    done = subprocess.run([PYTHON, "-I", str(seal.LAUNCHER), "--probe"], capture_output=True, text=True, timeout=60)
    assert seal.can_seal(json.loads(done.stdout or "{}")), f"this host cannot seal trials: {done.stdout}"
    return done


def _trial(tmp_path: Path, program: str, *, sealed: bool, network="isolated", limits=None, cwd=None, prepare=None):
    workspace, trial_dir = tmp_path / "ws", tmp_path / "t"
    (workspace / ".nvflare" / "autofl").mkdir(parents=True)
    if prepare is not None:
        prepare(workspace)
    (workspace / "job.py").write_text(textwrap.dedent(program), encoding="utf-8")
    for name in ("sim", "tmp"):
        (trial_dir / name).mkdir(parents=True)
    plan = seal.write_plan(
        trial_dir,
        workspace=workspace,
        network=network,
        writable=[trial_dir / "sim", trial_dir / "tmp"],
        home=os.environ.get("HOME"),
        stage_files={} if sealed else None,
        hide=[workspace / ".nvflare" / "autofl"],
        limits=limits,
    )
    argv = seal.launcher_argv(PYTHON, plan, [PYTHON, "job.py"])
    try:
        done = subprocess.run(argv, cwd=cwd or trial_dir, capture_output=True, text=True, timeout=120)
    finally:
        seal.release_limits(trial_dir)
    return done, (trial_dir / seal.STATUS).read_text(encoding="utf-8")


def test_the_probe_prints_the_status_json_the_single_file_launcher_printed(sealable):
    assert sealable.returncode == 0 and sealable.stderr == ""
    assert sealable.stdout == _document(dict.fromkeys(PROTECTIONS, "yes")) + "\n"


def test_a_sealed_trials_status_file_is_the_one_the_single_file_launcher_wrote(sealable, tmp_path):
    done, status = _trial(tmp_path, "print('ran')\n", sealed=True, limits=LIMITS)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")
    processes = "enforced" if os.access(seal.PIDS_CGROUP, os.W_OK) else "watched"  # a pids cgroup where allowed
    limits = {
        "disk": {"enforcement": "watched", "value": LIMITS["disk"]},
        "memory": {"enforcement": "watched", "value": LIMITS["memory"]},
        "processes": {"enforcement": processes, "value": LIMITS["processes"]},
    }
    assert status == _document(dict.fromkeys(PROTECTIONS, "yes"), limits)


def test_a_contained_trials_status_file_and_exit_are_the_single_file_launchers(sealable, tmp_path):
    done, status = _trial(tmp_path, "import sys\nsys.exit(3)\n", sealed=False, network="allowed")
    assert done.returncode == 3
    protections = dict.fromkeys(PROTECTIONS, "yes")
    protections.update(network="allowed", read_only_host="not requested", workspace_view="not requested")
    assert status == _document(protections)


def test_the_command_imports_its_own_modules_named_like_the_launchers(sealable, tmp_path):
    """The job's folder and the launcher's cwd hold a module named like each of the launcher's and a `sandbox`
    package whose `main` ends the program that imports it: the launcher loads none of them, and the job gets its
    own (none of the launcher's modules is in its sys.modules)."""
    program = f"""
        import sys
        NAMES = {[*MODULES, "sandbox"]!r}
        left = sorted(name for name in sys.modules if name.partition(".")[0] in NAMES)
        import {", ".join(MODULES)}, sandbox
        others = [m.__name__ for m in ({", ".join(MODULES)}, sandbox) if getattr(m, "OWN", "") != "job"]
        print("left:", left, "others:", others)
    """
    cwd = _modules_named_like_the_launchers(tmp_path / "cwd")
    done, status = _trial(tmp_path, program, sealed=True, cwd=cwd, prepare=_modules_named_like_the_launchers)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == "left: [] others: []\n"
    assert json.loads(status)["missing"] == []


def _modules_named_like_the_launchers(folder: Path) -> Path:
    (folder / "sandbox").mkdir(parents=True, exist_ok=True)
    for name in MODULES:
        (folder / f"{name}.py").write_text('OWN = "job"\n', encoding="utf-8")
    (folder / "sandbox" / "__init__.py").write_text('OWN = "job"\n', encoding="utf-8")
    (folder / "sandbox" / "main.py").write_text('raise SystemExit("the job\'s main ran")\n', encoding="utf-8")
    return folder


def test_loading_the_package_leaves_none_of_its_modules_behind(python_exe):
    """`__main__` loads the package by location and returns its `main`; afterwards sys.modules holds none of it."""
    check = textwrap.dedent(
        f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("launcher", {str(seal.LAUNCHER)!r})
        launcher = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(launcher)
        main = launcher._load_main()
        print(main.__name__, sorted(n for n in sys.modules if n.partition(".")[0] == "sandbox"), main.main(["-x"]))
        """
    )
    done = subprocess.run([python_exe, "-I", "-c", check], capture_output=True, text=True, timeout=60)
    assert done.stdout == "sandbox.main [] 2\n", done.stderr
    assert done.stderr.startswith("usage: sandbox/__main__.py --plan PLAN.json -- COMMAND")

"""Every entry script loads its own copy of its private package, and never a decoy of the same name.

Discovers `skills/*/scripts/*.py` (new scripts are covered without editing this file) and each skill's private
packages (`scripts/<name>/__init__.py`). Each skill is copied alone into a fresh project; the copy's packages
are instrumented to record, at exit, the file of every module of theirs that was imported. A decoy package
of the same name, which records that it was imported and then fails, sits on PYTHONPATH (a plain run) and at
the head of sys.path (a run through runpy, where no script folder comes first). `--help` is enough: the
scripts load their packages before parsing arguments. A loader that hard-codes another path (the repository,
say) never runs the copy's instrumented `__init__`, and one that relies on sys.path imports the decoy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(REPO.glob("skills/*/scripts/*.py"))

RECORDER = """

def _record_loaded_modules():  # appended by tests/test_script_isolation.py
    import json as _json, os as _os, sys as _sys
    mine = {{n: getattr(m, "__file__", None) for n, m in list(_sys.modules.items()) if n.split(".")[0] == {name!r}}}
    with open(_os.path.join(_os.environ["ISOLATION_RECORD_DIR"], {name!r} + ".json"), "w") as _handle:
        _json.dump(mine, _handle)


__import__("atexit").register(_record_loaded_modules)
"""

DECOY = """import os
open(os.path.join(os.environ["ISOLATION_RECORD_DIR"], "DECOY-" + __name__), "w").close()
raise ImportError("decoy package imported instead of the skill's own copy")
"""

RUN_WITH_DECOY_FIRST = (
    "import runpy, sys; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def private_packages(scripts: Path) -> list[str]:
    return sorted(p.parent.name for p in scripts.glob("*/__init__.py"))


def test_every_skill_script_is_discovered():
    names = {path.name for path in SCRIPTS}
    assert {"diagnose_job.py", "campaign_guard.py", "job_importer.py", "plot_progress.py"} <= names
    for path in SCRIPTS:
        assert private_packages(path.parent), f"{path.parent} has no private package to load"


@pytest.fixture()
def lone_copy(tmp_path):
    """Copy one script's skill alone; instrument its packages; build the decoys. -> (script, packages, decoys)."""

    def make(script: Path):
        skill = script.parents[1]
        target = tmp_path / "project" / ".agents" / "skills" / skill.name
        shutil.copytree(skill, target, ignore=shutil.ignore_patterns("__pycache__"))
        packages = private_packages(target / "scripts")
        decoys = tmp_path / "decoys"
        for name in packages:
            with open(target / "scripts" / name / "__init__.py", "a", encoding="utf-8") as handle:
                handle.write(RECORDER.format(name=name))
            (decoys / name).mkdir(parents=True)
            (decoys / name / "__init__.py").write_text(DECOY, encoding="utf-8")
        return target / "scripts" / script.name, packages, decoys

    return make


def check_own_copy(records: Path, copy_scripts: Path, packages: list[str]) -> None:
    assert not list(records.glob("DECOY-*")), f"a decoy was imported: {sorted(p.name for p in records.iterdir())}"
    for name in packages:
        record = records / f"{name}.json"
        assert record.is_file(), f"the copy's {name}/__init__.py never ran: the script loaded {name} from elsewhere"
        loaded = json.loads(record.read_text(encoding="utf-8"))
        assert loaded, f"no {name} module recorded"
        home = copy_scripts / name
        outside = {mod: path for mod, path in loaded.items() if path is None or not Path(path).is_relative_to(home)}
        assert not outside, f"{name} modules loaded from outside the copy: {outside}"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
@pytest.mark.parametrize("how", ["pythonpath", "runpy_decoy_first"])
def test_script_loads_its_own_copy_never_a_decoy(script, how, lone_copy, python_exe, tmp_path):
    copy, packages, decoys = lone_copy(script)
    records = tmp_path / "records"
    records.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "ISOLATION_RECORD_DIR": str(records),
        "PYTHONPATH": str(decoys),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if how == "pythonpath":
        argv = [python_exe, str(copy), "--help"]
    else:
        argv = [python_exe, "-c", RUN_WITH_DECOY_FIRST, str(decoys), str(copy), "--help"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
    check_own_copy(records, copy.parent, packages)

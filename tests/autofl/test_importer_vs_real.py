"""Cross-checks of the static importer against the real argparse and the real NVFLARE 2.9 rules.

Both run in a subprocess (the real side imports nvflare); the importer itself never does.
"""

import json
import subprocess
from pathlib import Path

import pytest
from autofl_core.importer import api
from autofl_core.importer.objective import parse_stop_cond

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "jobs"
PROBE = Path(__file__).with_name("argparse_probe.py")
JOBS = [REPO / "examples" / "hello-numpy" / "job.py"] + [
    FIXTURES / case / "job.py" for case in ("short_aliases", "boolean_optional", "choices", "namespace_not_args")
]


def real_parsers(python_exe: str, argv: list[str]) -> dict:
    proc = subprocess.run(
        [python_exe, str(PROBE), *map(str, JOBS), "--", *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_static_flags_match_the_real_parsers(python_exe):
    real = real_parsers(python_exe, [])
    for job in JOBS:
        config = api.import_job(job)
        ours = {tuple(f["option_strings"]): f for f in config["argparse"]["flags"]}
        theirs = real[str(job)]["actions"]
        assert sorted(ours) == sorted(tuple(a["options"]) for a in theirs), job
        for action in theirs:
            flag = ours[tuple(action["options"])]
            assert flag["dest"] == action["dest"]
            assert flag["default"] == action["default"]
            assert flag["takes_value"] == action["takes_value"]
            assert flag.get("choices") == action["choices"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [["-r", "7", "-l", "0.5"], ["--num_r=4", "--n_clients", "3"], ["--rounds", "2"], ["--n", "3"], ["--bogus"]],
)
def test_override_semantics_match_real_argparse(python_exe, argv):
    job = FIXTURES / "short_aliases" / "job.py"
    real = real_parsers(python_exe, argv)[str(job)]["values"]
    config = api.import_job(job)
    values, errors = api.parse_job_args(config, argv)
    if "error" in real:
        assert errors
        return
    assert errors == []
    flags = config["argparse"]["flags"]
    dest_of = {next(o for o in f["option_strings"] if o.startswith("--")): f["dest"] for f in flags}
    ours = {f["dest"]: f["value"] for f in flags} | {dest_of[k]: v for k, v in values.items()}
    assert ours == {f["dest"]: real[f["dest"]] for f in flags}


@pytest.mark.slow
def test_stop_cond_direction_matches_nvflare(python_exe):
    conds = ["accuracy >= 0.9", "accuracy > 0.9", "loss <= 0.1", "loss < 0.1", "f1 = 0.5", "bad"]
    code = (
        "import json, sys\n"
        "from nvflare.app_common.utils.math_utils import parse_compare_criteria\n"
        "from nvflare.recipe.fedavg import _KEY_METRIC_MODE_BY_STOP_OPERATOR as MODES\n"
        "out = {}\n"
        "for c in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        key, _, op = parse_compare_criteria(c)\n"
        "        out[c] = [key, MODES[op]] if op in MODES else None\n"
        "    except ValueError:\n"
        "        out[c] = None\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([python_exe, "-c", code, json.dumps(conds)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    real = json.loads(proc.stdout)
    for cond in conds:
        ours = parse_stop_cond(cond)
        assert (list(ours) if ours else None) == real[cond], cond

"""Attacks on the frozen evaluation, as a dishonest or buggy candidate and a hostile workspace would try them.

The promise under attack: the score used for keep/discard is measured by an evaluator the candidate cannot touch,
on the model the job delivers. A candidate that inflates what it reports, edits the evaluator or what it imports,
forges or swaps the model file, shadows the evaluator's imports, changes which sites the evaluator sees, or
pickles code into the model is never kept on a forged score, and the live job and campaign files stay intact.

Every attack runs on the stand-in job (`tests/autofl/standin_campaign`) with the stand-in evaluator
(`tests/autofl/standin_evaluator`): the baseline's model is worth 0.75, the evaluator scores it 0.74 on site-1
(100 samples) and 0.73 on site-2 (300 samples), so the measured baseline is 0.7325 and the job reports 0.75.
Candidate code is appended to client.py: it runs inside the trial, and an `atexit` hook runs after the stand-in
wrote its result, which is where an attacker rewrites the persisted model or the site folders.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from runner_support import ledger_rows, manifest, run_inproc, source_dir, standin_workspace, tree_digest

pytestmark = pytest.mark.slow

EVALUATOR = Path(__file__).resolve().parents[1] / "autofl" / "standin_evaluator"
HELLO_NUMPY_EVALUATOR = Path(__file__).resolve().parents[2] / "examples" / "hello-numpy" / "evaluate.py"
BASELINE_MEASURED = round((0.74 * 100 + 0.73 * 300) / 400, 6)  # 0.7325
FORGED = '{"accuracy": 0.99, "n": 100000}'


def evaluator_workspace(tmp_path: Path) -> Path:
    workspace = standin_workspace(tmp_path)
    for path in EVALUATOR.glob("*.py"):
        shutil.copy(path, workspace / path.name)
    return workspace


def initialized(tmp_path: Path, *extra: str) -> Path:
    workspace = evaluator_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py", "--max-candidates", "8", *extra)
    assert done.code == 0, done.stderr
    assert done.envelope["baseline_score"] == BASELINE_MEASURED
    return workspace


def after_result(body: str) -> str:
    """Candidate code (appended to client.py) that runs once the stand-in wrote its result: `job` is the result
    folder of this trial (`<simulator root>/<job name>/`), `model` its persisted global model."""
    return (
        "\n\ndef _after_result():\n"
        "    import glob, os, pathlib, shutil, struct  # noqa: F401\n"
        "    root = pathlib.Path(os.environ['NVFLARE_SIMULATOR_WORKSPACE_ROOT'])\n"
        "    for job in [pathlib.Path(p).parent for p in glob.glob(str(root / '*' / 'server'))]:\n"
        "        model = job / 'server' / 'simulate_job' / 'models' / 'server.npy'  # noqa: F841\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n\n\nimport atexit  # noqa: E402\n\natexit.register(_after_result)\n"
    )


def run_candidate(workspace: Path, name: str, *, append: str = "", bonus: float | None = None, files=None):
    done = run_inproc(workspace, "prepare", "--name", name, "--hypothesis", f"try {name}")
    assert done.code == 0, done.stderr
    folder = source_dir(workspace, name)
    client = folder / "client.py"
    text = client.read_text()
    if bonus is not None:
        text = "".join(f"BONUS = {bonus}\n" if line.startswith("BONUS = ") else line for line in text.splitlines(True))
    client.write_text(text + append)
    for rel, data in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(data)
    return run_inproc(workspace, "evaluate")


def campaign_digest(workspace: Path) -> dict[str, str]:
    return tree_digest(
        workspace,
        skip=(
            "autofl_runs",
            ".nvflare",
            "results.tsv",
            "autofl_report.md",
            "autofl_report.json",
            "progress.png",
            "autofl.yaml",
        ),
    )


def not_kept_on(workspace: Path, done, name: str) -> dict:
    """The candidate was not kept and its row carries no forged score; its ledger row."""
    row = next(row for row in ledger_rows(workspace) if row["name"] == name)
    assert row["status"] != "keep", row
    assert row["score"] is None or row["score"] <= BASELINE_MEASURED + 1e-9, row
    assert done.envelope.get("candidate_status") != "keep"
    return row


# --- the reported metric -------------------------------------------------------------------------------------------


def test_an_inflated_report_is_scored_by_the_evaluator_discarded_and_flagged(tmp_path):
    workspace = initialized(tmp_path)
    done = run_candidate(workspace, "inflate", append="\nREPORTED_BONUS = 0.2\n")
    row = not_kept_on(workspace, done, "inflate")
    assert row["score"] == BASELINE_MEASURED and row["metric_source"] == "measured:frozen_evaluator"
    assert done.envelope["metric_divergence"]["reported"] == 0.95
    assert manifest(workspace, "inflate")["result"]["reported_score"] == 0.95


# --- the frozen files -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel, text",
    [
        ("evaluate_model.py", f"print({FORGED!r})\n"),  # the evaluator itself
        ("evalsizes.py", 'SIZES = {"site-1": 100000}\nHELD_OUT_PENALTY = -0.2\n'),  # imported through evalhelpers
        ("offset.txt", "0.9\n"),  # a declared input
    ],
)
def test_a_draft_that_edits_the_evaluator_its_imports_or_inputs_is_refused_and_nothing_changes(tmp_path, rel, text):
    workspace = evaluator_workspace(tmp_path)
    (workspace / "offset.txt").write_text("0.0\n")
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py", "--evaluator-input", "offset.txt")
    assert done.code == 0, done.stderr
    before = campaign_digest(workspace), (workspace / "results.tsv").read_bytes()
    run_inproc(workspace, "prepare", "--name", "edit", "--hypothesis", "h")
    (source_dir(workspace, "edit") / rel).write_text(text)
    refused = run_inproc(workspace, "evaluate")
    assert refused.code == 2 and "frozen with the evaluator" in refused.stderr and rel in refused.stderr
    assert (campaign_digest(workspace), (workspace / "results.tsv").read_bytes()) == before


@pytest.mark.parametrize("victim", ["evaluate_model.py", "evalhelpers.py", "offset.txt"])
def test_a_frozen_file_that_is_a_link_out_of_the_job_is_refused_at_initialize(tmp_path, victim):
    """A hostile workspace links the evaluator, a module it imports or an input to a file outside the job (which
    someone could change later): initialize refuses it, nothing written."""
    workspace = evaluator_workspace(tmp_path)
    (workspace / "offset.txt").write_text("0.0\n")
    outside = tmp_path / f"outside-{victim}"
    outside.write_bytes((workspace / victim).read_bytes())
    (workspace / victim).unlink()
    (workspace / victim).symlink_to(outside)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py", "--evaluator-input", "offset.txt")
    assert done.code == 2 and done.stderr.count("\n") == 0
    assert "outside the job" in done.stderr or "not a regular file" in done.stderr
    assert not (workspace / ".nvflare").exists() and not (workspace / "results.tsv").exists()


# --- what the evaluator imports and how its interpreter starts ------------------------------------------------------

SHADOW = f"import sys\nif '--site' in sys.argv:\n    print({FORGED!r})\n    sys.stdout.flush()\n    import os\n    os._exit(0)\n"


def test_modules_startup_hooks_and_bytecode_in_the_job_never_reach_the_evaluator(tmp_path, monkeypatch):
    """A kept candidate (or a hostile workspace) left modules that shadow the evaluator's imports, interpreter
    start-up hooks, forged bytecode of a frozen module, and a PYTHONPATH into the job: the evaluator runs from its
    own staged copies and measures the honest score."""
    workspace = initialized(tmp_path)
    (workspace / "shadow").mkdir()
    for folder in (workspace, workspace / "shadow"):  # modules the stand-in job itself never imports
        for name in ("ast.py", "sitecustomize.py", "usercustomize.py"):
            (folder / name).write_text(SHADOW)
    (workspace / "forge.pth").write_text(f"import sys; exec({SHADOW!r})\n")
    pycache = workspace / "__pycache__"
    pycache.mkdir(exist_ok=True)
    import importlib.util
    import py_compile

    forged_source = workspace / "forged_helpers.py"
    forged_source.write_text(SHADOW + "\n" + (workspace / "evalhelpers.py").read_text())
    for rel in ("evalhelpers.py", "evalsizes.py"):
        target = Path(importlib.util.cache_from_source(str(workspace / rel)))
        py_compile.compile(
            str(forged_source), cfile=str(target), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
        )
    forged_source.unlink()
    monkeypatch.setenv("PYTHONPATH", f"{workspace / 'shadow'}:{workspace}:shadow")
    monkeypatch.setenv("PYTHONSTARTUP", str(workspace / "ast.py"))
    monkeypatch.setenv("PYTHONINSPECT", "1")
    done = run_candidate(workspace, "plain", bonus=0.01)
    assert done.code == 0, ledger_rows(workspace)[-1]["failure_reason"]
    assert done.envelope["score"] == round(BASELINE_MEASURED + 0.01, 6)
    sites = done.envelope["evaluation"]["sites"]
    assert sites == {"site-1": {"value": 0.75, "n": 100.0}, "site-2": {"value": 0.74, "n": 300.0}}


# --- the model file -------------------------------------------------------------------------------------------------


def _npy(values: list[float]) -> str:
    """Python that writes `values` as a float64 .npy to `model` (the stand-in's own writer)."""
    return (
        f"values = {values!r}\n"
        "header = \"{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }\" % len(values)\n"
        "header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\\n'\n"
        "data = struct.pack('<%dd' % len(values), *values)\n"
    )


def test_a_symlinked_model_is_never_followed(tmp_path):
    """The model file replaced by a link to a file that scores higher (here: one the candidate wrote outside the
    result): never read; the trial is a crash naming the missing model."""
    workspace = initialized(tmp_path)
    decoy = tmp_path / "decoy.npy"
    body = (
        _npy([0.99])
        + f"decoy = pathlib.Path({str(decoy)!r})\n"
        + "try:\n    decoy.write_bytes(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(header)) + header.encode() + data)\n"
        + "except OSError:\n    decoy = job / 'decoy.npy'\n"
        + "    decoy.write_bytes(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(header)) + header.encode() + data)\n"
        + "model.unlink()\nmodel.symlink_to(decoy)\n"
    )
    done = run_candidate(workspace, "link", append=after_result(body))
    row = not_kept_on(workspace, done, "link")
    assert row["status"] == "crash" and "server persisted no global model" in row["failure_reason"]


def test_a_symlinked_models_folder_is_never_followed(tmp_path):
    workspace = initialized(tmp_path)
    body = _npy([0.99]) + (
        "elsewhere = job / 'elsewhere'\nelsewhere.mkdir()\n"
        "(elsewhere / 'server.npy').write_bytes(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(header)) + "
        "header.encode() + data)\n"
        "shutil.rmtree(model.parent)\nmodel.parent.symlink_to(elsewhere)\n"
    )
    done = run_candidate(workspace, "linkdir", append=after_result(body))
    row = not_kept_on(workspace, done, "linkdir")
    assert row["status"] == "crash" and "server persisted no global model" in row["failure_reason"]


@pytest.mark.parametrize(
    "rel",
    ["FL_global_model.pt", "app_server/FL_global_model.pt"],  # another name and format than the baseline's .npy
)
def test_a_model_under_another_name_or_format_than_the_baselines_is_never_scored(tmp_path, rel):
    """The candidate drops the persistor's file and leaves a model of its own under another layout's name (which
    the evaluator, told another --format, might read differently): the evaluator reads only the baseline's file."""
    workspace = initialized(tmp_path)
    body = _npy([0.99]) + (
        f"target = job / 'server' / 'simulate_job' / {rel!r}\ntarget.parent.mkdir(parents=True, exist_ok=True)\n"
        "target.write_bytes(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(header)) + header.encode() + data)\n"
        "model.unlink()\n"
    )
    done = run_candidate(workspace, "swap", append=after_result(body))
    row = not_kept_on(workspace, done, "swap")
    assert row["status"] == "crash" and "models/server.npy" in row["failure_reason"]
    assert "the baseline's model was found at" in row["failure_reason"]


def test_a_model_that_is_a_fifo_never_hangs_the_evaluator(tmp_path):
    """A FIFO where the model belongs would block any reader: it is not a regular file, so never handed over."""
    workspace = initialized(tmp_path)
    done = run_candidate(workspace, "fifo", append=after_result("model.unlink()\nos.mkfifo(model)"))
    row = not_kept_on(workspace, done, "fifo")
    assert row["status"] == "crash" and "server persisted no global model" in row["failure_reason"]


def test_a_pickled_model_never_runs_code_in_the_shipped_numpy_evaluator(tmp_path):
    """hello-numpy's evaluator (the documented NumPy template) on a model that is a pickle whose unpickling prints
    a forged answer: it refuses to unpickle, so the evaluation fails instead of being forged."""
    import subprocess

    import numpy as np

    model = tmp_path / "server.npy"

    class Forge:
        def __reduce__(self):
            return (print, (FORGED,))

    np.save(model, np.array([Forge()], dtype=object), allow_pickle=True)
    done = subprocess.run(
        [sys.executable, "-B", "-s", str(HELLO_NUMPY_EVALUATOR), "--model", str(model), "--site", "site-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert FORGED not in done.stdout
    assert done.returncode != 0 and "allow_pickle" in done.stderr


def test_the_pytorch_template_loads_weights_only(tmp_path):
    """The PyTorch template in references/frozen-evaluation.md: `torch.load` of a candidate-written file must not
    unpickle arbitrary objects (`weights_only=True`), or a candidate's model runs code inside the evaluator and
    prints its own score."""
    reference = Path(__file__).resolve().parents[2] / "skills/nvflare-autofl/references/frozen-evaluation.md"
    text = reference.read_text()
    loads = [line for line in text.splitlines() if "torch.load(" in line]
    assert loads, "the PyTorch template has no torch.load"
    assert all("weights_only=True" in line for line in loads), loads


# --- the sites the evaluator sees -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, why",
    [
        ("shutil.rmtree(job / 'site-2')", "a site whose held-out share scores low dropped"),
        ("(job / 'site-0').mkdir()", "a site that never took part added (scored without the penalty)"),
        ("shutil.rmtree(job / 'site-2')\n(job / 'site-0').mkdir()", "a site swapped for another"),
    ],
)
def test_the_evaluator_sees_the_sites_that_took_part(tmp_path, body, why):
    workspace = initialized(tmp_path)
    done = run_candidate(workspace, "sites", append=after_result(body))
    row = not_kept_on(workspace, done, "sites")
    assert row["status"] == "crash", why
    assert "site" in row["failure_reason"]


# --- the evaluator's answer -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stdout, problem",
    [
        ('{"accuracy": NaN, "n": 10}', "NaN is not a number"),
        ('{"accuracy": Infinity, "n": 10}', "Infinity is not a number"),
        ('{"accuracy": 0.99, "n": 10}\n{"accuracy": -Infinity, "n": 10}', "-Infinity is not a number"),
        ('{"accuracy": 1e999, "n": 10}', "finite"),
        ('{"accuracy": 0.5, "n": 1e999}', "positive `n`"),
        ('{"accuracy": 0.5, "n": 0}', "positive `n`"),
        ('{"accuracy": 0.5, "n": -5}', "positive `n`"),
        ('{"accuracy": 0.5, "n": true}', "positive `n`"),
        ('{"accuracy": 0.5, "n": "100"}', "positive `n`"),
        ('{"accuracy": "0.99", "n": 100}', "no number for 'accuracy'"),
        ('{"loss": 0.1, "n": 100}', "no number for 'accuracy'"),
        ('{"accuracy": 0.5, "n": 1' + "0" * 400 + "}", "positive `n`"),
        ('{"accuracy": 1' + "0" * 400 + ', "n": 10}', "finite"),
        ("[0.99, 100]", "no JSON object"),
        ("", "no JSON object"),
    ],
)
def test_a_bad_answer_is_refused_with_its_problem(stdout, problem):
    from autofl_core.trial import evaluator

    with pytest.raises(ValueError) as refused:
        evaluator.parse_output(stdout, "accuracy")
    assert problem in str(refused.value)


def test_the_last_json_line_is_the_answer_and_junk_around_it_is_ignored():
    from autofl_core.trial import evaluator

    text = "\n".join(
        [
            '{"accuracy": 0.99, "n": 1000}',  # an earlier line: not the answer
            "loading model...",
            '{"accuracy": 0.61, "n": 200, "loss": 0.4, "note": "x", "nested": {"n": 5}}',
            "{not json}",
            "done",
        ]
    )
    value, n, metrics = evaluator.parse_output(text, "accuracy")
    assert (value, n) == (0.61, 200.0) and metrics == {"accuracy": 0.61, "n": 200.0, "loss": 0.4}


def test_the_score_is_the_n_weighted_mean_and_never_overflows():
    from autofl_core.trial import evaluator

    sites = [evaluator.SiteResult("a", value=0.9, n=100.0), evaluator.SiteResult("b", value=0.5, n=300.0)]
    assert evaluator.combine(sites) == pytest.approx(0.6)
    huge = [evaluator.SiteResult("a", value=0.9, n=1e308), evaluator.SiteResult("b", value=0.5, n=1e308)]
    score = evaluator.combine(huge)
    assert score is None or (math.isfinite(score) and score == pytest.approx(0.7))


def test_a_huge_answer_is_bounded_and_a_hanging_evaluator_is_ended(tmp_path):
    from autofl_core.trial import evaluator

    model = tmp_path / "server.npy"
    model.write_bytes(b"")
    script = (
        "import sys, time\n"
        "if sys.argv[sys.argv.index('--site') + 1] == 'site-1':\n"
        "    sys.stdout.write(('x' * 1023 + '\\n') * 4096)  # 4 MiB of junk, then the answer\n"
        '    print(\'{"accuracy": 0.6, "n": 50}\')\n'
        "else:\n"
        "    import subprocess\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "    time.sleep(600)\n"
    )
    import time

    started = time.monotonic()
    found = evaluator.evaluate_model(
        evaluator.EvaluatorRun(
            python=sys.executable,
            script="ev.py",
            files={"ev.py": script.encode()},
            model=model,
            model_format="numpy",
            sites=["site-1", "site-2"],
            metric="accuracy",
            timeout=5.0,
            temp_parent=tmp_path,
            sealed=False,
        )
    )
    assert time.monotonic() - started < 60
    assert found.score is None and found.failure == "frozen evaluator failed on site-2: timed out after 5 s"
    assert found.sites[0].value == 0.6 and found.sites[0].n == 50.0
    assert not list(tmp_path.glob("autofl-eval-*"))  # its temp folders are gone


# --- a hostile autofl.yaml ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["/etc/hostname", "../../../../../../../../etc/hostname", "models/../../x.npy"])
def test_a_declared_model_path_outside_the_run_dir_is_refused(tmp_path, model):
    workspace = evaluator_workspace(tmp_path)
    (workspace / "autofl.yaml").write_text(
        yaml.safe_dump({"evaluation": {"script": "evaluate_model.py", "model": model}})
    )
    done = run_inproc(workspace, "initialize")
    assert done.code == 2 and "evaluation.model" in done.stderr
    assert not (workspace / "results.tsv").exists()


# --- divergence -----------------------------------------------------------------------------------------------------


def test_metric_divergence_needs_more_than_the_baseline_gap_plus_the_band(tmp_path):
    """Baseline gap 0.0175, typical accuracy band 0.01: a candidate reporting 0.02 above its (honest) measured
    value is within the rule, one reporting 0.04 above it is flagged, and neither changes keep/discard."""
    workspace = initialized(tmp_path)
    small = run_candidate(workspace, "small", append="\nREPORTED_BONUS = 0.005\n")  # gap 0.0225 <= 0.0275
    assert "metric_divergence" not in small.envelope
    large = run_candidate(workspace, "large", append="\nREPORTED_BONUS = 0.03\n")  # gap 0.0475 > 0.0275
    assert large.envelope["metric_divergence"]["gap"] == 0.0475
    assert [row["score"] for row in ledger_rows(workspace)[1:]] == [BASELINE_MEASURED, BASELINE_MEASURED]


# --- the evaluator's reach ------------------------------------------------------------------------------------------


def test_the_evaluator_reaches_no_network(tmp_path):
    """An evaluator (or code a model smuggled into it) that phones a server listening on the host's loopback:
    the evaluator's network namespace has its own loopback, so the connection never arrives."""
    import socket

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    workspace = evaluator_workspace(tmp_path)
    evaluate = workspace / "evaluate_model.py"
    evaluate.write_text(
        evaluate.read_text()
        .replace(
            "    print(json.dumps(",
            "    import socket\n"
            "    reached = 0\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'score please')\n"
            "        reached = 1\n"
            "    except OSError:\n"
            "        pass\n"
            "    print(json.dumps(",
        )
        .replace('"n": site_size(args.site)}', '"n": site_size(args.site), "reached": reached}')
    )
    try:
        done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
        assert done.code == 0, done.stderr
        evaluation = json.loads((workspace / "autofl_runs/baseline/evaluation.json").read_text())
        assert [site["metrics"]["reached"] for site in evaluation["sites"]] == [0.0, 0.0]
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


def _private_python(tmp_path: Path) -> tuple[Path, Path]:
    """A venv of its own (so a candidate may try to poison its site-packages without touching the shared one) that
    sees the shared venv's packages through a .pth file."""
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(tmp_path / "venv")
    site_packages = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    shared = [entry for entry in sys.path if entry.endswith("site-packages")]
    (site_packages / "shared.pth").write_text("\n".join(shared) + "\n")
    return tmp_path / "venv" / "bin" / "python", site_packages


POISON = """

import site as _site, sys as _sys
for _folder in _site.getsitepackages():
    try:
        with open(_folder + '/sitecustomize.py', 'w') as _handle:
            _handle.write({shadow!r})
        with open(_folder + '/zz_forge.pth', 'w') as _handle:
            _handle.write('import sys; exec(' + repr({shadow!r}) + ')\\n')
    except OSError:
        pass
"""


def test_a_sealed_trial_cannot_poison_the_evaluators_interpreter(tmp_path):
    """The candidate writes a sitecustomize.py and a .pth file into the interpreter's site-packages (both run at
    every start of that interpreter, the evaluator's included): a sealed trial's writes there never land."""
    python, site_packages = _private_python(tmp_path)
    workspace = evaluator_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py", "--python", str(python))
    assert done.code == 0, done.stderr
    assert done.envelope["sandbox"]["sealed"] is True
    done = run_candidate(workspace, "poison", append=POISON.format(shadow=SHADOW))
    not_kept_on(workspace, done, "poison")
    assert not (site_packages / "sitecustomize.py").exists() and not (site_packages / "zz_forge.pth").exists()


@pytest.mark.xfail(
    strict=True,
    reason="hole (contained trials only): where the host cannot seal trials, candidate code runs with the user's "
    "rights and can write a sitecustomize.py or .pth file into the interpreter's site-packages, which the "
    "evaluator's interpreter then runs at start-up and prints a forged answer; -B -s and the staged view do not "
    "cover the interpreter's own folders",
)
def test_a_contained_trial_cannot_poison_the_evaluators_interpreter(tmp_path):
    from runner_support import WITHOUT_NAMESPACES, run_cli

    python, _site_packages = _private_python(tmp_path)
    workspace = evaluator_workspace(tmp_path)
    done = run_cli(
        workspace, "initialize", "--evaluator", "evaluate_model.py", "--python", str(python), prefix=WITHOUT_NAMESPACES
    )
    assert done.code == 0, done.stderr
    assert done.envelope["sandbox"]["sealed"] is False
    run_cli(workspace, "prepare", "--name", "poison", "--hypothesis", "h", prefix=WITHOUT_NAMESPACES)
    client = source_dir(workspace, "poison") / "client.py"
    client.write_text(client.read_text() + POISON.format(shadow=SHADOW))
    done = run_cli(workspace, "evaluate", prefix=WITHOUT_NAMESPACES)
    row = ledger_rows(workspace)[-1]
    assert row["status"] != "keep" and (row["score"] is None or row["score"] <= BASELINE_MEASURED), row


def test_a_contained_trial_cannot_loosen_the_pins_in_the_baselines_evaluation_record(tmp_path):
    """Where trials run contained (in the live workspace), the candidate rewrites the baseline's evaluation.json
    (the record later trials are compared with: its sites, its model file, its reported value) to match the sites
    it leaves, then drops the low-scoring site: the record is restored and the trial is a crash."""
    from runner_support import WITHOUT_NAMESPACES, run_cli

    workspace = evaluator_workspace(tmp_path)
    done = run_cli(workspace, "initialize", "--evaluator", "evaluate_model.py", prefix=WITHOUT_NAMESPACES)
    assert done.code == 0 and done.envelope["sandbox"]["sealed"] is False, done.stderr
    record = workspace / "autofl_runs" / "baseline" / "evaluation.json"
    original = record.read_bytes()
    rewrite = (
        "\n\nimport json as _json, pathlib as _pathlib\n"
        f"_record = _pathlib.Path({str(record)!r})\n"
        "_doc = _json.loads(_record.read_text())\n"
        "_doc['sites'] = [site for site in _doc['sites'] if site['site'] == 'site-1']\n"
        "_doc['reported_score'] = 5.0\n"
        "_record.write_text(_json.dumps(_doc))\n"
    )
    run_cli(workspace, "prepare", "--name", "repin", "--hypothesis", "h", prefix=WITHOUT_NAMESPACES)
    client = source_dir(workspace, "repin") / "client.py"
    client.write_text(client.read_text() + rewrite + after_result("shutil.rmtree(job / 'site-2')"))
    run_cli(workspace, "evaluate", prefix=WITHOUT_NAMESPACES)
    row = ledger_rows(workspace)[-1]
    assert row["status"] == "crash" and "autofl_runs/baseline/evaluation.json" in row["failure_reason"], row
    assert record.read_bytes() == original


def _marked_processes(marker: str) -> list[int]:
    import os

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        if stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
                            found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("sealed", [True, False])
def test_a_daemon_the_evaluator_leaves_ends_with_it(tmp_path, sealed):
    """The evaluator (or code a model smuggled into it) double-forks a detached daemon and answers: the daemon
    must not outlive the evaluation (it could rewrite the next trial's model)."""
    import os
    import signal
    import time
    import uuid

    from runner_support import WITHOUT_NAMESPACES, run_cli

    marker = f"autofl-eval-daemon-{uuid.uuid4().hex}"
    workspace = evaluator_workspace(tmp_path)
    evaluate = workspace / "evaluate_model.py"
    daemon = (
        "    import os, subprocess, sys\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {marker!r}],\n"
        "                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "        os._exit(0)\n"
        "    os.wait()\n"
    )
    evaluate.write_text(evaluate.read_text().replace("    print(json.dumps(", daemon + "    print(json.dumps("))
    prefix = () if sealed else WITHOUT_NAMESPACES
    try:
        done = run_cli(workspace, "initialize", "--evaluator", "evaluate_model.py", prefix=prefix)
        assert done.code == 0, done.stderr
        assert done.envelope["sandbox"]["sealed"] is sealed
        deadline = time.monotonic() + 10
        while _marked_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _marked_processes(marker) == []
    finally:
        for pid in _marked_processes(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("bonus", ["float('inf')", "float('nan')", "1e300"])
def test_an_absurd_reported_value_never_becomes_a_score_or_breaks_the_records(tmp_path, bonus):
    """The job reports Infinity, NaN or 1e300 about its model: never a score, and every record stays valid JSON
    (run_inproc validates the envelope, state, manifests and report against their schemas)."""
    workspace = initialized(tmp_path)
    done = run_candidate(workspace, "absurd", append=f"\nREPORTED_BONUS = {bonus}\n")
    row = not_kept_on(workspace, done, "absurd")
    assert row["score"] in (None, BASELINE_MEASURED)
    for path in [*workspace.glob("autofl_runs/absurd/*.json"), *workspace.glob(".nvflare/autofl/**/*.json")]:
        json.loads(path.read_text(), parse_constant=lambda word, p=path: pytest.fail(f"{p} holds {word}"))


def test_metric_divergence_is_direction_adjusted(monkeypatch):
    """The rule itself: reported beats measured by more than the baseline's gap plus the band; for a `min` metric
    a lower report is the better-looking one; a report worse than the measurement is never divergence."""
    from types import SimpleNamespace

    from autofl_core.runner import frozen_eval

    monkeypatch.setattr(frozen_eval, "_band", lambda campaign, reference: 0.01)
    for mode, baseline, cases in (
        ("max", (0.75, 0.7325), [((0.80, 0.76), True), ((0.78, 0.76), False), ((0.60, 0.76), False)]),
        ("min", (0.30, 0.32), [((0.20, 0.30), True), ((0.29, 0.30), False), ((0.40, 0.30), False)]),
    ):
        monkeypatch.setattr(
            frozen_eval,
            "_baseline_evaluation",
            lambda campaign, b=baseline: {"reported_score": b[0], "score": b[1]},
        )
        campaign = SimpleNamespace(settings=SimpleNamespace(mode=mode))
        for (reported, measured), flagged in cases:
            found = frozen_eval.divergence(campaign, reported, measured)
            assert (found is not None) == flagged, (mode, reported, measured, found)
        assert frozen_eval.divergence(campaign, None, 0.5) is None


@pytest.mark.parametrize("edit", ["drop", "script", "model"])
def test_an_evaluation_section_edited_between_actions_is_refused(tmp_path, edit):
    """Someone edits autofl.yaml's `evaluation` section between two actions (drops it, so the job's inflated report
    would be compared with the measured baseline; points the script at another frozen file; declares another
    model file): the next action refuses to go on, like an edited fixed budget, and nothing is recorded."""
    workspace = initialized(tmp_path)
    run_inproc(workspace, "prepare", "--name", "inflate", "--hypothesis", "h")
    client = source_dir(workspace, "inflate") / "client.py"
    client.write_text(client.read_text() + "\nREPORTED_BONUS = 0.2\n")
    config = yaml.safe_load((workspace / "autofl.yaml").read_text())
    if edit == "drop":
        del config["evaluation"]
    elif edit == "script":
        config["evaluation"]["script"] = "evalhelpers.py"
    else:
        config["evaluation"]["model"] = "FL_global_model.pt"
    (workspace / "autofl.yaml").write_text(yaml.safe_dump(config))
    before = (workspace / "results.tsv").read_bytes()
    done = run_inproc(workspace, "evaluate")
    assert done.code == 2 and "evaluation section" in done.stderr, (done.code, done.stderr, done.envelope)
    assert "\n" not in done.stderr.strip()
    assert (workspace / "results.tsv").read_bytes() == before


def test_an_external_baseline_never_replaces_the_measured_one_in_simulation(tmp_path):
    """The simulated baseline crashed (here: it persisted no model); instead of fixing the job and running it again,
    the agent records a low external baseline by hand. In simulation with a frozen evaluator the runner measures
    the baseline itself, so the hand-written number is refused and nothing is recorded."""
    workspace = evaluator_workspace(tmp_path)
    client = workspace / "client.py"
    client.write_text(client.read_text() + "\nPERSIST_MODEL = False\n")
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 1 and ledger_rows(workspace)[0]["score"] is None
    before = (workspace / "results.tsv").read_bytes()
    for args in (["--score", "0.1"], ["--artifacts", str(workspace / "autofl_runs" / "baseline" / "simulation")]):
        refused = run_inproc(workspace, "record", "--baseline", *args)
        assert refused.code == 2 and "frozen evaluator" in refused.stderr, (refused.code, refused.stderr)
    assert (workspace / "results.tsv").read_bytes() == before


def test_modules_a_candidate_creates_never_reach_the_evaluator(tmp_path):
    """The evaluator imports an optional module when it exists (`try: import fast_metrics`), which the job does
    not have at initialize, and the stdlib's `ast`. A candidate creates both in its folder, each printing a forged
    answer when imported by the evaluator: the evaluator runs from its staged copies and measures honestly."""
    workspace = evaluator_workspace(tmp_path)
    evaluate = workspace / "evaluate_model.py"
    evaluate.write_text(
        evaluate.read_text().replace(
            "from evalhelpers import",
            "try:\n    import fast_metrics  # noqa: F401\nexcept ImportError:\n    pass\nfrom evalhelpers import",
        )
    )
    done = run_inproc(workspace, "initialize", "--evaluator", "evaluate_model.py")
    assert done.code == 0 and done.envelope["baseline_score"] == BASELINE_MEASURED, done.stderr
    done = run_candidate(workspace, "shadow", bonus=0.01, files={"fast_metrics.py": SHADOW, "ast.py": SHADOW})
    assert done.code == 0 and done.envelope["candidate_status"] == "keep", ledger_rows(workspace)[-1]
    assert done.envelope["score"] == round(BASELINE_MEASURED + 0.01, 6)
    assert (workspace / "fast_metrics.py").exists()  # kept: the module now lives in the job
    again = run_candidate(workspace, "again", bonus=0.02)
    assert again.code == 0, again.stderr
    assert again.envelope["score"] == round(BASELINE_MEASURED + 0.02, 6)


def test_an_evaluator_that_prints_without_end_is_ended_before_it_fills_the_disk(tmp_path, monkeypatch):
    """Its output goes to files in its run folder: past the cap (lowered here to 1 MiB) it is ended, long before its
    timeout, and the evaluation is a failure naming why."""
    import time

    from autofl_core.trial import evaluator

    monkeypatch.setattr(evaluator, "MAX_STREAM_BYTES", 1024 * 1024)
    model = tmp_path / "server.npy"
    model.write_bytes(b"")
    script = 'import sys\nwhile True:\n    sys.stdout.write(\'{"accuracy": 0.99, "n": 1}\\n\' * 1000)\n'
    started = time.monotonic()
    found = evaluator.evaluate_model(
        evaluator.EvaluatorRun(
            python=sys.executable,
            script="ev.py",
            files={"ev.py": script.encode()},
            model=model,
            model_format="numpy",
            sites=["site-1"],
            metric="accuracy",
            timeout=300.0,
            temp_parent=tmp_path,
        )
    )
    assert time.monotonic() - started < 120
    assert (
        found.score is None
        and found.failure == "frozen evaluator failed on site-1: it printed more than 1 MiB, so it was ended"
    )
    assert not list(tmp_path.glob("autofl-eval-*"))


@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_a_missing_baseline_record_never_lifts_the_pins(tmp_path, damage):
    """The baseline's evaluation.json (which later trials are held to) is deleted or garbled between actions, then
    a candidate drops a site: the trial is a crash naming the record, never scored on other sites."""
    workspace = initialized(tmp_path)
    record = workspace / "autofl_runs" / "baseline" / "evaluation.json"
    if damage == "delete":
        record.unlink()
    else:
        record.write_text("{not json")
    done = run_candidate(workspace, "unpinned", append=after_result("shutil.rmtree(job / 'site-2')"))
    row = not_kept_on(workspace, done, "unpinned")
    assert row["status"] == "crash" and "autofl_runs/baseline/evaluation.json" in row["failure_reason"], row

"""Every file-backed diagnose eval case, replayed in-process through `diagnose_job.main`.

`evals/run_evals.py` runs the same cases through the CLI in subprocesses (the real path, in `make test`).
This replay applies the same checks (`eval_checks.check_result`: expected fields, spec invariants, catalog
copy, report schema) in the test process, where mutation testing (`make mutate`) can see which cases reach
which code: the matcher, refine and injection modules are mostly exercised through these scenarios.
"""

from __future__ import annotations

import io
from pathlib import Path

import diagnose_job
import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[1]
run_evals = load_by_path("run_evals", REPO / "evals" / "run_evals.py")
checks = load_by_path("eval_checks", REPO / "evals" / "eval_checks.py")
CASES = [case for case in run_evals.load_cases()[0] if case.get("files")]
CATALOG, SCHEMA = run_evals.load_catalog(), run_evals.load_schema()


def run_in_process(case: dict, capsys) -> tuple[int, str, str]:
    argv = [f if f == "-" else str(run_evals.FILES / f) for f in case["files"]] + list(case.get("args", []))
    stdin = io.BytesIO((run_evals.FILES / case["stdin"]).read_bytes() if case.get("stdin") else b"")
    stdout = io.StringIO()
    try:
        code = diagnose_job.main(argv, stdin=stdin, stdout=stdout)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    return code, stdout.getvalue(), capsys.readouterr().err


def test_every_file_backed_case_is_replayed():
    assert len(CASES) >= 100 and CATALOG and SCHEMA


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_eval_case_in_process(case, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, err = run_in_process(case, capsys)
    markdown = "markdown" in case.get("args", []) and "--format" in case.get("args", [])
    assert checks.check_result(case["expected"], code, out, err, CATALOG, markdown=markdown, schema=SCHEMA) == []

"""The final report never calls a step "beyond noise" that was within the measured band.

The campaign: baseline 0.50, `a` 0.60 (a large step), `b` 0.605 (a step of 0.005 over `a`), and two replicates of
`b` (0.60, 0.61) that measure a noise band of 0.01. The improvement over the baseline (0.105) is far outside the
band, but the best's own step is inside it: neither the headline nor "What helped" may call that step beyond noise.
"""

import json

import pytest
from autofl_core.campaign import ledger
from runner_support import SCRIPTS, run_inproc, standin_workspace

pytestmark = pytest.mark.slow

CAMPAIGN_REPORT = SCRIPTS / "campaign_report.py"


def row(status, name, score, **extra):
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status=status, name=name, score=score, runtime_seconds=1.0, **extra)
    return values


ROWS = [
    row("baseline", "baseline", 0.50),
    row("keep", "a", 0.60, base_candidate="baseline", candidate_kind="argument_only"),
    row("keep", "b", 0.605, base_candidate="a", candidate_kind="argument_only"),
    row("replicate", "b-rep-1", 0.60, base_candidate="b"),
    row("replicate", "b-rep-2", 0.61, base_candidate="b"),
]


def report_of(tmp_path):
    workspace = standin_workspace(tmp_path)
    assert run_inproc(workspace, "initialize", "--max-candidates", "2").code == 0
    (workspace / "results.tsv").write_text(ledger.format_ledger(ROWS))
    done = run_inproc(workspace, "report")
    assert done.code == 0, done.stderr
    data = json.loads((workspace / "autofl_report.json").read_text())
    return data, (workspace / "autofl_report.md").read_text()


def section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_a_best_whose_own_step_is_within_the_band_is_never_called_beyond_noise(tmp_path):
    data, markdown = report_of(tmp_path)
    assert data["noise"]["band"] == pytest.approx(0.01, abs=1e-6)  # measured by b's replicates
    helped = {item["name"]: item["noise"] for item in data["what_helped"]["improvements"]}
    assert helped == {"a": "beyond noise", "b": "within noise"}
    assert data["selected"]["name"] == "b" and data["selected"]["noise"] == "within noise"

    headline = next(line for line in markdown.splitlines() if line.startswith("Baseline 0.500000; best `b`"))
    assert "beyond noise" not in headline and "its own step over `a` is within noise" in headline
    for line in section(markdown, "What helped").splitlines():
        if "`b`" in line:
            assert "beyond noise" not in line and "within noise" in line

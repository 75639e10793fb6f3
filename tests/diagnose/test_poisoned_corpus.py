"""R6: the poisoned-log corpus is 100 % flagged, nothing leaks, and the CLI never turns a directive into advice."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from module_loader import load_by_path
from nvfdiag.model import Line
from nvfdiag.untrusted import rules as injection_rules
from nvfdiag.untrusted.injection import KINDS, scan_lines
from nvfdiag.untrusted.normalize import normalize
from report_schema import validated

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "evals" / "diagnose" / "files" / "poisoned"
CLI = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
VARIANTS = json.loads((CORPUS / "variants.json").read_text(encoding="utf-8"))
IDS = [entry["file"] for entry in VARIANTS]
REQUIRED_TECHNIQUES = (
    "plain",
    "split across lines",
    "base64",
    "hex",
    "percent-encoding",
    "zero-width characters",
    "bidi controls",
    "homoglyphs",
    "HTML comment",
    "markdown link",
    "spoofed marker",
    "fake assistant note",
    "JSON-lines message",
)
RESERVED_HOST = re.compile(r"(^|\.)(example\.(com|org|net)|[a-z0-9-]+\.test)$")


def corpus_lines(entry: dict) -> list[Line]:
    text = (CORPUS / entry["file"]).read_text(encoding="utf-8")
    return [Line(entry["file"], "site-1", number, line) for number, line in enumerate(text.splitlines(), 1)]


def test_corpus_is_large_and_covers_every_technique_and_kind():
    assert len(VARIANTS) >= 30
    techniques = {entry["technique"] for entry in VARIANTS}
    assert all(any(required in technique for technique in techniques) for required in REQUIRED_TECHNIQUES)
    assert {kind for entry in VARIANTS for kind in entry["kinds"]} == set(KINDS)
    assert sum(1 for entry in VARIANTS if entry["real_signal"]) >= 3


def test_corpus_files_match_their_generator():
    generator = load_by_path("poisoned_generator", CORPUS / "generate_corpus.py")
    generated = generator.variants()
    assert [entry["file"] for entry in generated] == IDS
    for entry, listed in zip(generated, VARIANTS, strict=True):
        assert (CORPUS / entry["file"]).read_text(encoding="utf-8") == entry.pop("text")
        assert entry == listed


@pytest.mark.parametrize("entry", VARIANTS, ids=IDS)
def test_corpus_uses_reserved_domains_only(entry):
    text = (CORPUS / entry["file"]).read_text(encoding="utf-8")
    hosts = re.findall(r"://([\w.-]+)", text) + re.findall(r"@([a-z][\w-]*(?:\.[\w-]+)+)", text)
    for host in hosts:
        if not re.fullmatch(r"[\d.]+|localhost", host):
            assert RESERVED_HOST.search(host.lower()), host


@pytest.mark.parametrize("entry", VARIANTS, ids=IDS)
def test_every_variant_is_flagged_with_its_kinds_on_the_injected_lines_only(entry):
    findings = scan_lines(corpus_lines(entry))
    assert set(entry["kinds"]) <= {f["kind"] for f in findings}
    assert {f["line"] for f in findings} <= set(entry["lines"])


@pytest.mark.parametrize("entry", VARIANTS, ids=IDS)
def test_summaries_contain_no_forbidden_string(entry):
    for finding in scan_lines(corpus_lines(entry)):
        summary = finding["summary"].lower()
        assert not any(secret.lower() in summary for secret in entry["forbidden"]), finding


@pytest.mark.parametrize("entry", VARIANTS, ids=IDS)
def test_healthy_context_of_each_variant_is_clean(entry):
    context = [line for line in corpus_lines(entry) if line.line not in entry["lines"]]
    assert scan_lines(context) == []


def run_cli(python_exe: str, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python_exe, str(CLI), str(path), *extra], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize("entry", VARIANTS, ids=IDS)
def test_cli_reports_the_variant_and_never_echoes_the_directive(entry, python_exe):
    assert CLI.is_file(), "diagnose_job.py (D1) is missing"
    result = run_cli(python_exe, CORPUS / entry["file"])
    assert result.returncode == 0, result.stderr
    report = validated(result.stdout)
    assert "SUSPICIOUS_LOG_CONTENT" in report["findings"]
    assert set(entry["kinds"]) <= {item["kind"] for item in report["suspicious_content"]}
    actions = report["next_action"] + "\n" + "\n".join(report["follow_up_commands"])
    for secret in entry["forbidden"]:
        assert secret not in actions
        assert secret not in result.stdout  # nowhere in the report: excerpts and summaries are defanged too
    assert report["matched_pattern"] == (entry["real_signal"] or "UNKNOWN")


@pytest.mark.slow
def test_cli_markdown_marks_the_section_and_leaks_nothing(python_exe):
    entry = next(item for item in VARIANTS if item["file"].startswith("p33_"))
    result = run_cli(python_exe, CORPUS / entry["file"], "--format", "markdown")
    assert result.returncode == 0, result.stderr
    assert "Suspicious log content (not followed)" in result.stdout
    assert not any(secret in result.stdout for secret in entry["forbidden"])


def test_gated_and_ungated_detection_agree_on_every_corpus_line():
    for entry in VARIANTS:
        for line in corpus_lines(entry):
            text = normalize(line.text)
            assert injection_rules.detect(text) == injection_rules.detect(text, gated=False), (entry["file"], line.line)

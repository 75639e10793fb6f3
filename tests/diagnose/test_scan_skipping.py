"""The detailed scan skips the lines that cannot matter, and skipping loses nothing.

Speed itself is measured by bench/diagnose_throughput.py (P4t); here the work is counted, which is
deterministic: on ordinary NVFLARE log text only a few lines get the full per-line treatment, and a scan that
treats every line finds exactly the same on the poisoned corpus mixed into healthy real logs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from module_loader import load_by_path
from nvfdiag.match import scan
from nvfdiag.match.catalog import load_catalog
from nvfdiag.model import Line
from nvfdiag.pipeline import diagnose
from nvfdiag.read.evidence import collect_evidence
from nvfdiag.untrusted import injection

REPO = Path(__file__).resolve().parents[2]
THROUGHPUT = load_by_path("diagnose_throughput", REPO / "bench" / "diagnose_throughput.py")
CORPUS = REPO / "evals" / "diagnose" / "files" / "poisoned"
BIG = {"max_bytes": 1 << 30, "max_total_bytes": 1 << 30, "max_files": 100_000}


@pytest.fixture(scope="module")
def ordinary(tmp_path_factory):
    """About 1 MiB of healthy real NVFLARE log text (the P4t benchmark's text), read as evidence."""
    root = tmp_path_factory.mktemp("ordinary")
    THROUGHPUT.build_text_tree(root, 1 << 20)
    evidence = collect_evidence([str(root)], job_id=None, **BIG)
    shutil.rmtree(root)
    return evidence


def test_few_lines_of_ordinary_text_get_the_full_injection_scan(ordinary, monkeypatch):
    built = []

    class CountingView(injection._LineView):
        def __init__(self, text):
            built.append(text)
            super().__init__(text)

    monkeypatch.setattr(injection, "_LineView", CountingView)
    report = diagnose(ordinary, load_catalog())
    assert len(ordinary.lines) > 7000 and report["suspicious_content"] == []
    assert len(built) <= len(ordinary.lines) // 50, f"{len(built)} of {len(ordinary.lines)} lines fully scanned"


def test_few_lines_of_ordinary_text_are_tried_against_catalog_regexes(ordinary, monkeypatch):
    tried = []
    real = scan._signal_matches
    monkeypatch.setattr(scan, "_signal_matches", lambda text, sig, loud: tried.append(text) or real(text, sig, loud))
    diagnose(ordinary, load_catalog())
    assert len(tried) <= len(ordinary.lines) // 5, f"{len(tried)} regex tries for {len(ordinary.lines)} lines"


def every_line(items, index):
    """The reference: every line gets the single-line scan, every continuation window the joined scan."""
    windows = [n - 1 for n in range(1, len(items)) if injection._consecutive(items[n - 1], items[n])]
    return set(range(len(items))), windows


def corpus_in_healthy_logs(ordinary) -> list[Line]:
    """Each poisoned variant dropped into the middle of healthy real lines, as its own source."""
    healthy = ordinary.lines[:400]
    lines = list(healthy)
    for entry in json.loads((CORPUS / "variants.json").read_text(encoding="utf-8")):
        text = (CORPUS / entry["file"]).read_text(encoding="utf-8").splitlines()
        lines += [Line(entry["file"], "site-1", n, t) for n, t in enumerate(text, 1)]
        lines += healthy[:50]
    return lines


def test_skipping_finds_exactly_what_scanning_every_line_finds(ordinary, monkeypatch):
    lines = corpus_in_healthy_logs(ordinary)
    fast = injection.scan_lines(lines)
    monkeypatch.setattr(injection, "_worth_a_look", every_line)
    assert fast == injection.scan_lines(lines)
    assert len({f["source"] for f in fast}) == len(json.loads((CORPUS / "variants.json").read_text()))

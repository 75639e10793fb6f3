"""Process exits are read once as numbers with their encodings, in every spelling."""

import pytest
from nvfdiag.match import catalog as cat
from nvfdiag.match.exits import decode, read_exit
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TS = "2024-11-02 08:00:01,001 - ProcessExecutor - INFO - "


def run(texts, **options):
    options.setdefault("mode", "production")
    lines = [Line("site-1/log.txt", "site-1", i + 1, t) for i, t in enumerate(texts)]
    evidence = Evidence(sources=[Source("site-1/log.txt", "log", "site-1", "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG, **options))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("job abc: process finished with execution code: -9", -9),
        ("return_code from process.exitcode: -9", -9),
        ("nvflare-site-a exited with code 137", 137),
        ("child exit status 247", 247),
        ("    Exit Code:    137", 137),
        ("worker rc = -9", -9),
        ("command terminated with exit code 137", 137),
        ("Process exited with exit code -9", -9),
    ],
)
def test_numbers_in_any_wording_decode_to_sigkill(text, code):
    assert read_exit(text)[0] == code


@pytest.mark.parametrize(
    "text",
    [
        "bash: line 7:  9182 Killed                  python3 train.py --epochs 4",
        "[2]-  Killed                  python job.py",
        "Killed",
        "      Reason:       OOMKilled",
        "worker was terminated by signal 9",
        "received SIGKILL",
    ],
)
def test_kills_without_a_number_are_read_too(text):
    assert read_exit(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "exit code 0",
        "exited with code 1",
        "exit after 137 seconds",
        "exited with code 0 after 137 s",
        "rc=2",
        "lr 0.137",
    ],
)
def test_other_numbers_are_not_kills(text):
    assert read_exit(text) is None


def test_the_encodings_are_the_three_spellings_of_minus_nine():
    assert [c for c in range(-300, 300) if decode(c)] == [-9, 137, 247]


def test_a_container_exit_137_selects_the_kill_row_with_its_basis():
    report = run([TS + "training round 3", "site-1 exited with code 137"])
    assert report["matched_pattern"] == "PROCESS_EXIT_NEG9"
    basis = report["signals"][0]["match_basis"]
    assert basis["kind"] == "process_exit" and "128+9" in basis["rule"]


def test_oomkilled_names_the_host_oom_variant():
    report = run(["Last State: Terminated", "  Reason: OOMKilled", "  Exit Code: 137"])
    assert report["matched_pattern"] == "PROCESS_EXIT_NEG9"
    assert "OOM" in report["likely_cause"]

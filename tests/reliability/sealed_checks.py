"""What must hold after an R8 attack (tests/reliability/test_r8_sealed_trials.py): the evidence and the live job
byte-identical, the envelope's `sandbox` object, no process of the trial left, and how helpers were started.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from runner_support import ledger_rows

RUNNER_OUTPUTS = (
    "results.tsv",
    "autofl.yaml",
    "progress.png",
    "progress.txt",
    "autofl_report.md",
    "autofl_report.json",
)
SECRET_PREFIX = "AUTOFL_R8"


def files_under(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """{relative path: bytes} of every file under root, __pycache__ included (symlinks by their target)."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if not any(rel == s or rel.startswith(s + "/") for s in skip):
                found[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return found


def evidence(workspace: Path) -> dict[str, bytes]:
    """The files the campaign's verdicts rest on: ledger, campaign.json, autofl.yaml and the best snapshot."""
    meta = workspace / ".nvflare" / "autofl"
    found = {rel: (workspace / rel).read_bytes() for rel in ("results.tsv", "autofl.yaml")}
    found[".nvflare/autofl/campaign.json"] = (meta / "campaign.json").read_bytes()
    for rel, data in files_under(meta / "snapshots").items():
        found[f".nvflare/autofl/snapshots/{rel}"] = data
    return found


def job_folder(workspace: Path) -> dict[str, bytes]:
    """Everything in the workspace that is not the runner's: the live job, its __pycache__, stray modules."""
    return files_under(workspace, skip=(".nvflare", "autofl_runs", *RUNNER_OUTPUTS))


def assert_live_job_is_the_best(workspace: Path) -> None:
    """Every file of the best snapshot is live byte for byte, and no module it lacks sits in the job (a README
    the snapshot does not track may)."""
    best = files_under(workspace / ".nvflare" / "autofl" / "snapshots" / "best" / "source")
    live = {rel: data for rel, data in job_folder(workspace).items() if "__pycache__" not in rel.split("/")}
    differ = sorted(rel for rel in best if live.get(rel) != best[rel])
    assert differ == [], f"the live job differs from the best snapshot: {differ}"
    shipped = {"evaluate.py"}  # examples/hello-numpy's frozen evaluator: shipped with the job, never a candidate's
    strays = sorted(rel for rel in set(live) - set(best) - shipped if rel.endswith((".py", ".pth")))
    assert strays == [], f"Python files in the live job that the best snapshot does not hold: {strays}"


def assert_evidence_unchanged(workspace: Path, before: dict[str, bytes], name: str) -> dict:
    """Byte-identical evidence, except that the ledger gained exactly the candidate's own row (returned)."""
    after = evidence(workspace)
    ledger_before, ledger_after = before["results.tsv"], after["results.tsv"]
    assert ledger_after.startswith(ledger_before), "results.tsv lost or changed rows"
    assert ledger_after.count(b"\n") == ledger_before.count(b"\n") + 1, "results.tsv must gain exactly one row"
    changed = sorted(
        rel for rel in set(before) | set(after) if rel != "results.tsv" and before.get(rel) != after.get(rel)
    )
    assert changed == [], f"campaign files changed by the candidate: {changed}"
    row = ledger_rows(workspace)[-1]
    assert row["name"] == name
    return row


def assert_sealed(envelope: dict, *, network_allowed: bool = False) -> None:
    sandbox = envelope.get("sandbox")
    assert sandbox is not None, "the evaluate envelope carries no `sandbox` object"
    assert sandbox["sealed"] is True and sandbox["missing"] == [], sandbox
    values = set(sandbox["protections"].values())
    assert values <= {"yes", "allowed"} and ("allowed" in values) == network_allowed, sandbox


def assert_unsealed(envelope: dict) -> None:
    sandbox = envelope.get("sandbox")
    assert sandbox is not None, "the evaluate envelope carries no `sandbox` object"
    assert sandbox["sealed"] is False and sandbox["missing"], sandbox
    for name in sandbox["missing"]:
        assert sandbox["protections"][name].startswith("unavailable: "), sandbox


def processes_with(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if tag.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def recording_python(tmp_path: Path) -> tuple[Path, Path]:
    """An interpreter wrapper that records every call (cwd, the secret's value, argv) and execs the real one."""
    log, wrapper = tmp_path / "calls.log", tmp_path / "python-recorder"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'{{ printf \'%s\\037\' "$(pwd -P)" "${{{SECRET_PREFIX}_SECRET-}}"; for a in "$@"; do printf \'%s\\037\' "$a";'
        f" done; printf '\\036'; }} >> '{log}'\n"
        f"exec '{sys.executable}' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    return wrapper, log


def helper_calls(log: Path) -> list[tuple[str, str, list[str]]]:
    """(cwd, secret seen, interpreter options) of every recorded call that is not a trial (no job.py in argv)."""
    calls = []
    for record in log.read_text().split("\036"):
        if not record:
            continue
        cwd, secret, *argv = record.split("\037")[:-1]
        if any(Path(arg).name == "job.py" for arg in argv):
            continue
        options, takes_value = [], False
        for arg in argv:
            if not takes_value and (not arg.startswith("-") or arg == "-"):
                break
            options.append(arg)
            takes_value = arg in ("-W", "-X", "--check-hash-based-pycs")
            if arg == "-c" or (not arg.startswith("--") and arg.endswith("c") and not takes_value):
                break
        calls.append((cwd, secret, options))
    return calls


def isolated_mode(options: list[str]) -> bool:
    """True when the interpreter options include -I (alone or in a group such as -Ic)."""
    return any(o == "-I" or (o.startswith("-") and not o.startswith("--") and "I" in o[1:]) for o in options)

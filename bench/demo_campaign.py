"""P6: the bounded demo campaign (examples/demo.py) on examples/hello-numpy vs the sum of its bare job runs.

Usage: python bench/demo_campaign.py [--python PY]

The campaign is examples/demo.py's own `campaign()` (loaded by file path), end to end through the CLI as an agent
runs it: `initialize --max-candidates 3 --base-args "--seed 0"` (with the baseline), `suggest`, three `prepare`s
(suggest's first seed, a source edit, a crashing edit), `evaluate --manifest A --manifest B --manifest C` (one
batch of concurrent trials), `replicate --count 2 --parallel 2` (side by side) and `report`. The demo's diagnosis
afterwards is not part of the campaign.

The sum of its bare job runs: each of the six job runs the campaign makes (baseline, three candidates, two
replicates of the best) run bare as `python job.py <budget> [args]` from its own copy of the example (edited like
the candidate) with its own simulator root, one after another, their wall times added. That is what the same
trials cost without the runner and without overlapping; the campaign overlaps its batch and its replicates, so the
bar holds when the runner's own work (a dozen CLI processes, sealing, decisions, plots, reports) fits inside what
overlapping saves. One untimed bare run comes first (the first NVFLARE start after a while reads its files from
disk, about 0.5 s slower: not the runner's cost), and the six bare runs are timed both before and after the
campaign, so drift of the machine cancels out. After the campaign, its ledger's run commands are checked against
the bare runs' arguments (a demo that changed what it runs stops the bench with a message naming RUNS).
Bar (quality.md P6): campaign wall <= the mean of the two bare sums. Prints a table and `RESULT: PASS|FAIL`;
exits 1 when the bar is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_SCRIPT = REPO / "examples" / "demo.py"
BUDGET = ["--n_clients", "2", "--num_rounds", "3"]  # the example's fixed budget, as the runner passes it
SEED_ARGS = ["--lr", "0.1"]  # suggest's first seed for the example
# Every job run of the demo campaign, in ledger order: (label, source variant, arguments after the budget).
RUNS = (
    ("baseline", "plain", ["--seed", "0"]),
    ("seed candidate (" + " ".join(SEED_ARGS) + ")", "plain", ["--seed", "0", *SEED_ARGS]),
    ("feature-scaling", "scaled", ["--seed", "0"]),
    ("drop-bias (crashes)", "crash", ["--seed", "0"]),
    ("replicate 1 of the best (--seed 1)", "scaled", ["--seed", "0", "--seed", "1"]),
    ("replicate 2 of the best (--seed 2)", "scaled", ["--seed", "0", "--seed", "2"]),
)


def load_demo():
    """examples/demo.py as a module (its campaign steps, example path and edits)."""
    spec = importlib.util.spec_from_file_location("autofl_demo", DEMO_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ran_args(command: str) -> list[str]:
    """A ledger run command's arguments after job.py, without the runner's per-trial `--name`."""
    words = shlex.split(command)
    rest = words[[word.endswith("job.py") for word in words].index(True) + 1 :]
    named = [index for index, word in enumerate(rest) if word == "--name"]
    return [word for index, word in enumerate(rest) if index not in named and index - 1 not in named]


def check_ran(rows: list[dict]) -> None:
    """Stop the bench when the campaign's ledger ran other configurations than the bare runs time."""
    observed = [ran_args(row["run_command"]) for row in rows]
    expected = [BUDGET + args for _label, _variant, args in RUNS]
    if observed != expected:
        raise SystemExit(f"the demo campaign ran {observed}, the bench times {expected}: update RUNS in {__file__}")


def read_ledger(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def sources(demo, scratch: Path) -> dict[str, Path]:
    """One copy of the example per source variant: as it is, with the demo's scaling edit, with its crash edit."""
    folders = {}
    for variant, change in (("plain", None), ("scaled", demo.SCALING_EDIT), ("crash", demo.CRASH_EDIT)):
        folders[variant] = scratch / f"bare-{variant}"
        shutil.copytree(demo.EXAMPLE, folders[variant], ignore=shutil.ignore_patterns("__pycache__"))
        if change:
            demo.edit(folders[variant], "client.py", change)
    return folders


def bare(python: str, folder: Path, variant: str, args: list[str], root: Path) -> float:
    env = dict(os.environ, NVFLARE_SIMULATOR_WORKSPACE_ROOT=str(root))
    started = time.perf_counter()
    done = subprocess.run([python, str(folder / "job.py"), *BUDGET, *args], cwd=folder, env=env, capture_output=True)
    seconds = time.perf_counter() - started
    if (done.returncode != 0) != (variant == "crash"):
        raise SystemExit(f"bare run of {variant} {args} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return seconds


@contextlib.contextmanager
def stderr_to(log: Path):
    """The campaign's progress lines (stderr of every step) go to `log`, like the bare runs' output; its tail is
    shown when the campaign fails."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "wb") as handle:
            os.dup2(handle.fileno(), 2)
        yield
    except BaseException:
        os.dup2(saved, 2)
        print(log.read_text(encoding="utf-8", errors="replace")[-3000:], file=sys.stderr)
        raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def timed_campaign(demo, workspace: Path, log: Path) -> float:
    shutil.copytree(demo.EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    started = time.perf_counter()
    with stderr_to(log):
        final, _evaluated, _crashed = demo.campaign(workspace)
    wall = time.perf_counter() - started
    if final["reason"] != "candidate_cap_exhausted":
        raise SystemExit(f"the demo campaign ended with {final['reason']}, not candidate_cap_exhausted")
    check_ran(read_ledger(workspace / "results.tsv"))
    return wall


def table(before: list[float], after: list[float], wall: float) -> tuple[list[str], bool]:
    """The printed table and the verdict, judged on the figures as printed (two decimals)."""
    lines = [f"{'job run (bare, one after another)':<36} {'before':>8} {'after':>8}"]
    lines += [f"{label:<36} {b:8.2f} {a:8.2f}" for (label, _v, _a), b, a in zip(RUNS, before, after, strict=True)]
    lines.append(f"{'sum':<36} {sum(before):8.2f} {sum(after):8.2f}")
    reference = round((sum(before) + sum(after)) / 2, 2)
    shown = round(wall, 2)
    ok = shown <= reference
    lines.append(
        f"campaign (examples/demo.py's steps through the CLI) {shown:.2f} s; bar: mean bare sum {reference:.2f} s; "
        f"campaign/bare {shown / reference:.3f} ({shown - reference:+.2f} s)"
    )
    return lines + [f"RESULT: {'PASS' if ok else 'FAIL'}"], ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    )
    args = parser.parse_args(argv)
    python = os.path.abspath(args.python)
    if python != os.path.abspath(sys.executable):  # demo.py runs the CLI with sys.executable: be that interpreter
        os.execv(python, [python, str(Path(__file__).resolve()), "--python", python])
    demo = load_demo()
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as scratch_text:
        scratch = Path(scratch_text)
        folders = sources(demo, scratch)

        def bare_runs(tag: str) -> list[float]:
            return [
                bare(python, folders[variant], variant, run_args, scratch / f"{tag}{index}")
                for index, (_label, variant, run_args) in enumerate(RUNS)
            ]

        bare(python, folders["plain"], "plain", [], scratch / "warm-up")
        before = bare_runs("before")
        wall = timed_campaign(demo, scratch / "campaign", scratch / "campaign.log")
        after = bare_runs("after")
    lines, ok = table(before, after, wall)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

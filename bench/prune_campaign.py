"""P8: a campaign with and without `--prune`, side by side: candidate compute saved, same best, 0 false prunes.

Usage: python bench/prune_campaign.py [--python PY] [--rounds N] [--keep DIR] [--quick]

Two copies of examples/hello-numpy are initialized with the same budget (`--base-args "--num_rounds N"`, default
8: the example's own 3 rounds leave nothing to prune, its first round being the untrained model every candidate
shares), one plain and one with `--prune`. The same six argument-only candidates are then prepared and evaluated
one at a time in both, interleaved (A1, B1, A2, B2, ...) so a change of the machine's load hits both alike. Two
are hopeless: a learning rate with the wrong sign (gradient ascent, the loss diverges; accuracy stays near 0.33
while the others pass 0.75), small and large. Candidate compute is the sum of the candidate rows'
`runtime_seconds` (the baseline not included).

Judged: candidate compute with pruning at least 30 % below without (quality.md P8), the same best (name and
score), and 0 false prunes: no candidate pruned live whose unpruned twin was kept or finished within the noise
band of the best (the typical spread for the metric when nothing was measured), and 0 false prunes when
bench/prune_replay.py's default rule replays the unpruned campaign. The arithmetic ceiling is printed beside the
saving: a prune never comes before half the rounds, so two hopeless candidates of six save at most
2/6 x 1/2 = 17 % of the candidates' rounds (less of their seconds, which include each trial's start-up).

Prints a table and `RESULT: PASS|FAIL`; exits 1 when a bar is missed. `--quick`: the stand-in campaign job with
slowed rounds, a smoke run judging only that the hopeless candidates were pruned and the best is the same.
`--keep DIR` leaves both campaigns there (for `prune_replay.py --root DIR`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
STANDIN = REPO / "tests" / "autofl" / "standin_campaign"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import prune_replay  # noqa: E402
from prune_replay import compare, gains, ledger, prune  # noqa: E402

MIN_SAVED = 0.30
CANDIDATES = (  # (name, run args, hopeless)
    ("lr-0.1", "--lr 0.1", False),
    ("lr-ascent", "--lr -0.05", True),
    ("lr-0.02", "--lr 0.02", False),
    ("lr-0.2", "--lr 0.2", False),
    ("lr-ascent-big", "--lr -0.5", True),
    ("steps-10", "--local_steps 10", False),
)
QUICK_CANDIDATES = (  # the stand-in's score is 0.8 - |lr - 0.2| + 0.05
    ("lr-0.25", "--lr 0.25", False),
    ("lr-far", "--lr 0.9", True),
    ("lr-0.15", "--lr 0.15", False),
    ("lr-0.22", "--lr 0.22", False),
    ("lr-farther", "--lr 1.2", True),
    ("steps-8", "--local_steps 8", False),
)
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
ENV["AUTOFL_PLOT_RENDERER"] = "pillow"  # the plot is not what is measured


def runner(python: str, workspace: Path, *args: str) -> dict:
    done = subprocess.run(
        [python, str(RUNNER), args[0], str(workspace / "job.py"), *args[1:]],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=workspace,
        timeout=1800,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{args[0]} failed in {workspace} (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def setup(folder: Path, quick: bool, rounds: int) -> None:
    shutil.copytree(STANDIN if quick else EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if quick:  # 1 s rounds, so a trial can be stopped mid-run
        client = folder / "client.py"
        client.write_text(client.read_text().replace("BONUS = 0.0\n", "BONUS = 0.0\nROUND_SECONDS = 0.5\n"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with nvflare for the runner")
    parser.add_argument("--rounds", type=int, default=8, help="the campaigns' num_rounds (default 8)")
    parser.add_argument("--keep", help="leave both campaigns in this folder")
    parser.add_argument("--quick", action="store_true", help="the stand-in job (smoke run)")
    args = parser.parse_args(argv)
    candidates = QUICK_CANDIDATES if args.quick else CANDIDATES
    base = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="prune-p8-"))
    plain, pruned = base / "without-prune", base / "with-prune"
    for folder in (plain, pruned):
        shutil.rmtree(folder, ignore_errors=True)
        setup(folder, args.quick, args.rounds)
    budget = ["--base-args", f"--num_rounds {args.rounds}", "--max-candidates", str(len(candidates))]
    try:
        runner(args.python, plain, "initialize", *budget)
        runner(args.python, pruned, "initialize", "--prune", *budget)
        for name, run_args, _hopeless in candidates:
            for folder in (plain, pruned):
                runner(args.python, folder, "prepare", "--name", name, "--hypothesis", f"{name}: {run_args}")
                runner(args.python, folder, "evaluate", "--run-args", run_args)
        return judge(plain, pruned, candidates, args)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def judge(plain: Path, pruned: Path, candidates, args) -> int:
    rows = {folder: ledger.read_rows(folder / "results.tsv") for folder in (plain, pruned)}
    mode = json.loads((plain / ".nvflare/autofl/campaign.json").read_text())["settings"]["mode"]
    by_name = {folder: {row.name: row for row in rows[folder]} for folder in rows}
    compute = {
        folder: sum(by_name[folder][name].runtime_seconds or 0.0 for name, _a, _h in candidates) for folder in rows
    }
    best = {folder: prune_replay.v.best_row(rows[folder], mode) for folder in rows}
    print(f"P8: {len(candidates)} candidates, {sum(h for *_x, h in candidates)} hopeless, num_rounds {args.rounds}")
    print(f"{'candidate':<15} {'without --prune':>26} {'with --prune':>40}")
    live_false = []
    for name, _run_args, _hopeless in candidates:
        a, b = by_name[plain][name], by_name[pruned][name]
        shown_b = "pruned" if prune.is_pruned(b) else f"{b.status} {b.score}"
        print(
            f"{name:<15} {a.status:>8} {a.score!s:>9} {a.runtime_seconds:6.1f} s   {shown_b:>28} {b.runtime_seconds:6.1f} s"
        )
        if prune.is_pruned(b):
            reference = prune_replay.v.best_row(rows[plain][: rows[plain].index(a)], mode)
            tolerance = gains.typical_spread(None, reference.score) if reference else 0.0
            gain = compare.improvement(a.score, reference.score, mode) if a.score is not None else None
            if a.status == prune_replay.v.KEEP or (gain is not None and gain >= -(tolerance or 0.0)):
                live_false.append(name)
            print(f"{'':<15} {b.failure_reason}")
    crashed = [
        f"{folder.name}/{name}"
        for folder in rows
        for name, *_r in candidates
        if by_name[folder][name].status == prune_replay.v.CRASH
    ]
    if crashed:  # e.g. NVFLARE's simulator losing a client on an overloaded machine: the pair is not comparable
        print(f"crashed: {', '.join(crashed)}; the comparison is not meaningful, run the bench again")
    saved = 1.0 - compute[pruned] / compute[plain] if compute[plain] else 0.0
    hopeless = sum(h for *_x, h in candidates)
    ceiling = hopeless / len(candidates) * (1 - prune.DEFAULT_MIN_FRACTION)
    tallies, replayed, _live = prune_replay.replay_campaigns([plain], prune_replay.SETTINGS[:1])
    replay_false = next(iter(tallies.values())).false_prunes
    same_best = (best[plain].name, best[plain].score) == (best[pruned].name, best[pruned].score)
    pruned_names = [name for name, *_r in candidates if prune.is_pruned(by_name[pruned][name])]
    print(
        f"candidate compute: without {compute[plain]:.1f} s, with {compute[pruned]:.1f} s: {100 * saved:.1f} % less "
        f"(bar >= {100 * MIN_SAVED:.0f} %; ceiling with {hopeless} hopeless of {len(candidates)} pruned at half: "
        f"{100 * ceiling:.1f} % of the rounds)"
    )
    print(f"best: without {best[plain].name} {best[plain].score}, with {best[pruned].name} {best[pruned].score}")
    print(
        f"pruned live: {', '.join(pruned_names) or 'none'}; false prunes live: {len(live_false)}, in the replay of "
        f"the unpruned campaign ({replayed} candidates): {len(replay_false)}"
    )
    if args.quick:
        ok = same_best and set(pruned_names) == {name for name, _a, h in candidates if h}
        print(f"RESULT: {'PASS' if ok else 'FAIL'} (quick smoke run: hopeless ones pruned, same best; no timing bar)")
        return 0 if ok else 1
    ok = saved >= MIN_SAVED and same_best and not live_false and not replay_false and not crashed
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

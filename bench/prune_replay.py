"""Replay the pruning rule over finished campaigns: compute saved and false prunes, per setting of the rule.

Usage: python bench/prune_replay.py [--root DIR ...] [--no-demo] [--no-suite] [--quick]

The corpus: every campaign (a folder holding `.nvflare/autofl/campaign.json`) under the roots given, under the
test suite's temp folders (`<tmp>/pytest-of-<user>/`, what the last suite runs left; `--no-suite` skips them)
and the demo campaign (`examples/demo.py`, run once into a temp folder; `--no-demo` or `--quick` skips it).

For every candidate that ran to its end (a keep or a scored discard with its run folder), in ledger order, the
rule (`campaign/prune.decide`) is asked after each of its rounds, against the best at that point of the ledger
(the running best before the row), that best's replicates recorded before the row and the noise band measured by
then (`gains.band` of the best's replicates, else of the latest retained row with replicates, as
`runner/noise.latest_measured` gives a live judge; none measured: the conservative margin), exactly as a live
trial's judge would have been. The
first round at which it says prune is where the trial would have stopped: the rounds after it are saved, and
the seconds saved are estimated as the trial's runtime times the share of its rounds left.

A false prune is a pruned candidate that was kept, or whose final score came within the noise band of the best
it was compared with (the measured band, never less than the spread typical for the metric,
`gains.typical_spread`: identical reruns measure a band of 0, which would make only a tie a false prune). Candidates pruned live (no final score) are counted but cannot be replayed.

Prints one row per setting (the default first) and `RESULT: PASS|FAIL`; the bar: the default setting has 0 false
prunes on the corpus. Exits 1 when it has any. `replay_campaigns(paths, rules)` is what bench/prune_campaign.py
calls on its own campaigns.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from autofl_core.campaign import compare, gains, guard, ledger, prune  # noqa: E402
from autofl_core.campaign import vocabulary as v  # noqa: E402
from autofl_core.runner.store import contract  # noqa: E402
from autofl_core.trial import progress  # noqa: E402

DEMO = REPO / "examples" / "demo.py"
MARKER = Path(".nvflare", "autofl", "campaign.json")
MAX_DEPTH = 7
SETTINGS = (
    ("default (k=2, half, 3x band / 10%)", prune.Rule()),
    ("k=1", prune.Rule(k=1)),
    ("k=3", prune.Rule(k=3)),
    ("min fraction 0.3", prune.Rule(min_fraction=0.3)),
    ("conservative 5%", prune.Rule(conservative_relative=0.05)),
    ("2x band, floor 1%", prune.Rule(noise_factor=2.0, min_relative=0.01)),
)


@dataclass
class Tally:
    """What one setting did on the corpus."""

    replayed: int = 0
    pruned: int = 0
    false_prunes: list[str] = field(default_factory=list)
    rounds: int = 0
    rounds_saved: int = 0
    seconds: float = 0.0
    seconds_saved: float = 0.0


@dataclass
class Candidate:
    """A finished candidate with everything the rule sees."""

    where: str
    status: str
    score: float
    runtime: float
    curve: dict[int, float]
    total: int
    best_curve: dict[int, float]
    replicates: list[dict[int, float]]
    best_score: float
    band: float | None
    tolerance: float
    mode: str


def find_campaigns(roots: list[Path]) -> list[Path]:
    """Folders holding a campaign under `roots` (bounded walk, symlinks never followed)."""
    found = []
    for root in roots:
        for folder, dirs, _files in os.walk(root, followlinks=False):
            depth = len(Path(folder).relative_to(root).parts)
            if (Path(folder) / MARKER).is_file():
                found.append(Path(folder))
                dirs[:] = []
                continue
            dirs[:] = (
                sorted(d for d in dirs if d not in (".nvflare", "autofl_runs", "__pycache__"))
                if depth < MAX_DEPTH
                else []
            )
    return sorted(set(found))


def candidates_of(workspace: Path) -> tuple[list[Candidate], int]:
    """The replayable candidates of one campaign, and how many were pruned live (no final score)."""
    try:
        meta = json.loads((workspace / MARKER).read_text(encoding="utf-8"))
        settings = meta["settings"]
        rows = ledger.read_rows(workspace / settings.get("results", "results.tsv"))
        config = contract.read(workspace / settings.get("autofl_yaml", "autofl.yaml"))
        mode, metric = settings["mode"], settings.get("metric")
        compare.check_mode(mode)
    except Exception:  # a damaged, half-written or deliberately invalid campaign of a test is not part of the corpus
        return [], 0
    order = list((config.get("objective") or {}).get("metric_extraction_order") or []) or [metric]
    total = contract.num_rounds(config) or 0
    tracker, best, replicates, retained, found, pruned_live = v.RunningBest(mode), None, {}, [], [], 0
    for index, row in enumerate(rows):
        if row.status == v.REPLICATE and row.score is not None:
            replicates.setdefault(row.base_candidate, []).append(row)
        if row.status in v.SCORED_ATTEMPTS and best is not None:
            if row.score is None:
                pruned_live += prune.is_pruned(row)
            elif row.artifacts and total:
                noise = measured_noise(best, retained, replicates, mode)
                found.append(
                    _candidate(workspace, row, best, replicates.get(best.name, []), noise, mode, order[0], total)
                )
        if row.status in v.RETAINED and row.score is not None:
            retained.append((row.score, index, row.name))
        if tracker.offer(index, row):
            best = row
    return [item for item in found if item.curve and item.best_curve], pruned_live


def measured_noise(best, retained: list, replicates: dict, mode: str) -> dict | None:
    """The noise a live judge would have used at this point of the ledger (`runner/noise.latest_measured`): the
    best's own spread when it has replicates, else that of the latest retained row with replicates."""
    settings = guard.GuardSettings(mode=mode)
    scores = {name: [r.score for r in rows] for name, rows in replicates.items()}
    own = guard.noise_estimate((best.score, None, best.name), scores.get(best.name, []), settings)
    return guard.latest_measured(own, retained, scores, settings)


def _candidate(workspace, row, best, replicate_rows, noise, mode, metric, total) -> Candidate:
    def curve(of) -> dict[int, float]:
        return progress.read_curve(workspace / of.artifacts / "simulation", metric) if of.artifacts else {}

    band = gains.band(noise)
    tolerance = max(band or 0.0, gains.typical_spread(metric, best.score) or 0.0)  # never below the typical
    return Candidate(
        where=f"{workspace}:{row.name}",
        status=row.status,
        score=row.score,
        runtime=float(row.runtime_seconds or 0.0),
        curve=curve(row),
        total=total,
        best_curve=curve(best),
        replicates=[c for c in (curve(r) for r in replicate_rows) if c],
        best_score=best.score,
        band=band,
        tolerance=tolerance,
        mode=mode,
    )


def replay(candidate: Candidate, rule: prune.Rule) -> int | None:
    """The 1-based round at which the rule would have stopped `candidate`, or None."""
    seen: dict[int, float] = {}
    for index in sorted(candidate.curve):
        seen[index] = candidate.curve[index]
        decision = prune.decide(
            seen,
            candidate.best_curve,
            candidate.replicates,
            mode=candidate.mode,
            band=candidate.band,
            total_rounds=candidate.total,
            rule=rule,
        )
        if decision.prune:
            return decision.round
    return None


def is_false_prune(candidate: Candidate) -> bool:
    """Kept, or finished within the noise band (or the typical spread) of the best it was compared with."""
    if candidate.status == v.KEEP:
        return True
    gain = compare.improvement(candidate.score, candidate.best_score, candidate.mode)
    return gain is not None and gain >= -candidate.tolerance


def replay_campaigns(workspaces: list[Path], rules=SETTINGS) -> tuple[dict[str, Tally], int, int]:
    """Per setting label: its Tally over the candidates of `workspaces`; also (candidates, pruned live)."""
    corpus, live = [], 0
    for workspace in workspaces:
        found, pruned_live = candidates_of(workspace)
        corpus.extend(found)
        live += pruned_live
    tallies = {}
    for label, rule in rules:
        tally = Tally()
        for candidate in corpus:
            rounds = max(candidate.total, len(candidate.curve))
            tally.replayed += 1
            tally.rounds += rounds
            tally.seconds += candidate.runtime
            stopped = replay(candidate, rule)
            if stopped is None:
                continue
            tally.pruned += 1
            tally.rounds_saved += rounds - stopped
            tally.seconds_saved += candidate.runtime * (rounds - stopped) / rounds
            if is_false_prune(candidate):
                tally.false_prunes.append(candidate.where)
        tallies[label] = tally
    return tallies, len(corpus), live


def table(tallies: dict[str, Tally]) -> str:
    lines = [f"{'setting':<36} {'replayed':>8} {'pruned':>6} {'false':>5} {'rounds saved':>14} {'seconds saved':>15}"]
    for label, t in tallies.items():
        share = f"{t.rounds_saved}/{t.rounds}" if t.rounds else "0/0"
        seconds = f"{t.seconds_saved:.0f}/{t.seconds:.0f} s"
        pct = f" {100 * t.seconds_saved / t.seconds:4.1f}%" if t.seconds else ""
        lines.append(
            f"{label:<36} {t.replayed:>8} {t.pruned:>6} {len(t.false_prunes):>5} {share:>14} {seconds:>15}{pct}"
        )
    return "\n".join(lines)


def run_demo(folder: Path, python: str) -> Path | None:
    """examples/demo.py into `folder`; its campaign workspace, or None when the demo failed."""
    done = subprocess.run([python, str(DEMO), "--output", str(folder)], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        print(f"demo failed (exit {done.returncode}); replaying without it:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return folder / "workspace"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", action="append", default=[], help="a folder to search for finished campaigns")
    parser.add_argument("--no-demo", action="store_true", help="do not run the demo campaign")
    parser.add_argument("--no-suite", action="store_true", help="skip the test suite's temp folders")
    parser.add_argument("--quick", action="store_true", help="no demo (smoke run)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    roots = [Path(root).resolve() for root in args.root]
    if not args.no_suite:
        suite = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
        roots += [suite] if suite.is_dir() else []
    with tempfile.TemporaryDirectory(prefix="prune-replay-") as temp:
        if not (args.no_demo or args.quick):
            demo = run_demo(Path(temp) / "demo", args.python)
            roots += [demo] if demo else []
        campaigns = find_campaigns([root for root in roots if root.is_dir()])
        tallies, count, live = replay_campaigns(campaigns)
    print(f"corpus: {len(campaigns)} campaign(s), {count} finished candidate(s) replayed, {live} pruned live")
    print(table(tallies))
    default = next(iter(tallies.values()))
    for where in default.false_prunes[:10]:
        print(f"false prune (default): {where}")
    ok = not default.false_prunes
    print(f"RESULT: {'PASS' if ok else 'FAIL'} (bar: 0 false prunes with the default setting)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

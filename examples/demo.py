"""`make demo`: a real, bounded Auto-FL campaign on examples/hello-numpy, then a diagnosis of its crashed candidate.

Usage: python examples/demo.py [--output DIR]   (default: demo_out/campaign/ in the repository)

Everything goes through the skills' scripts exactly as an agent would call them:
1. copy examples/hello-numpy into DIR/workspace and `initialize --max-candidates 3 --base-args "--seed 0"`
   (real baseline simulation; the seed makes every site shuffle its data per round, so reruns differ);
2. prepare three independent candidates from the baseline: the first seed of `suggest` (argument-only), a
   source edit (per-site feature standardization in client.py) and one with a shape bug in client.py;
3. `evaluate --manifest A --manifest B --manifest C`: the three run as one batch of concurrent sealed trials and
   are decided in that order (the seed is kept, feature-scaling is kept over it, drop-bias crashes); the cap is
   used up;
4. `replicate --count 2 --parallel 2`: rerun the best with seeds 1 and 2, side by side, to measure the run-to-run
   spread (not counted; allowed after the cap);
5. `report`: the final report (the state allows it now);
6. run nvflare-diagnose-job's diagnose_job.py on the crashed candidate's run.log and simulation folder;
7. frozen evaluation, a second small campaign in DIR/frozen_workspace, run beside steps 1-6 (it shares nothing
   with them, and a simulation mostly waits on NVFLARE: side by side the two take about the time of the longer):
   `initialize --evaluator evaluate.py --max-candidates 1` (the runner measures every score itself with
   examples/hello-numpy/evaluate.py on the global model the server persisted, per site, sealed), then a test
   candidate whose client reports its accuracy plus 0.2: the runner measures the same model as the baseline's, so
   it is not kept, and says metric_divergence.
Prints a short summary (baseline, the batch and its decisions, best, improvement and its noise verdict, best
command, the crash and its diagnosis) and the absolute paths of ledger, state, plot, report and diagnosis.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "hello-numpy"
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
DIAGNOSE = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
SCALING_EDIT = (
    "    return z * FEATURE_SCALES, y\n",
    "    x = z * FEATURE_SCALES\n"
    "    # candidate: standardize each feature on the site (the features come in different units)\n"
    "    x[:, :-1] = (x[:, :-1] - x[:, :-1].mean(axis=0)) / x[:, :-1].std(axis=0)\n"
    "    return x, y\n",
)
INFLATE_EDIT = (
    'metrics={"accuracy": acc}',
    'metrics={"accuracy": min(1.0, acc + 0.2)}',  # test candidate: report a better number than the model earns
)
CRASH_EDIT = (
    '        w = np.asarray(model.params["numpy_key"], dtype=float)\n',
    '        w = np.asarray(model.params["numpy_key"], dtype=float)[:-1]  # candidate: drop the bias weight\n',
)


def runner(job: Path, action: str, *args: str, ok=(0,)) -> dict:
    """Run one runner action like an agent would; return its JSON envelope."""
    print(f"[demo] {job.parent.name}: run_job_campaign.py {action} {' '.join(args)}", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(RUNNER), action, str(job), *args], stdout=subprocess.PIPE, text=True)
    if done.returncode not in ok:
        sys.exit(f"demo failed: {action} exited {done.returncode} (see the message above)")
    return json.loads(done.stdout)


def edit(source_dir: Path, rel: str, change: tuple[str, str]) -> None:
    """The agent's part: edit the prepared candidate copy (never the live job)."""
    path = source_dir / rel
    text = path.read_text(encoding="utf-8")
    if change[0] not in text:
        sys.exit(f"demo failed: {rel} no longer contains the line the demo edits; update examples/demo.py")
    path.write_text(text.replace(change[0], change[1]), encoding="utf-8")


def prepare(job: Path, name: str, hypothesis: str, family: str, *, change=None, run_args=()) -> str:
    """Prepare one candidate from the current best (with its run args, or the agent's edit); its manifest path."""
    extra = ["--run-args", " ".join(run_args)] if run_args else []
    prepared = runner(job, "prepare", "--name", name, "--hypothesis", hypothesis, "--family", family, *extra)
    if change:
        edit(Path(prepared["candidate_source"]), "client.py", change)
    return prepared["candidate_manifest"]


def campaign(workspace: Path) -> tuple[dict, dict, str]:
    """The campaign; returns the final report's envelope, the batch's envelope and the crashed candidate."""
    job = workspace / "job.py"
    runner(job, "initialize", "--max-candidates", "3", "--base-args", "--seed 0")
    seed = runner(job, "suggest", "--limit", "3")["suggestions"][0]
    crashed = "drop-bias"
    batch = [
        prepare(job, seed["name"], seed["hypothesis"], "tuning", run_args=seed["run_args"]),
        prepare(
            job,
            "feature-scaling",
            "Standardize features on each site: they come in different units, so plain "
            "gradient descent converges slowly within the fixed 3 rounds.",
            "preprocessing",
            change=SCALING_EDIT,
        ),
        prepare(
            job,
            crashed,
            "Drop the bias weight to simplify the model (expected to break the shapes).",
            "model",
            change=CRASH_EDIT,
        ),
    ]
    evaluated = runner(job, "evaluate", *[arg for path in batch for arg in ("--manifest", path)], ok=(1,))
    runner(job, "replicate", "--count", "2", "--parallel", "2")
    return runner(job, "report"), evaluated, crashed


def frozen_campaign(workspace: Path) -> tuple[dict, dict]:
    """A campaign whose score the runner measures with the job's frozen evaluator; a candidate that inflates its
    reported metric. Returns the initialize and evaluate envelopes."""
    job = workspace / "job.py"
    started = runner(job, "initialize", "--evaluator", "evaluate.py", "--max-candidates", "1")
    prepare(
        job,
        "inflate-metric",
        "Test candidate: report accuracy + 0.2 instead of what the model earns (the frozen evaluator must see it).",
        "metric",
        change=INFLATE_EDIT,
    )
    return started, runner(job, "evaluate")


def frozen_lines(started: dict, evaluated: dict) -> list[str]:
    divergence = evaluated.get("metric_divergence")
    said = (
        f"metric_divergence (reported beats measured by {divergence['gap']:.6f}, baseline gap "
        f"{divergence['baseline_gap']:.6f} + band {divergence['band']:.6f})"
        if divergence
        else "no divergence"
    )
    return [
        f"  frozen evaluation ({started['score_provenance']}; second campaign, evaluate.py):",
        f"    baseline:       measured {started['baseline_score']:.6f} | job-reported {started['reported_score']:.6f}",
        f"    inflate-metric: measured {evaluated['evaluation']['score']:.6f} | job-reported "
        f"{evaluated['reported_score']:.6f} -> {evaluated['candidate_status']}; {said}",
    ]


def diagnose(workspace: Path, out: Path, crashed: str) -> dict:
    run_dir = workspace / "autofl_runs" / crashed
    evidence = [str(run_dir / "run.log"), str(run_dir / "simulation")]
    for fmt, name in (("json", "diagnosis.json"), ("markdown", "diagnosis.md")):
        done = subprocess.run(
            [sys.executable, str(DIAGNOSE), *evidence, "--format", fmt], capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            sys.exit(f"demo failed: diagnose_job.py exited {done.returncode}: {done.stderr.strip()}")
        (out / name).write_text(done.stdout, encoding="utf-8")
    return json.loads((out / "diagnosis.json").read_text(encoding="utf-8"))


def summary(
    final: dict, evaluated: dict, report: dict, crashed: str, diagnosis: dict, out: Path, seconds: float, frozen=()
):
    crash = next(e for e in report["failures"] if e["name"] == crashed)
    lines = [
        f"Auto-FL demo campaign on examples/hello-numpy ({seconds:.0f} s, real NVFLARE 2.9 simulations)",
        f"  baseline:    {report['baseline']['score']:.6f}",
        f"  batch:       {batch_line(evaluated)}",
        f"  best:        {report['best']['score']:.6f} ({report['best']['name']})",
        f"  improvement: {final['improvement']:+.6f} ({report['objective']['metric']}, {report['objective']['mode']})",
        f"  noise:       {noise_line(report)}",
        f"  best command: {report['best_command']}",
        *[f"  curve:       {line}" for line in report["curves_summary"]],
        f"  sites:       {sites_line(report)}",
        f"  crashed:     {crashed}: {crash['notes']}",
        f"  diagnosis:   {diagnosis['matched_pattern']} ({diagnosis['confidence']} confidence, "
        f"{diagnosis['recovery_category']}): {diagnosis['next_action']}",
        f"  state:       {final['reason']}; next action {final['next_action']}; final answer allowed: "
        f"{final['final_response_allowed']}",
        *frozen,
        "Artifacts:",
        f"  ledger:    {final['results']}",
        f"  state:     {final['state']}",
        f"  plot:      {final['progress'] or final['unavailable']['progress']}",
        f"  report:    {final['report']}",
        f"  diagnosis: {out / 'diagnosis.md'}",
    ]
    return "\n".join(lines)


def sites_line(report: dict) -> str:
    """Each site's final-round value for the baseline and the best (from their round records)."""
    parts = []
    for entry in report["leaderboard"]:
        if "sites" in entry:
            values = ", ".join(f"{site} {value:.4f}" for site, value in entry["sites"].items()) or "none recorded"
            parts.append(f"{entry['role']} {entry['name']}: {values}")
    return "; ".join(parts) or "none recorded"


def batch_line(evaluated: dict) -> str:
    """Which candidates ran together, how many at a time, and each one's decision in the order given."""
    entries = evaluated["batch"]
    decisions = ", ".join(f"{e['candidate_id']} {e['candidate_status']}" for e in entries)
    return f"{len(entries)} candidates ran together ({evaluated['parallel']} at a time): {decisions}"


def noise_line(report: dict) -> str:
    """The measured spread of the best and whether the gain is beyond it."""
    noise = report["noise"]
    estimate = noise["estimate"]
    if not estimate or estimate["stdev"] is None:
        return "not measured (no replicates of the best)"
    verdict = report["selected"]["noise"] or "not judged"
    return (
        f"stdev {estimate['stdev']:.6f} over {estimate['replicates'] + 1} runs of {estimate['of']} "
        f"({'seeds 1-' + str(estimate['replicates']) + ' and its own' if noise['seeded'] else 'identical reruns'}); "
        f"the gain is {verdict} (band +-{noise['band']:.6f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(REPO / "demo_out" / "campaign"), help="folder for every demo artifact")
    args = parser.parse_args(argv)
    out = Path(args.output).resolve()
    workspace = out / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    frozen_workspace = out / "frozen_workspace"
    shutil.rmtree(frozen_workspace, ignore_errors=True)
    shutil.copytree(EXAMPLE, frozen_workspace, ignore=shutil.ignore_patterns("__pycache__"))
    started = time.monotonic()
    with ThreadPoolExecutor(1) as beside:
        frozen_run = beside.submit(frozen_campaign, frozen_workspace)
        final, evaluated, crashed = campaign(workspace)
        diagnosis = diagnose(workspace, out, crashed)
        frozen = frozen_lines(*frozen_run.result())  # its failure (SystemExit) ends the demo here
    report = json.loads(Path(final["report"]).with_suffix(".json").read_text(encoding="utf-8"))
    print(summary(final, evaluated, report, crashed, diagnosis, out, time.monotonic() - started, frozen))
    return 0


if __name__ == "__main__":
    sys.exit(main())

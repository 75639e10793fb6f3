"""P9 on a PyTorch recipe job: a real campaign scored by its frozen evaluator (runs only where torch is installed).

Usage: python bench/frozen_eval_torch.py [--python PY] [--quick] [--keep DIR]

The job is bench/fixtures/pt-fedavg (NVFLARE 2.9's PyTorch `FedAvgRecipe`, a tiny MLP on synthetic, seeded,
label-skewed data of three sites; each site validates the global model it receives on its own held-out share and
reports that accuracy) with its frozen evaluator `evaluate.py` (the skill's PyTorch template). On a copy it runs,
through run_job_campaign.py: `initialize --evaluator evaluate.py` (the baseline), an honest candidate
(`--lr 0.05`) and a candidate that inflates its reported metric (its client reports the accuracy of its locally
trained model on its own training data). Printed: where the recipe persisted the final global model, measured
vs reported score and keep/discard of every run, and the frozen evaluation step per trial (`measure_seconds` of
`autofl_runs/<trial>/evaluation.json`: hashes, model lookup and the sealed evaluator processes of all sites,
which run concurrently) with the CPU the evaluator processes used.
PASS when: every run is scored from `server/simulate_job/app_server/FL_global_model.pt` by the evaluator
(`metric_source` measured), the honest candidate's score is its measured value, and the inflating candidate is
not kept although its reported value beats every other run's, with `metric_divergence` naming both numbers.
The P9 bar (<= 1 s) is judged on the NumPy example job (bench/frozen_eval_overhead.py); the PyTorch figure is
printed beside it (each evaluator process imports torch, a few seconds on a busy host).
`--python` is the interpreter of the runner, the jobs and the evaluator (default: this one). Without torch in it
the script prints one line, `SKIP (torch not installed)`, and exits 0; bench/run_all.py lists it as SKIP.
`--quick` is the same run (there is no stand-in for torch).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
JOB = REPO / "bench" / "fixtures" / "pt-fedavg"
MODEL_FILE = "server/simulate_job/app_server/FL_global_model.pt"
MAX_MEASURE_NUMPY = 1.0  # P9's bar, judged on examples/hello-numpy by frozen_eval_overhead.py
HONEST = ("lr-0.05", "--lr 0.05")
INFLATE = "inflate"
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
ENV["AUTOFL_PLOT_RENDERER"] = "text"  # the progress plot is not what is measured here
REPORTED_LINE = 'metrics={"accuracy": val_accuracy},'
INFLATED_LINE = 'metrics={"accuracy": accuracy(net, x_train, y_train)},'  # the trained local model, on train data


def has_torch(python: str) -> bool:
    done = subprocess.run([python, "-c", "import torch"], capture_output=True, env=ENV)
    return done.returncode == 0


def runner(python: str, job: Path, action: str, *args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [python, str(RUNNER), action, str(job), *args], capture_output=True, text=True, env=ENV, cwd=job.parent
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{action} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout), wall


def run_record(workspace: Path, name: str) -> dict:
    return json.loads((workspace / "autofl_runs" / name / "evaluation.json").read_text())


def ledger(workspace: Path) -> dict[str, dict]:
    lines = (workspace / "results.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:] if line.strip()]
    return {row["name"]: row for row in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--quick", action="store_true", help="accepted for bench/run_all.py; the same run")
    parser.add_argument("--keep", type=Path, help="copy the campaign folder here afterwards (to inspect it)")
    args = parser.parse_args(argv)
    if not has_torch(args.python):
        print(f"frozen_eval_torch: torch is not importable by {args.python}; SKIP (torch not installed)")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-p9-torch-") as scratch_text:
        workspace = Path(scratch_text) / "pt-fedavg"
        shutil.copytree(JOB, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        job = workspace / "job.py"
        walls, envelopes = {}, {}
        envelopes["baseline"], walls["baseline"] = runner(
            args.python, job, "initialize", "--evaluator", "evaluate.py", "--max-candidates", "2"
        )
        runner(args.python, job, "prepare", "--name", HONEST[0], "--hypothesis", "a larger learning rate")
        envelopes[HONEST[0]], walls[HONEST[0]] = runner(args.python, job, "evaluate", "--run-args", HONEST[1])
        runner(args.python, job, "prepare", "--name", INFLATE, "--hypothesis", "report a better number")
        client = workspace / ".nvflare" / "autofl" / "candidates" / INFLATE / "source" / "client.py"
        text = client.read_text()
        if REPORTED_LINE not in text:
            raise SystemExit(f"the fixture's client.py no longer holds {REPORTED_LINE!r}")
        client.write_text(text.replace(REPORTED_LINE, INFLATED_LINE))
        envelopes[INFLATE], walls[INFLATE] = runner(args.python, job, "evaluate")
        names = ["baseline", HONEST[0], INFLATE]
        records = {name: run_record(workspace, name) for name in names}
        rows = ledger(workspace)
        report = (workspace / "autofl_report.md").read_text()
        if args.keep:
            shutil.copytree(workspace, args.keep, symlinks=True)
    print(f"PyTorch FedAvgRecipe job: {JOB.relative_to(REPO)} (3 sites, 3 rounds), python {args.python}")
    print(
        "run        status   measured  reported  metric_source              wall_s  measure_s  evaluator_cpu_s  model"
    )
    ok = True
    for name in names:
        record, row = records[name], rows[name]
        status = row["status"]
        cpu = sum(site["cpu_seconds"] for site in record["sites"])
        model = record["model"].split("/simulation/", 1)[-1]
        print(
            f"{name:<10} {status:<8} {float(row['score']):8.4f}  {record['reported_score']:8.4f}  "
            f"{row['metric_source']:<25} {walls[name]:6.1f}  {record['measure_seconds']:9.3f}  {cpu:15.3f}  {model}"
        )
        ok &= model == MODEL_FILE and row["metric_source"] == "measured:frozen_evaluator"
        ok &= record["model_format"] == "pytorch" and abs(float(row["score"]) - record["score"]) < 1e-4
    for name in names:
        sites = ", ".join(f"{s['site']}={s['value']:.3f} (n={s['n']})" for s in records[name]["sites"])
        print(f"  {name}: per site {sites}")
    inflate, baseline = records[INFLATE], records["baseline"]
    divergence = envelopes[INFLATE].get("metric_divergence") or {}
    inflated_beats_all = all(inflate["reported_score"] > records[n]["reported_score"] for n in names[:2])
    ok &= rows[INFLATE]["status"] != "keep" and inflated_beats_all and bool(divergence)
    ok &= "metric_divergence: reported" in report
    print(
        f"inflating candidate: reported {inflate['reported_score']:.4f} (baseline reported "
        f"{baseline['reported_score']:.4f}), measured {inflate['score']:.4f}: status {rows[INFLATE]['status']}; "
        f"metric_divergence {json.dumps(divergence, sort_keys=True)}"
    )
    measure = statistics.median(records[n]["measure_seconds"] for n in names)
    cpu = statistics.median(sum(s["cpu_seconds"] for s in records[n]["sites"]) for n in names)
    print(
        f"P9 (PyTorch): median frozen evaluation step {measure:.3f} s per trial, its evaluator processes used "
        f"{cpu:.3f} s of CPU (3 sites, each importing torch); the {MAX_MEASURE_NUMPY} s bar is judged on "
        "examples/hello-numpy (bench/frozen_eval_overhead.py), not here"
    )
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

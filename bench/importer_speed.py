"""P5 (importer part): static import of a job.py must take <= 0.15 s.

Usage: python bench/importer_speed.py [--quick]

Times `import_job` in-process on every example job and every NVFLARE recipe fixture
(tests/fixtures/jobs/recipes/*, one per recipe class; median of 20 runs; the bar applies here), and the
`job_importer.py` CLI as a subprocess on the examples (median of 5; interpreter start-up included, printed for
reference). Prints a table and PASS/FAIL; exit 1 on a missed bar. `--quick` runs fewer repeats and only reports.
The `prepare` and `suggest` parts of P5 belong to the campaign runner and are not measured yet.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from autofl_core.importer import api  # noqa: E402

BAR_SECONDS = 0.15


def median_seconds(action, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats; report only")
    args = parser.parse_args(argv)
    in_process_repeats, cli_repeats = (3, 1) if args.quick else (20, 5)
    examples = sorted((REPO / "examples").glob("*/job.py"))
    recipes = sorted((REPO / "tests" / "fixtures" / "jobs" / "recipes").glob("*/job.py"))
    print(f"{'job':<28} {'import_job':>11} {'CLI wall':>9}  verdict (bar {BAR_SECONDS:.2f} s in-process)")
    failed = False
    for job in examples + recipes:
        in_process = median_seconds(lambda job=job: api.import_job(job), in_process_repeats)
        cli_text = "-"
        if job in examples:
            cli = median_seconds(
                lambda job=job: subprocess.run(
                    [sys.executable, str(SCRIPTS / "job_importer.py"), str(job)], capture_output=True, check=False
                ),
                cli_repeats,
            )
            cli_text = f"{cli:.3f}s"
        ok = in_process <= BAR_SECONDS
        failed |= not ok
        name = job.parent.name if job in examples else f"recipes/{job.parent.name}"
        print(f"{name:<28} {in_process:>10.4f}s {cli_text:>9}  {'PASS' if ok else 'FAIL'}")
    if args.quick:
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

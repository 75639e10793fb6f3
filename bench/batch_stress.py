"""R11: batches of two real NVFLARE simulations evaluated again and again under CPU, memory and IO pressure.

Usage: python bench/batch_stress.py [--batches N] [--minutes M] [--pressure cpu,memory,io,churn|none] [--python PY]
                                    [--no-progress SECONDS]

One hello-numpy campaign is initialized (uncapped; the baseline is not counted). Then, while the pressure runs,
each batch prepares two argument-only candidates and evaluates them together (two `--manifest`s: two concurrent
sealed trials, as tests/autofl/test_runner_real.py::test_a_batch_of_two_real_simulations_runs_concurrently does).
A batch *stalled* when a trial of it did not finish on its own: a crash whose reason is a watchdog's (no progress,
simulator stall, timeout) or a runner exit other than 0 or 1. A stall is *silent* when only a timeout ended it
(minutes of nothing), *named* when the runner recognized it at once (`simulator stall: ...`). Each stalled trial's reason and the last lines of its
run.log are printed. The pressure is the bench's own and bounded: `cpu` = two busy processes per core, `memory` =
one process holding a quarter of physical memory (touched every second), `io` = a writer of 256 MiB files with
fsync in a temp folder, `churn` = one loop per core starting short-lived interpreters (as a test suite does); all are ended (by pid) when the bench ends, and each ends itself after `--minutes` + 5.
Prints one line per batch, then `batches run: N, stalls seen: K (S ended only by a timeout, ...)` and
`RESULT: PASS|FAIL` (exit 1 on a silent stall: R11 allows a stall only as a crash named at once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "skills" / "nvflare-autofl" / "scripts" / "run_job_campaign.py"
EXAMPLE = REPO / "examples" / "hello-numpy"
WATCHDOG_WORDS = ("no progress", "simulator stall", "timeout")
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
SPIN = "import time, sys\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"
HOLD = (
    "import time, sys\nend = time.monotonic() + float(sys.argv[1])\nblock = bytearray(int(sys.argv[2]))\n"
    "while time.monotonic() < end:\n    for i in range(0, len(block), 4096 * 64):\n        block[i] = (block[i] + 1) % 256\n"
    "    time.sleep(1)\n"
)
CHURN = (  # a test suite's pattern: short-lived interpreters started one after another (imports, exits)
    "import subprocess, sys, time\nend = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    subprocess.run([sys.executable, '-c', 'import json, email, http.client, decimal'])\n"
)
WRITE = (
    "import os, sys, time\nend = time.monotonic() + float(sys.argv[1])\nfolder = sys.argv[2]\nchunk = b'x' * (1 << 20)\n"
    "while time.monotonic() < end:\n    path = os.path.join(folder, 'io.bin')\n    with open(path, 'wb') as f:\n"
    "        for _ in range(256):\n            f.write(chunk)\n        f.flush()\n        os.fsync(f.fileno())\n"
    "    os.remove(path)\n"
)


def pressure(kinds: list[str], seconds: float, scratch: Path) -> list[subprocess.Popen]:
    procs = []
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    if "cpu" in kinds:
        for _ in range(2 * (os.cpu_count() or 1)):
            procs.append(subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)], **quiet))
    if "memory" in kinds:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        procs.append(subprocess.Popen([sys.executable, "-c", HOLD, str(seconds), str(total // 4)], **quiet))
    if "churn" in kinds:
        for _ in range(os.cpu_count() or 1):
            procs.append(subprocess.Popen([sys.executable, "-c", CHURN, str(seconds)], **quiet))
    if "io" in kinds:
        procs.append(subprocess.Popen([sys.executable, "-c", WRITE, str(seconds), str(scratch)], **quiet))
    return procs


def end(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run(python: str, job: Path, *args: str, timeout: float = 1800) -> tuple[int, dict | None, str]:
    done = subprocess.run(
        [python, str(RUNNER), args[0], str(job), *args[1:]], capture_output=True, text=True, env=ENV, timeout=timeout
    )
    try:
        envelope = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        envelope = None
    return done.returncode, envelope, done.stderr


def tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no run.log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--minutes", type=float, default=20.0, help="stop starting batches after this")
    parser.add_argument("--pressure", default="cpu,memory,io")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--no-progress", type=float, default=240.0, help="the campaign's no-progress timeout")
    options = parser.parse_args(argv)
    kinds = [] if options.pressure == "none" else options.pressure.split(",")
    base = Path(tempfile.mkdtemp(prefix="autofl-stress-"))
    procs: list[subprocess.Popen] = []
    stalls, silent, ran = 0, 0, 0
    try:
        workspace = base / "hello-numpy"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        job = workspace / "job.py"
        code, _, err = run(
            options.python, job, "initialize", "--uncapped", "--simulator-no-progress-timeout", str(options.no_progress)
        )
        if code != 0:
            print(f"initialize failed ({code}): {err.strip()[-400:]}")
            return 1
        (base / "io").mkdir()
        procs = pressure(kinds, options.minutes * 60 + 300, base / "io")
        print(f"pressure: {', '.join(kinds) or 'none'} ({len(procs)} processes); cores: {os.cpu_count()}")
        deadline = time.monotonic() + options.minutes * 60
        for index in range(options.batches):
            if time.monotonic() > deadline:
                break
            manifests = []
            names = [f"b{index:02d}-{side}" for side in ("a", "b")]
            rates = (f"{0.02 + 0.0001 * index:.4f}", f"{0.1 + 0.0001 * index:.4f}")  # never a configuration run before
            for name, lr in zip(names, rates, strict=True):
                code, envelope, err = run(
                    options.python, job, "prepare", "--name", name, "--hypothesis", "stress", "--run-args", f"--lr {lr}"
                )
                if code != 0 or envelope is None:
                    print(f"prepare {name} failed ({code}): {err.strip()[-300:]}")
                    return 1
                manifests += ["--manifest", envelope["candidate_manifest"]]
            started = time.monotonic()
            code, envelope, err = run(options.python, job, "evaluate", *manifests)
            wall = time.monotonic() - started
            ran += 1
            entries = (envelope or {}).get("batch") or []
            stalled = [e for e in entries if any(w in str(e.get("reason") or "") for w in WATCHDOG_WORDS)]
            silent += sum(1 for e in stalled if not str(e.get("reason")).startswith("simulator stall"))
            shown = ", ".join(f"{e['candidate_id']}={e['candidate_status']}" for e in entries) or err.strip()[-200:]
            print(f"batch {index + 1}: exit {code}, {wall:.1f} s, {shown}", flush=True)
            if not entries:
                print(f"the batch did not run ({code}): {err.strip()[-300:]}")
                return 1
            if stalled or code not in (0, 1):
                stalls += 1
                for entry in stalled:
                    print(f"  STALL {entry['candidate_id']}: {entry['reason']}")
                    log = tail(workspace / "autofl_runs" / entry["candidate_id"] / "run.log")
                    print("  " + log.replace("\n", "\n  "), flush=True)
        print(
            f"batches run: {ran}, stalls seen: {stalls} ({silent} ended only by a timeout, {stalls - silent} named at once)"
        )
        print(f"RESULT: {'PASS' if silent == 0 and ran else 'FAIL'}")
        return 0 if silent == 0 and ran else 1
    finally:
        end(procs)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""R11's background load: hold CPU and IO pressure for a while, e.g. around a fresh-clone `make test`.

Usage: python bench/background_load.py [--minutes M] [--pressure cpu,io[,memory,churn]]

Starts the pressure processes of bench/batch_stress.py (`cpu`: two busy processes per core, `io`: a writer of
256 MiB files with fsync in a temp folder, `memory`, `churn`), prints their pids and the load average every minute,
and ends them all (by pid) after --minutes or on Ctrl-C/SIGTERM. Each process also ends itself after --minutes + 5.
How the R11 figure in README "CI" was produced: this script with `--minutes 40 --pressure cpu,io` started beside
`bash .ci/run` in a fresh clone.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import batch_stress  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--pressure", default="cpu,io")
    args = parser.parse_args(argv)
    kinds = [kind for kind in args.pressure.split(",") if kind]
    unknown = sorted(set(kinds) - {"cpu", "io", "memory", "churn"})
    if unknown or args.minutes <= 0:
        print(
            f"background_load.py: unknown pressure {unknown} or minutes <= 0; use cpu,io,memory,churn", file=sys.stderr
        )
        return 2
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with tempfile.TemporaryDirectory(prefix="background-load-") as scratch:
        procs = batch_stress.pressure(kinds, args.minutes * 60 + 5, Path(scratch))
        print(f"pressure {','.join(kinds)}: pids {' '.join(str(p.pid) for p in procs)}", flush=True)
        end = time.monotonic() + args.minutes * 60
        try:
            while time.monotonic() < end:
                time.sleep(min(60.0, max(0.0, end - time.monotonic())))
                print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        except KeyboardInterrupt:
            pass
        finally:
            batch_stress.end(procs)
    print("pressure ended", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

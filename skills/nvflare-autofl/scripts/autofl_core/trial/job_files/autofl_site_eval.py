"""Client script of an Auto-FL evaluation job: run the frozen evaluator on the job's model at this site.

Written into the evaluation job by the runner (it is the runner's file, never a candidate's). On each task the
server sends (NVFLARE's `validate`), it runs `python -B -s SCRIPT --model MODEL --site SITE [--format F]` from this
folder, where the runner placed the frozen evaluator's files and the model, and sends back as metrics: the tail of
the evaluator's stdout (the runner reads the answer from it: the last JSON line), its exit code, the last line of
its stderr and the sha256 of the model file it evaluated. It interprets nothing itself.
"""

import argparse
import hashlib
import os
import subprocess
import sys

import nvflare.client as flare

HERE = os.path.dirname(os.path.abspath(__file__))
STDOUT_TAIL = 8192
STDERR_LINE = 1000


def digest(path):
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def evaluate(args, site):
    model = os.path.join(HERE, args.model)
    argv = [sys.executable, "-B", "-s", os.path.join(HERE, args.script), "--model", model, "--site", site]
    if args.format:
        argv += ["--format", args.format]
    try:
        done = subprocess.run(argv, cwd=HERE, stdin=subprocess.DEVNULL, capture_output=True, timeout=args.timeout)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as error:
        code, out, err = -1, error.stdout or b"", f"timed out after {args.timeout:g} s".encode()
    lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    return {
        "autofl_stdout": out.decode("utf-8", "replace")[-STDOUT_TAIL:],
        "autofl_exit": code,
        "autofl_stderr": lines[-1][-STDERR_LINE:] if lines else "",
        "autofl_model_sha256": digest(model),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--format", default="")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    flare.init()
    site = flare.get_site_name()
    while flare.is_running():
        received = flare.receive()
        if received is None:
            break
        flare.send(flare.FLModel(metrics=evaluate(args, site)))


if __name__ == "__main__":
    main()

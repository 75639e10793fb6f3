"""Rebuild the POC cases of the sealedrun3 blind half on a local NVFLARE 2.9 POC system.

Usage:
    python evals/blind/sealedrun3/make_poc_cases.py

Same way of working as evals/blind/sealedrun2/make_poc_cases.py (whose POC start and job submit it uses): in a
temporary folder it prepares a POC project (server, site-1, site-2, admin) on free ports, starts it, and then:
    poc-metrics-json-float32           submits jobs/poc-metrics-json-float32 and keeps the bounded `job wait`
                                       envelope and site-1's log.txt of that job (from the site's POC workspace)
    poc-site2-fails-logs-not-streamed  submits jobs/poc-site2-fails-logs-not-streamed and keeps the bounded
                                       `job wait` envelope and the `job logs <id>` envelopes of `--site all` and
                                       `--site site-2`
Each job is exported by its job.py under one neutral job name. Every nvflare command is bounded; afterwards
`poc stop` runs and every process naming the temporary folder is killed. Paths are replaced by placeholders
(/tmp/nvflare/poc for the POC workspace). Exit 0 when all were built, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from make_real_fixtures import child_env, placeholders, scrub, write_case  # noqa: E402


def _second_half():
    path = HERE.parent / "sealedrun2" / "make_poc_cases.py"
    spec = importlib.util.spec_from_file_location("sealedrun2_make_poc_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.JOBS = HERE / "jobs"  # its submit() exports jobs/<case> from the folder this names
    return module


second_half = _second_half()
first_half = second_half.first_half
OUT = HERE / "files"
WAIT = 90.0


def run_case(env, cwd, tmp, prod: Path, kit: str, case: str) -> tuple[dict[str, str], str]:
    """Submit one case's job and collect what its user hands over; (file name -> text, error or "")."""
    job_id, submitted, waited = second_half.submit(env, cwd, tmp, kit, case, WAIT)
    if not job_id:
        return {}, f"{case}: the job was not accepted: {submitted.strip()}"
    first_half.nvflare(env, cwd, "--format", "json", "job", "abort", job_id, "--force", "--startup-kit", kit)
    texts = {"job_wait.json": waited}
    if case == "poc-metrics-json-float32":
        log = prod / "site-1" / job_id / "log.txt"
        if not log.is_file():
            return {}, f"{case}: site-1 wrote no log for job {job_id}"
        texts["site-1_log.txt"] = log.read_text(encoding="utf-8", errors="replace")
    else:
        for site in ("all", "site-2"):
            texts[f"job_logs_{site}.json"] = first_half.nvflare(
                env, cwd, "--format", "json", "job", "logs", job_id, "--site", site, "--startup-kit", kit
            )
    return texts, ""


def build(tmp: Path) -> list[str]:
    home, cwd = tmp / "home", tmp / "cli"
    for folder in (home, cwd):
        folder.mkdir()
    env = {**child_env(str(tmp), str(home)), "NVFLARE_POC_WORKSPACE": str(tmp / "poc")}
    started = second_half.start_poc(env, cwd, tmp)
    if started is None:
        return ["the POC system did not come up with both sites"]
    prod, kit = started
    errors = []
    for case in ("poc-metrics-json-float32", "poc-site2-fails-logs-not-streamed"):
        texts, error = run_case(env, cwd, tmp, prod, kit, case)
        if error:
            errors.append(error)
            continue
        pairs = [
            (str(tmp / "poc"), "/tmp/nvflare/poc"),
            (str(tmp / "exports" / case), "/home/user/fl-jobs/export"),
            (str(tmp / "src" / case), "/home/user/fl-jobs"),
            *placeholders(str(tmp), str(home)),
        ]
        write_case(OUT, case, lambda staging, texts=texts, pairs=pairs: _write(staging, texts, pairs))
    return errors


def _write(staging: Path, texts: dict[str, str], pairs: list[tuple[str, str]]) -> None:
    for name, text in texts.items():
        if text:
            (staging / name).write_text(scrub(text, pairs), encoding="utf-8")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nvf-sealedpoc3-") as name:
        tmp = Path(name)
        try:
            errors = build(tmp)
        finally:
            env = {**child_env(name, name), "NVFLARE_POC_WORKSPACE": str(tmp / "poc")}
            first_half.nvflare(env, tmp, "poc", "stop", "--no-wait", timeout=60)
            first_half.kill_all(tmp)
    for msg in errors:
        print(f"error: {msg}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""The `nvflare` CLI steps of `submit` (trial/flare_cli.py) against a stand-in interpreter that answers like
NVFLARE's JSON CLI: argv only, the allowlisted environment, the envelope read, each outcome of `job wait`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from autofl_core.trial import flare_cli

STANDIN = """#!{python}
import json, os, sys
args = sys.argv[sys.argv.index("-c") + 2:]
log = os.environ.get("LOG_ANSWER_TO") or ""
record = {{"args": args, "env": sorted(os.environ), "cwd": os.getcwd()}}
open({log!r}, "w").write(json.dumps(record))
answers = json.loads(open({answers!r}).read())
answer = answers[" ".join(a for a in args[2:4])]
print("some human text first")
print(json.dumps(answer["out"]))
sys.exit(answer.get("code", 0))
"""


@pytest.fixture
def standin(tmp_path):
    answers, log = tmp_path / "answers.json", tmp_path / "log.json"
    python = tmp_path / "python"
    python.write_text(STANDIN.format(python=sys.executable, answers=str(answers), log=str(log)))
    python.chmod(0o755)

    def cli(table: dict):
        answers.write_text(json.dumps(table))
        kit = flare_cli.Kit(startup_kit=str(tmp_path / "admin"))
        return flare_cli.FlareCli(str(python), kit, job_folder=tmp_path, parent_env={**os.environ, "API_TOKEN": "x"})

    cli.log = log
    return cli


def ok(data):
    return {"out": {"schema_version": "1", "status": "ok", "exit_code": 0, "data": data}}


def test_steps_run_argv_only_with_the_allowlisted_environment(standin):
    cli = standin({"system status": ok({"clients": [{"client_name": "site-2"}, {"client_name": "site-1"}]})})
    assert cli.system_sites() == ["site-1", "site-2"]
    seen = json.loads(Path(standin.log).read_text())
    assert seen["args"][:4] == ["--format", "json", "system", "status"]
    assert seen["args"][-2:][0] == "--startup-kit"
    assert "API_TOKEN" not in seen["env"] and not Path(seen["cwd"]).exists()  # its empty folder was removed


def test_submit_download_and_the_outcomes_of_a_bounded_wait(standin, tmp_path):
    meta = {"job_id": "j-1", "status": "FINISHED:COMPLETED", "duration": "0:00:12.5"}
    cli = standin(
        {
            "job submit": ok({"job_id": "j-1"}),
            "job wait": ok({"job_id": "j-1", "status": "FINISHED:COMPLETED", "job_meta": meta}),
            "job list": ok([{"job_id": "j-1", "job_name": "a"}, {"job_id": "j-2", "job_name": "b"}]),
        }
    )
    assert cli.submit(tmp_path / "job") == "j-1"
    done = cli.wait("j-1", 30)
    assert (done.finished, done.status, done.meta.duration_seconds) == (True, "FINISHED:COMPLETED", 12.5)
    # bounded by the step's timeout, polled more often than NVFLARE's default 2 s
    waited = json.loads(Path(standin.log).read_text())["args"][2:9]
    assert " ".join(waited) == "job wait j-1 --timeout 30 --interval 0.5"
    assert cli.jobs_named("b") == ["j-2"]
    still = standin({"job wait": {"out": {"status": "error", "error_code": "TIMEOUT", "message": "t"}, "code": 3}})
    assert still.wait("j-1", 1).finished is False
    failed = standin(
        {
            "job wait": {
                "out": {"status": "error", "error_code": "JOB_FAILED", "data": {"status": "FINISHED:ABORTED"}},
                "code": 1,
            }
        }
    )
    assert failed.wait("j-1", 1) == flare_cli.Waited(True, "FINISHED:ABORTED", failed.wait("j-1", 1).meta)
    refused = standin(
        {"job submit": {"out": {"status": "error", "error_code": "AUTH_FAILED", "message": "no"}, "code": 2}}
    )
    with pytest.raises(flare_cli.FlareCliError, match="nvflare job submit failed .exit 2.: AUTH_FAILED - no"):
        refused.submit(tmp_path / "job")
    missing = standin({"job download": ok({"job_id": "j-1"})})
    with pytest.raises(flare_cli.FlareCliError, match="left no folder"):
        missing.download("j-1", tmp_path / "dl")

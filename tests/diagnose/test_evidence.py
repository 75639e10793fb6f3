"""Bounded evidence readers: every input kind, ordering, truncation, limits, site labels, JSON-lines."""

from __future__ import annotations

import json
import os

import pytest
from evidence_trees import JOB_UUID, build_poc, build_simenv, json_record, log_line, set_mtimes, write
from nvfdiag.read.evidence import EvidenceError, collect_evidence, evidence_from_envelopes

LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}


def collect(paths, job_id=None, **overrides):
    return collect_evidence([str(p) for p in paths], job_id=job_id, **{**LIMITS, **overrides})


def by_path(ev):
    return {source.path: source for source in ev.sources}


def texts(ev, source=None):
    return [line.text for line in ev.lines if source is None or line.source == str(source)]


def test_plain_log_lines_numbered_with_site_from_folder(tmp_path):
    log = write(tmp_path / "site-3" / "log.txt", "first\nsecond\r\n\nfourth")
    ev = collect([log])
    assert [(line.line, line.text, line.site) for line in ev.lines] == [
        (1, "first", "site-3"),
        (2, "second", "site-3"),
        (3, "", "site-3"),
        (4, "fourth", "site-3"),
    ]
    source = by_path(ev)[str(log)]
    assert (source.kind, source.status, source.bytes_read, source.truncated) == (
        "log",
        "complete",
        log.stat().st_size,
        False,
    )
    assert ev.site_status == {} and ev.metrics is None


def test_simenv_workspace_layout(tmp_path):
    base = build_simenv(tmp_path / "sim")
    ev = collect([tmp_path / "sim"])
    sources = by_path(ev)
    server_log = str(base / "server" / "log.txt")
    assert sources[server_log].site == "server" and sources[server_log].kind == "log"
    assert sources[str(base / "site-2" / "log.txt")].site == "site-2"
    assert sources[str(base / "server/simulate_job/metrics/metrics_summary.json")].kind == "metrics_summary"
    assert sources[str(base / "server/simulate_job/metrics/round_metrics.jsonl")].kind == "round_metrics"
    assert sources[str(tmp_path / "sim")].kind == "sim_workspace"
    # log.json beside log.txt holds the same records: not read twice, and said so
    assert str(base / "server" / "log.json") not in sources
    assert any("log.json" in note for note in ev.not_read)
    assert ("simulation", f"SimEnv workspace layout (simulate_job folder) in {tmp_path / 'sim'}") in ev.mode_hints
    assert ev.metrics == {
        "final_round": 2,
        "key_metric": {"name": "accuracy", "mode": "max"},
        "final_aggregated_metrics": {"accuracy": 0.915},
        "non_finite": [],
    }
    assert "peer=site-1, peer_rc=EXECUTION_EXCEPTION" in " ".join(texts(ev, server_log))
    assert not any(path.endswith(".npy") for path in sources)  # models are not evidence


def test_read_order_error_logs_then_metrics_then_logs(tmp_path):
    base = build_simenv(tmp_path / "sim")
    ev = collect([tmp_path / "sim"])
    order = [s.path for s in ev.sources if s.kind in ("log", "metrics_summary", "round_metrics")]
    first_log = min(i for i, p in enumerate(order) if p.endswith("/log.txt"))
    assert all(p.endswith("error_log.txt") for p in order[:3])
    assert order.index(str(base / "server/simulate_job/metrics/metrics_summary.json")) < first_log


def test_log_json_alone_is_converted_to_log_txt_shape(tmp_path):
    ctx = "[identity=simulator_server, run=simulate_job]"
    path = write(
        tmp_path / "server" / "log.json",
        "\n".join(
            [
                json_record("ServerRunner", "INFO", "Server runner starting ...", ctx),
                json_record("SimulatorRunner", "INFO", "Create the Simulator Server."),
                "not json at all",
            ]
        )
        + "\n",
    )
    ev = collect([tmp_path])
    assert texts(ev) == [
        "2026-06-02 11:03:10,120 - ServerRunner - INFO - [identity=simulator_server, run=simulate_job] - Server runner starting ...",
        "2026-06-02 11:03:10,120 - SimulatorRunner - INFO - Create the Simulator Server.",
        "not json at all",
    ]
    assert [line.line for line in ev.lines] == [1, 2, 3] and {line.site for line in ev.lines} == {"server"}
    assert by_path(ev)[str(path)].status == "complete"


def test_json_bundle_states_site_status_and_job(tmp_path):
    bundle = {
        "job_id": "abc123",
        "job_status": "FINISHED:EXECUTION_EXCEPTION",
        "logs": {
            "server": {"status": "ok", "truncated": True, "lines": ["task round_3 timed out waiting for site-2", "x"]},
            "site-1": {"status": "permission_denied"},
            "site-2": {"status": "missing"},
            "site-3": {"status": "ok", "lines": ["fine"]},
        },
    }
    path = write(tmp_path / "bundle.json", json.dumps(bundle))
    ev = collect([path])
    assert ev.site_status == {"server": "truncated", "site-1": "permission_denied", "site-2": "missing", "site-3": "ok"}
    assert (ev.job_id, ev.job_status) == ("abc123", "FINISHED:EXECUTION_EXCEPTION")
    sources = by_path(ev)
    assert sources[f"{path}#site-1"].status == "permission_denied" and sources[f"{path}#site-1"].kind == "json_bundle"
    assert sources[f"{path}#server"].truncated and sources[f"{path}#site-3"].status == "complete"
    server = [line for line in ev.lines if line.site == "server"]
    assert (server[0].line, server[0].text) == (1, "task round_3 timed out waiting for site-2")
    assert ("production", f"JSON evidence bundle {path}") in ev.mode_hints


def _logs_envelope():
    ctx = "[identity=server, run=abc123, peer=site-1, peer_rc=EXECUTION_EXCEPTION]"
    server_log = (
        "\n".join(
            [
                json_record("ServerRunner", "INFO", "starting"),
                json_record("FedAvg", "ERROR", "result from site-1 failed", ctx),
            ]
        )
        + "\n"
    )
    return {
        "schema_version": "1",
        "status": "ok",
        "exit_code": 0,
        "data": {
            "job_id": "abc123",
            "target": "all",
            "logs": {"server": server_log},
            "logs_truncated": False,
            "sites": {
                "server": {"available": True, "lines": 2, "bytes": len(server_log), "logs_truncated": False},
                "site-1": {"available": False, "reason": "client log stream not available for this job"},
            },
            "filters": {"tail": 200},
            "unavailable": {"site-1": "client log stream not available for this job"},
        },
    }


def test_cli_job_logs_envelope(tmp_path):
    path = write(tmp_path / "logs.json", json.dumps(_logs_envelope()))
    ev = collect([path])
    assert ev.site_status == {"server": "ok", "site-1": "not_streamed"}
    assert texts(ev, f"{path}#server") == [
        "2026-06-02 11:03:10,120 - ServerRunner - INFO - starting",
        "2026-06-02 11:03:10,120 - FedAvg - ERROR - [identity=server, run=abc123, peer=site-1, "
        "peer_rc=EXECUTION_EXCEPTION] - result from site-1 failed",
    ]
    assert by_path(ev)[f"{path}#site-1"].status == "not_streamed"
    assert ev.job_id == "abc123" and any(mode == "production" for mode, _ in ev.mode_hints)


def test_cli_job_logs_truncated_site(tmp_path):
    envelope = _logs_envelope()
    envelope["data"]["sites"]["server"]["logs_truncated"] = True
    ev = collect([write(tmp_path / "logs.json", json.dumps(envelope))])
    assert ev.site_status["server"] == "truncated"


def test_cli_job_meta_download_error_and_system_envelopes(tmp_path):
    meta = write(
        tmp_path / "meta.json",
        json.dumps(
            {
                "schema_version": "1",
                "status": "ok",
                "exit_code": 0,
                "data": {
                    "job_id": "abc123",
                    "status": "FINISHED:EXECUTION_EXCEPTION",
                    "submit_time_iso": "2026-06-02T11:00:00",
                    "duration": "0:01:10",
                    "job_deploy_detail": ["server: OK", "site-1: OK"],
                },
            }
        ),
    )
    download = write(
        tmp_path / "download.json",
        json.dumps(
            {
                "schema_version": "1",
                "status": "ok",
                "exit_code": 0,
                "data": {
                    "job_id": "abc123",
                    "download_path": "/x",
                    "artifacts": {"global_model": "/x/m.pt"},
                    "missing_artifacts": ["metrics_summary", "client_logs"],
                },
            }
        ),
    )
    error = write(
        tmp_path / "error.json",
        json.dumps(
            {
                "schema_version": "1",
                "status": "error",
                "exit_code": 2,
                "error_code": "CONNECTION_FAILED",
                "message": "could not connect",
                "hint": "start the server",
            }
        ),
    )
    status = write(
        tmp_path / "status.json",
        json.dumps(
            {
                "schema_version": "1",
                "status": "ok",
                "exit_code": 0,
                "data": {"server_status": "started", "client_status": [{"client_name": "site-1", "status": "no_jobs"}]},
            }
        ),
    )
    ev = collect([meta, download, error, status])
    assert (ev.job_id, ev.job_status) == ("abc123", "FINISHED:EXECUTION_EXCEPTION")
    assert "job meta abc123: status=FINISHED:EXECUTION_EXCEPTION" in texts(ev, meta)
    assert "job download: missing artifacts: client_logs, metrics_summary" in texts(ev, download)
    assert texts(ev, error) == ["nvflare CLI error CONNECTION_FAILED: could not connect"]
    # a saved error envelope was read whole (complete); its error code is its note and its line is evidence
    assert (by_path(ev)[str(error)].status, by_path(ev)[str(error)].note) == ("complete", "CONNECTION_FAILED")
    assert "system status: client_status[0].status=no_jobs" in texts(ev, status)
    assert {s.kind for s in ev.sources} == {"cli_envelope"}


def test_metrics_non_finite_values_are_reported(tmp_path):
    build_simenv(tmp_path / "sim", nan=True)
    rounds = tmp_path / "sim/hello-numpy/server/simulate_job/metrics/round_metrics.jsonl"
    rounds.write_text(
        "\n".join(
            [
                '{"round": 0, "aggregated_metrics": [{"name": "loss", "value": Infinity}], '
                '"sites": [{"name": "site-1", "metrics": [{"name": "loss", "value": -Infinity}]}], "skipped_metrics": []}',
                '{"round": 1, "aggregated_metrics": [], "sites": [], '
                '"skipped_metrics": [{"name": "loss", "reason": "non_finite_number", "site": "site-2"}]}',
                '{"round": 2, "aggr',  # cut line (e.g. by truncation) is ignored
            ]
        )
        + "\n"
    )
    ev = collect([tmp_path / "sim"])
    metrics = ev.metrics
    assert metrics["final_aggregated_metrics"] == {"accuracy": "NaN"}
    found = {(e["metric"], e["round"], e["site"], e["value"]) for e in metrics["non_finite"]}
    assert found == {
        ("accuracy", 2, None, "NaN"),
        ("loss", 0, None, "Infinity"),
        ("loss", 0, "site-1", "-Infinity"),
        ("loss", 1, "site-2", "skipped:non_finite_number"),
    }
    json.dumps(metrics, allow_nan=False)  # the report stays valid JSON


def test_round_metrics_alone_give_final_round(tmp_path):
    path = write(
        tmp_path / "round_metrics.jsonl",
        "\n".join(json.dumps({"round": r, "aggregated_metrics": [{"name": "acc", "value": r / 10}]}) for r in range(4)),
    )
    ev = collect([path])
    assert ev.metrics == {
        "final_round": 3,
        "key_metric": None,
        "final_aggregated_metrics": {"acc": 0.3},
        "non_finite": [],
    }
    assert by_path(ev)[str(path)].kind == "round_metrics"


def test_job_id_folder_read_first_and_budget_not_exhausted_by_poc_clutter(tmp_path):
    prod = build_poc(tmp_path / "poc", past_jobs=30)
    ev = collect([tmp_path / "poc"], job_id=JOB_UUID, max_files=4)
    read = [s for s in ev.sources if s.status == "complete"]
    assert {s.path for s in read[:3]} == {
        str(prod / p / JOB_UUID / "log.txt") for p in ("hospital-a", "server", "site-1")
    }
    assert {s.site for s in read[:3]} == {"hospital-a", "server", "site-1"}
    assert "ZeroDivisionError: division by zero" in texts(ev)
    assert any(s.status == "skipped_limit" for s in ev.sources)
    assert any("file(s) not read" in note for note in ev.not_read)
    assert sum(s.status == "skipped_limit" for s in ev.sources) <= 20  # listed individually only up to a cap
    assert ("production", f"folder named by a job id in {tmp_path / 'poc'}") in ev.mode_hints
    assert ("production", f"NVFLARE startup kit folder in {tmp_path / 'poc'}") in ev.mode_hints


def test_without_job_id_newest_logs_first(tmp_path):
    old = write(tmp_path / "site-1" / "old-job" / "log.txt", "old\n")
    new = write(tmp_path / "site-1" / "new-job" / "log.txt", "new\n")
    set_mtimes([old, new])
    ev = collect([tmp_path], max_files=1)
    assert by_path(ev)[str(new)].status == "complete" and by_path(ev)[str(old)].status == "skipped_limit"


def test_head_tail_truncation_and_line_numbers(tmp_path):
    lines = [f"{i:05d} " + "x" * 93 for i in range(1, 1001)]  # 100 bytes per line with the newline
    path = write(tmp_path / "log.txt", "\n".join(lines) + "\n")
    ev = collect([path], max_bytes=20 * 1024)
    source = by_path(ev)[str(path)]
    assert source.truncated and source.status == "truncated" and source.bytes_read == 20 * 1024
    # tail first: the head is a quarter of the share (at most 16 KiB), the rest is the tail
    assert (source.size, source.regions) == (100_000, [(0, 5 * 1024), (100_000 - 15 * 1024, 100_000)])
    head = [line for line in ev.lines if line.line is not None]
    tail = [line for line in ev.lines if line.line is None]
    assert all(line.text.startswith(f"{line.line:05d} ") for line in head[:-1])
    assert len(head) == 52 and head[-1].text == lines[51][:20]  # the 5 KiB head ends mid-line 52
    assert tail[-1].text == lines[-1] and len(tail) == 153
    assert all(len(line.text) == 100 - 1 for line in tail)  # the partial first tail line was dropped
    assert {line.part for line in head} == {0} and {line.part for line in tail} == {1}
    assert any("--max-bytes" in note for note in ev.not_read)


def test_total_byte_and_file_limits(tmp_path):
    paths = [write(tmp_path / f"f{i}.log", "y" * 1000 + "\n") for i in range(3)]
    set_mtimes(paths)
    ev = collect([tmp_path], max_total_bytes=1500)
    statuses = [by_path(ev)[str(p)].status for p in reversed(paths)]
    assert statuses == ["complete", "truncated", "skipped_limit"]
    # an eighth of the budget is kept for windows around errors in unread middles (there are none here)
    assert sum(s.bytes_read for s in ev.sources if s.kind == "log") == 1500 - 1500 // 8
    ev = collect([tmp_path], max_files=2)
    assert [by_path(ev)[str(p)].status for p in reversed(paths)] == ["complete", "complete", "skipped_limit"]


def test_site_labels(tmp_path):
    app = write(tmp_path / "ws" / "simulate_job" / "app_site-2" / "log.txt", "a\n")
    custom = write(tmp_path / "poc" / "hospital-b" / JOB_UUID / "log.txt", "b\n")
    (tmp_path / "poc" / "hospital-b" / "startup").mkdir()
    bare = write(tmp_path / "copied" / "clinic-7" / "job42" / "log.txt", "c\n")
    download = write(tmp_path / "dl" / JOB_UUID / "workspace" / "log.txt", "d\n")
    ev = collect([tmp_path / "ws", tmp_path / "poc", tmp_path / "dl"])
    sites = {s.path: s.site for s in ev.sources}
    sites.update({s.path: s.site for s in collect([tmp_path / "copied"], job_id="job42").sources})
    assert sites[str(app)] == "site-2" and sites[str(custom)] == "hospital-b"
    assert sites[str(bare)] == "clinic-7" and sites[str(download)] == "server"
    explicit = write(tmp_path / "x" / "site-9" / JOB_UUID / "log.txt", "e\n")
    assert collect([explicit]).lines[0].site == "site-9"


def test_stdin_text_and_empty_stdin(tmp_path):
    ev = collect_evidence(
        ["-"], job_id=None, stdin_text="Traceback (most recent call last):\nImportError: x\n", **LIMITS
    )
    assert [(line.source, line.line) for line in ev.lines] == [("<stdin>", 1), ("<stdin>", 2)]
    with pytest.raises(EvidenceError, match="stdin was empty"):
        collect_evidence(["-"], job_id=None, stdin_text="  \n", **LIMITS)


def test_stdin_envelope_is_parsed(tmp_path):
    ev = collect_evidence(["-"], job_id=None, stdin_text=json.dumps(_logs_envelope()), **LIMITS)
    assert ev.site_status == {"server": "ok", "site-1": "not_streamed"}


def test_nothing_readable_raises_one_line(tmp_path):
    with pytest.raises(EvidenceError) as info:
        collect([tmp_path / "nope.log", tmp_path / "gone"])
    message = str(info.value)
    assert "\n" not in message and "does not exist" in message and "pass a log file" in message
    with pytest.raises(EvidenceError, match="positive integer"):
        collect([tmp_path], max_bytes=0)


def test_envelopes_from_collect_parse_like_saved_files(tmp_path):
    envelope = _logs_envelope()
    saved = collect([write(tmp_path / "logs.json", json.dumps(envelope))])
    item = {
        "command": ["nvflare", "--format", "json", "job", "logs", "abc123", "--site", "all", "--tail", "200"],
        "envelope": envelope,
        "error": None,
    }
    live = evidence_from_envelopes([item])
    assert live.site_status == saved.site_status
    assert [line.text for line in live.lines] == [line.text for line in saved.lines]
    failed = evidence_from_envelopes(
        [{"command": ["nvflare", "system", "status"], "envelope": None, "error": "timed out after 60 s"}]
    )
    assert failed.sources[0].status == "unavailable" and "timed out" in failed.lines[0].text


def test_collected_download_artifacts_are_read(tmp_path):
    item = {
        "command": ["nvflare", "--format", "json", "job", "download", "abc123", "-o", "/tmp/x"],
        "envelope": {
            "schema_version": "1",
            "status": "ok",
            "data": {"job_id": "abc123", "artifacts": {}, "missing_artifacts": ["global_model"]},
        },
        "error": None,
        "artifacts_read": [
            {
                "name": "metrics_summary",
                "path": "job download:m/metrics_summary.json",
                "site": None,
                "text": '{"final_round": 4, "final_aggregated_metrics": [{"name": "loss", "value": NaN}]}',
            },
            {
                "name": "client_log",
                "path": "job download:site-1/log.txt",
                "site": "site-1",
                "text": log_line("ClientRunner", "ERROR", "CUDA out of memory"),
            },
        ],
    }
    ev = evidence_from_envelopes([item])
    assert ev.metrics["final_round"] == 4 and ev.metrics["non_finite"][0]["value"] == "NaN"
    assert [(line.site, line.source) for line in ev.lines if "CUDA" in line.text] == [
        ("site-1", "job download:site-1/log.txt")
    ]
    assert by_path(ev)["job download:site-1/log.txt"].kind == "job_download"


def test_symlinks_inside_followed_outside_not(tmp_path):
    outside = write(tmp_path / "outside" / "other.log", "outside line\n")
    root = tmp_path / "root"
    inner = write(root / "real" / "log.txt", "inner line\n")
    os.symlink(inner, root / "alias.log")
    os.symlink(outside, root / "escape.log")
    os.symlink(tmp_path / "outside", root / "escape_dir")
    os.symlink(root, root / "real" / "loop")
    ev = collect([root])
    assert "outside line" not in texts(ev)
    assert texts(ev).count("inner line") == 2  # the file itself and the in-root link to it
    assert not any(s.path.startswith(str(root / "escape")) for s in ev.sources)
    assert {n for n in ev.not_read if "outside the given folders" in n} == {
        f"{root / 'escape.log'}: symlink pointing outside the given folders; not followed",
        f"{root / 'escape_dir'}: symlink pointing outside the given folders; not followed",
    }
    assert any("symlink loop" in note for note in ev.not_read)


def test_unrecognised_json_in_folder_is_not_turned_into_lines(tmp_path):
    write(tmp_path / "app_server" / "config" / "config_fed_server.json", '{"workflows": [{"id": "x"}]}')
    write(tmp_path / "app_server" / "log.txt", log_line("X", "INFO", "hello"))
    ev = collect([tmp_path])
    assert texts(ev) == ["2026-06-02 11:03:10,120 - X - INFO - hello"]
    assert any("not recognised" in note for note in ev.not_read)


def test_deterministic(tmp_path):
    build_simenv(tmp_path / "sim")
    first, second = collect([tmp_path / "sim"]), collect([tmp_path / "sim"])
    assert first == second


def test_empty_files_in_a_walk_do_not_use_the_file_budget(tmp_path):
    for i in range(10):
        write(tmp_path / f"site-{i}" / "error_log.txt", "")
    log = write(tmp_path / "server" / "log.txt", "the only real line\n")
    ev = collect([tmp_path], max_files=1)
    assert by_path(ev)[str(log)].status == "complete" and texts(ev) == ["the only real line"]
    assert sum(s.status == "complete" and s.bytes_read == 0 for s in ev.sources) == 10


def test_not_read_notes_are_capped(tmp_path):
    for i in range(40):
        os.symlink(tmp_path.parent, tmp_path / f"link{i}")  # 40 symlinks out of the root
    write(tmp_path / "log.txt", "x\n")
    ev = collect([tmp_path])
    assert len(ev.not_read) == 30 and ev.not_read[-1].endswith("more notes about unread evidence not shown")
    assert [s.path for s in ev.sources] == [str(tmp_path / "log.txt")]


def test_bundle_lines_may_be_json_records(tmp_path):
    bundle = {
        "job_id": "j1",
        "logs": {
            "server": {
                "status": "ok",
                "lines": [
                    {
                        "asctime": "2026-06-02 11:03:10,120",
                        "name": "FedAvg",
                        "levelname": "ERROR",
                        "fl_ctx": "",
                        "message": "boom",
                    }
                ],
            }
        },
    }
    ev = collect([write(tmp_path / "b.json", json.dumps(bundle))])
    assert texts(ev) == ["2026-06-02 11:03:10,120 - FedAvg - ERROR - boom"]


def test_captured_job_output_is_read_with_the_logs(tmp_path):
    build_simenv(tmp_path / "case" / "workspace")
    stdout = write(tmp_path / "case" / "stdout.txt", "ModuleNotFoundError: No module named 'missing_pkg'\n")
    notes = write(tmp_path / "case" / "notes.txt", "free text\n")
    ev = collect([tmp_path / "case"])
    order = [s.path for s in ev.sources]
    assert order.index(str(stdout)) < order.index(str(notes))
    assert by_path(ev)[str(stdout)].status == "complete"


def test_job_download_folder(tmp_path):
    job = tmp_path / "dl" / JOB_UUID
    write(
        job / "meta.json",
        json.dumps(
            {
                "job_id": JOB_UUID,
                "name": "cifar",
                "status": "FINISHED:EXECUTION_EXCEPTION",
                "submit_time_iso": "2026-06-02T11:00:00",
            }
        ),
    )
    server_log = write(
        job / "workspace" / "log.txt", log_line("ServerRunner", "ERROR", "peer=site-1, peer_rc=EXECUTION_EXCEPTION")
    )
    site_log = write(job / "workspace" / "site-1" / "log.txt", log_line("ClientRunner", "ERROR", "boom"))
    ev = collect([tmp_path / "dl"])
    sources = by_path(ev)
    assert sources[str(tmp_path / "dl")].kind == "job_download"
    assert (sources[str(server_log)].site, sources[str(site_log)].site) == ("server", "site-1")
    assert (ev.job_id, ev.job_status) == (JOB_UUID, "FINISHED:EXECUTION_EXCEPTION")
    assert any(mode == "production" for mode, _ in ev.mode_hints)

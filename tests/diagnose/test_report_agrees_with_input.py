"""The report never contradicts its input, and its confidence is calibrated."""

from nvfdiag.match import catalog as cat
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
TS = "2023-06-07 10:11:{:02d},100 - {} - ERROR - "


def evidence(files):
    """files: {path: (site label or None, [texts])}"""
    sources, lines = [], []
    for path, (site, texts) in files.items():
        sources.append(Source(path, "log", site, "complete", 100))
        lines += [Line(path, site, i + 1, t) for i, t in enumerate(texts)]
    return Evidence(sources=sources, lines=lines)


def run(files, **kw):
    return validated(diagnose(evidence(files), CATALOG, **kw))


SERVER_VIEW = ("server", [TS.format(1, "ServerRunner") + "task train timed out waiting for site-3"])


def test_a_site_whose_log_file_was_given_is_not_missing():
    site3 = ("site-3_log.txt", (None, [TS.format(2, "ClientRunner") + "round 4 still running"]))
    report = run({"server/log.txt": SERVER_VIEW, site3[0]: site3[1]}, mode="production")
    assert not any("logs of site-3" in m for m in report["missing_evidence"])
    without = run({"server/log.txt": SERVER_VIEW}, mode="production")
    assert any("logs of site-3" in m for m in without["missing_evidence"])


def test_identity_in_the_records_names_the_sites_own_log():
    own = (None, [TS.format(3, "ClientRunner") + "[identity=site-3, run=7]: still training"])
    report = run({"server/log.txt": SERVER_VIEW, "console.txt": own}, mode="production")
    assert not any("logs of site-3" in m for m in report["missing_evidence"])


def test_a_status_the_logs_print_is_not_asked_for():
    text = TS.format(4, "ServerRunner") + "CUDA out of memory. Tried to allocate 2 GiB"
    status = "2023-06-07 10:12:00,000 - JobRunner - INFO - Job 7 finished with status FINISHED:EXECUTION_EXCEPTION"
    report = run({"site-1/log.txt": ("site-1", [text, status])}, mode="production", job_id="job7")
    assert not any("job status" in m for m in report["missing_evidence"])
    asked = run({"site-1/log.txt": ("site-1", [text])}, mode="production", job_id="job7")
    assert any("job status" in m for m in asked["missing_evidence"])


def test_never_high_while_naming_evidence_it_needs():
    text = TS.format(5, "ClientRunner") + "torch.OutOfMemoryError: CUDA out of memory"
    given = evidence({"site-1/log.txt": ("site-1", [text])})
    assert validated(diagnose(given, CATALOG, mode="production"))["confidence"] == "high"
    given.sources.append(Source("site-2/log.txt", "log", "site-2", "permission_denied", 0))
    report = validated(diagnose(given, CATALOG, mode="production"))
    assert any("site-2/log.txt" in m for m in report["missing_evidence"]) and report["confidence"] == "medium"


def test_the_server_echoing_a_clients_error_caps_confidence():
    echo = TS.format(6, "ServerRunner") + "peer site-2 reported: ModuleNotFoundError: No module named 'timm'"
    report = run({"server/log.txt": ("server", [echo])}, mode="production", job_status="FINISHED:EXECUTION_EXCEPTION")
    assert report["matched_pattern"] == "IMPORT_ERROR" and report["confidence"] == "medium"


def test_lines_that_differ_only_in_timestamp_are_one_signal_with_a_count():
    texts = [TS.format(n, "ClientRunner") + "No space left on device: '/ws/run_1'" for n in range(5)]
    report = run({"site-1/log.txt": ("site-1", texts)}, mode="production", job_status="FINISHED:ABORTED")
    direct = [s for s in report["signals"] if s["pattern"] == report["matched_pattern"]]
    assert len(direct) == 1 and direct[0]["count"] == 5


def test_a_run_the_simulator_cli_started_is_not_told_to_rerun_job_py():
    texts = [
        "$ nvflare simulator jobs/hello -w /tmp/ws -n 2 -t 2",
        "2024-02-02 10:00:00,000 - SimulatorRunner - INFO - Create the Simulator Server.",
        "ModuleNotFoundError: No module named 'monai'",
    ]
    report = run({"console.txt": (None, texts)})
    assert report["runtime_mode"] == "simulation" and report["matched_pattern"] == "IMPORT_ERROR"
    assert "python job.py" not in report["next_action"] and "nvflare simulator" in report["next_action"]

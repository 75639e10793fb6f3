"""The one NVFLARE log-line prefix rule (logline.py) used by the scanner, tracebacks, refinements and injection."""

from nvfdiag import logline

REAL = (
    "2026-06-02 11:03:10,123 - ServerRunner - ERROR - [identity=simulator_server, run=simulate_job, "
    "peer=site-1, peer_rc=EXECUTION_EXCEPTION] - task train failed"
)


def test_level_of_real_line_shapes():
    assert logline.level(REAL) == "ERROR"
    assert logline.level("2026-06-02 11:03:10 - INFO - no logger name") == "INFO"
    assert logline.level("2026-06-02T11:03:10.5 - X - WARNING - iso style") == "WARNING"
    assert logline.level("Traceback (most recent call last):") is None
    assert logline.level("INFO - no timestamp") is None


def test_timestamp_is_sortable_across_millisecond_styles():
    assert logline.timestamp(REAL) == "2026-06-02 11:03:10,123000"
    assert logline.timestamp("2026-06-02T11:03:10 - X") == "2026-06-02 11:03:10,000000"
    assert logline.timestamp("2026-06-02 11:03:10,123 - a") < logline.timestamp("2026-06-02 11:03:10,2 - b")
    assert logline.timestamp("  2026-06-02 11:03:10 indented") is None


def test_message_strips_logger_level_and_fl_ctx_only():
    assert logline.message(REAL) == "task train failed"
    assert logline.message("2026-06-02 11:03:10 - X - INFO - [not closed - x") == "[not closed - x"
    assert logline.message("plain stdout text") == "plain stdout text"

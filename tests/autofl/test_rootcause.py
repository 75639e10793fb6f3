"""A crash's failure_reason names the root cause from the copied logs, not the simulator's wrapper line."""

from pathlib import Path

from autofl_core.trial.rootcause import root_cause

REAL = Path(__file__).resolve().parents[1].parent / "evals" / "diagnose" / "files" / "real"
WRAPPER = "RuntimeError: Simulation failed with return code 2. Logs are in per-site subdirectories under /x"


def test_real_client_exception_is_found_in_the_site_error_log():
    run = REAL / "user-code-exception"
    cause = root_cause(run / "workspace" / "user-code-exception", (run / "stdout.txt").read_text())
    assert cause.startswith("site-1: ValueError: matmul: Input operand 1 has a mismatch")


def test_real_import_error_is_found_in_the_job_output_when_site_logs_lack_it():
    run = REAL / "import-error"
    cause = root_cause(run / "workspace" / "import-error", (run / "stdout.txt").read_text())
    assert cause == "ModuleNotFoundError: No module named 'site_preprocessing'"


def test_gpu_out_of_memory_on_a_site_beats_the_wrapper(tmp_path):
    """The shape of a real PyTorch OOM run: the wrapper on stdout, the cause only in site-2's error log."""
    sim = tmp_path / "simulation"
    (sim / "site-1").mkdir(parents=True)
    (sim / "site-1" / "error_log.txt").write_text("")
    (sim / "site-2").mkdir()
    (sim / "site-2" / "error_log.txt").write_text(
        "2026-01-01 - ClientRunner - ERROR - train failed\nTraceback (most recent call last):\n"
        '  File "client.py", line 9, in train\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total)\n"
    )
    (sim / "server").mkdir()
    (sim / "server" / "error_log.txt").write_text("ValueError: the shareable is not a valid DXO - expect DXO\n")
    cause = root_cause(sim, "Traceback ...\n" + WRAPPER + "\n")
    assert (
        cause
        == "site-2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total)"
    )


def test_nothing_but_the_wrapper_gives_none(tmp_path):
    assert root_cause(tmp_path / "missing", WRAPPER + "\n") is None
    assert root_cause(None, "all good\n") is None


def test_long_or_hidden_characters_are_cleaned(tmp_path):
    sim = tmp_path / "sim"
    (sim / "site-1").mkdir(parents=True)
    (sim / "site-1" / "log.txt").write_text("KeyError: 'a\u200b" + "x" * 500 + "'\n")
    cause = root_cause(sim)
    assert cause.startswith("site-1: KeyError: 'ax") and cause.endswith("...") and "\u200b" not in cause
    assert len(cause) < 270

"""Input files that are not plain small files: FIFOs, devices, folders, oversized files (R7).

The ledger and the stored campaign state are read through one bounded reader; a FIFO must not block the
guard or the plot, a device must not be read, and the CLIs answer with one line and exit 2, writing nothing.
An oversized input is refused from its size: the CLIs read none of it (bytes read and peak RSS of the child,
measured by bench/child_usage.py, against a FIFO input that takes the same refusal path).
"""

import os
import subprocess

import pytest
from autofl_core.campaign import guard_inputs, ledger
from autofl_core.common import bounded

from bench.child_usage import run_measured


def test_reads_a_regular_file_and_reports_a_missing_one(tmp_path):
    path = tmp_path / "small.txt"
    path.write_bytes(b"abc")
    assert bounded.read_regular(path, 3) == b"abc"
    assert bounded.read_regular(tmp_path / "absent", 3) is None


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.write_bytes(b"x" * 11), "is larger than 10 bytes"),
    ],
    ids=["directory", "fifo", "oversized"],
)
@pytest.mark.timeout(10)
def test_refuses_what_is_not_a_small_regular_file(tmp_path, make, phrase):
    path = tmp_path / "input"
    make(path)
    with pytest.raises(bounded.BoundedReadError, match=phrase):
        bounded.read_regular(path, 10)


@pytest.mark.timeout(10)
def test_a_device_is_refused_before_any_byte_is_read():
    with pytest.raises(bounded.BoundedReadError, match="not a regular file"):
        bounded.read_regular("/dev/zero", 1 << 30)


@pytest.mark.timeout(10)
def test_ledger_and_state_readers_refuse_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "results.tsv")
    with pytest.raises(ledger.LedgerError, match="results.tsv: is not a regular file"):
        ledger.read_rows(tmp_path / "results.tsv")
    with pytest.raises(ledger.LedgerError, match="not a regular file"):
        ledger.append_row(tmp_path / "results.tsv", {"status": "keep", "name": "x"})
    state = tmp_path / guard_inputs.STATE_RELATIVE_PATH
    state.parent.mkdir(parents=True)
    os.mkfifo(state)
    with pytest.raises(guard_inputs.InputError, match="not a regular file; pass --mode"):
        guard_inputs.stored_mode(tmp_path)


def _run(python_exe, repo_root, script, *args):
    path = repo_root / "skills" / "nvflare-autofl" / "scripts" / script
    return subprocess.run([python_exe, str(path), *map(str, args)], capture_output=True, text=True, timeout=30)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("script", ["campaign_guard.py", "plot_progress.py"])
def test_clis_answer_one_line_for_a_fifo_ledger_or_state(tmp_path, python_exe, repo_root, script):
    os.mkfifo(tmp_path / "results.tsv")
    done = _run(python_exe, repo_root, script, tmp_path / "results.tsv")
    assert done.returncode == 2 and done.stdout == ""
    assert "is not a regular file" in done.stderr and done.stderr.count("\n") == 1
    (tmp_path / "results.tsv").unlink()
    (tmp_path / "results.tsv").write_text(ledger.HEADER + "\n")
    state = tmp_path / guard_inputs.STATE_RELATIVE_PATH
    state.parent.mkdir(parents=True)
    os.mkfifo(state)
    done = _run(python_exe, repo_root, script, tmp_path / "results.tsv")
    assert done.returncode == 2 and "campaign_state.json is not a regular file" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".nvflare", "results.tsv"]  # nothing written


@pytest.mark.timeout(60)
@pytest.mark.parametrize("script", ["campaign_guard.py", "plot_progress.py"])
def test_clis_refuse_a_device_as_ledger(python_exe, repo_root, script):
    done = _run(python_exe, repo_root, script, "/dev/null")
    assert done.returncode == 2 and "/dev/null: is not a regular file" in done.stderr
    assert not os.path.exists("/dev/progress.png")


def test_a_path_through_a_file_is_a_missing_file(tmp_path):
    (tmp_path / "plain").write_text("x")
    assert bounded.read_regular(tmp_path / "plain" / "results.tsv", 10) is None
    assert guard_inputs.stored_mode(tmp_path / "plain") is None


def test_a_read_error_is_a_one_phrase_refusal(tmp_path, monkeypatch):
    path = tmp_path / "results.tsv"
    path.write_text(ledger.HEADER + "\n")

    def failing_read(*_args):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(bounded.os, "read", failing_read)
    with pytest.raises(ledger.LedgerError, match=r"results.tsv: cannot be read \(Input/output error\)"):
        ledger.read_rows(path)


def _sparse(path, size):
    """A `size`-byte file that takes no disk space (a hole), with one text line at each end."""
    with open(path, "wb") as handle:
        handle.write(b"x\n")
        handle.truncate(size - 2)
        handle.seek(0, os.SEEK_END)
        handle.write(b"y\n")
    return path


def _measured(python_exe, repo_root, tmp_path, script, *args):
    path = repo_root / "skills" / "nvflare-autofl" / "scripts" / script
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    return run_measured([python_exe, str(path), *map(str, args)], cwd=tmp_path, env=env, timeout=120)


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("script", "name", "size", "phrase"),
    [
        ("campaign_guard.py", "results.tsv", ledger.MAX_LEDGER_BYTES + (1 << 30), "is larger than 512 MiB"),
        ("plot_progress.py", "results.tsv", ledger.MAX_LEDGER_BYTES + (1 << 30), "is larger than 512 MiB"),
        ("job_importer.py", "job.py", 1 << 30, "is larger than"),
    ],
)
def test_clis_refuse_a_huge_input_without_reading_it(tmp_path, python_exe, repo_root, script, name, size, phrase):
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / name)
    base = _measured(python_exe, repo_root, tmp_path, script, tmp_path / "fifo" / name)
    assert base.returncode == 2 and b"not a regular file" in base.stderr
    (tmp_path / "huge").mkdir()
    huge = _measured(python_exe, repo_root, tmp_path, script, _sparse(tmp_path / "huge" / name, size))
    assert huge.returncode == 2 and phrase in huge.stderr.decode() and huge.stderr.count(b"\n") == 1
    extra_read, extra_rss = huge.bytes_read - base.bytes_read, huge.peak_rss_mib - base.peak_rss_mib
    assert extra_read < 16384, f"read {extra_read} bytes more than for a FIFO input"
    assert extra_rss < 8, f"peak RSS {huge.peak_rss_mib:.1f} MiB, {extra_rss:.1f} MiB more than for a FIFO input"


@pytest.mark.timeout(10)
def test_a_trial_metrics_file_is_read_by_the_bounded_reader(tmp_path):
    """A trial's metrics JSON is read like every campaign document: a FIFO is refused instead of blocking the
    runner, an oversized file is refused from its size, NaN is allowed (json.dump writes it) only when asked."""
    from autofl_core.trial import metrics

    fifo = tmp_path / "metrics.json"
    os.mkfifo(fifo)
    assert metrics._load_json(fifo) is None  # opened non-blocking and refused: the old reader blocked here
    nan = tmp_path / "nan.json"
    nan.write_text('{"loss": NaN, "accuracy": 0.5}')
    assert metrics._load_json(nan)["accuracy"] == 0.5
    with pytest.raises(bounded.BoundedReadError, match="not valid JSON"):
        bounded.read_json_value(nan)
    assert bounded.read_json_value(nan, allow_nan=True)["accuracy"] == 0.5
    assert bounded.read_json_value(tmp_path / "absent") is None
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    assert bounded.read_json_value(listed) == [1, 2]
    with pytest.raises(bounded.BoundedReadError, match="not a JSON object"):
        bounded.read_json(listed)
    with pytest.raises(bounded.BoundedReadError, match="larger than 4 bytes"):
        bounded.read_json_value(listed, 4)
    assert bounded.parse_json(b'{"a": 1}') == {"a": 1}
    with pytest.raises(bounded.BoundedReadError, match="not valid JSON"):
        bounded.parse_json(b"\xff")


def test_a_read_that_may_not_pass_a_link_refuses_one_in_the_call_that_opens_it(tmp_path):
    target = tmp_path / "secret.txt"
    target.write_text("not the runner's")
    link = tmp_path / "model.npy"
    link.symlink_to(target)
    assert bounded.read_regular(link, 100) == b"not the runner's"  # the default reads through a link
    with pytest.raises(bounded.BoundedReadError, match="is a link"):
        bounded.read_regular(link, 100, through_link=False)
    assert bounded.read_regular(target, 100, through_link=False) == b"not the runner's"
    assert bounded.read_regular(tmp_path / "absent", 100, through_link=False) is None


def test_a_link_swapped_into_a_download_after_its_check_is_never_read(tmp_path, monkeypatch):
    """eval_job_match checks a file with lstat, then reads it: a link put there between the two is refused."""
    from autofl_core.trial import eval_job, eval_job_match

    regular = tmp_path / "regular"
    regular.write_text("x")
    link = tmp_path / "client.py"
    link.symlink_to(tmp_path / "regular")
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda path: real_lstat(regular) if str(path) == str(link) else real_lstat(path))
    with pytest.raises(eval_job.EvalJobError, match="client.py differs"):
        eval_job_match._read(link, 100, "client.py")

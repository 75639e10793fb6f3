"""The RSS helper used by the P4 benchmark and the R7 tests measures the child, not the caller."""

import sys

from bench.child_usage import run_measured


def test_peak_rss_excludes_the_callers_memory():
    ballast = bytearray(300 * 1024 * 1024)
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    small = run_measured([sys.executable, "-c", "pass"])
    assert small.returncode == 0
    assert small.peak_rss_mib < 100, small.peak_rss_mib
    del ballast


def test_peak_rss_sees_the_childs_own_allocation():
    code = "b = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('done')"
    big = run_measured([sys.executable, "-c", code])
    assert big.returncode == 0 and big.stdout.strip() == b"done"
    assert big.peak_rss_mib > 190, big.peak_rss_mib


def test_exit_code_and_streams_are_passed_through():
    result = run_measured([sys.executable, "-c", "import sys; sys.stderr.write('oops'); sys.exit(3)"], stdin=b"x")
    assert result.returncode == 3 and result.stderr == b"oops"


def test_bytes_read_counts_what_the_child_reads(tmp_path):
    data = tmp_path / "eight_mib.bin"
    data.write_bytes(b"x" * (8 << 20))
    idle = run_measured([sys.executable, "-c", "pass"])
    reader = run_measured([sys.executable, "-c", f"open({str(data)!r}, 'rb').read()"])
    piped = run_measured([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"], stdin=b"y" * (4 << 20))
    assert idle.bytes_read is not None and idle.bytes_read < (8 << 20)
    assert (8 << 20) <= reader.bytes_read - idle.bytes_read < (9 << 20)
    assert (4 << 20) <= piped.bytes_read - idle.bytes_read < (5 << 20)

"""Count the bytes the calling thread reads (any read(2), whatever the file): `rchar` of /proc/thread-self/io.

Usage::

    with ReadMeter() as meter:
        read_head_tail(path, 262144)
    assert meter.bytes <= 262144 + 2

Counting system calls rather than calls of our helpers catches every way of reading a whole file
(`open().read()`, `Path.read_bytes()`, `mmap` aside). The meter reads its own /proc file twice (about 200
bytes, subtracted).
"""

from __future__ import annotations

IO_FILE = "/proc/thread-self/io"


def thread_bytes_read() -> int:
    with open(IO_FILE, encoding="ascii") as handle:
        for line in handle:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError(f"{IO_FILE} has no rchar line")


class ReadMeter:
    """Context manager; `bytes` holds what the thread read inside the block."""

    def __enter__(self) -> ReadMeter:
        self._overhead = -thread_bytes_read() + thread_bytes_read()  # what one look at the io file costs
        self._start = thread_bytes_read()
        self.bytes = 0
        return self

    def __exit__(self, *exc) -> None:
        self.bytes = thread_bytes_read() - self._start - self._overhead

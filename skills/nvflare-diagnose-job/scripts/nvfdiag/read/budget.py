"""Share the byte budget between evidence files so every file is read before any is read deeper. Pure.

Usage:
    shares = plan_shares([size, ...], max_bytes=262144, budget=4194304, max_files=200)
    head, tail = head_tail(share, size)

`plan_shares` gives each file (in reading order) the bytes it may read, or None when the file or byte limit
leaves it unread. Files that fit are read whole; larger files share what is left equally (water filling), so
40 big site logs each get a slice instead of the first 16 getting everything. When even an equal slice would
fall below MIN_SHARE, files are served in reading order instead (a few useful reads beat many useless ones).
When some file cannot be read whole, DEEP_RESERVE of the budget is kept back for windows around errors found
in the unread middles (middle.py). Inside a share the tail comes first: the head is at most a quarter of it.
"""

from __future__ import annotations

HEAD_BYTES = 16 * 1024
MIN_SHARE = 4 * 1024
DEEP_RESERVE = 8  # 1/8 of the total budget is kept for middle windows when some file is truncated


def plan_shares(sizes: list[int], *, max_bytes: int, budget: int, max_files: int) -> list[int | None]:
    """Bytes to read per file (None = not read), in the order given; the sum never exceeds `budget`."""
    wants = [min(size, max_bytes) for size in sizes[:max_files]]
    if sum(wants) > budget or any(size > max_bytes for size in sizes[:max_files]):
        budget -= budget // DEEP_RESERVE  # some middle stays unread: keep room for windows around errors
    shares: list[int | None] = _fill(wants, budget)
    return shares + [None] * (len(sizes) - len(shares))


def _fill(wants: list[int], budget: int) -> list[int | None]:
    if sum(wants) <= budget:
        return list(wants)
    level = _water_level(wants, budget)
    if level >= MIN_SHARE:
        return [min(want, level) for want in wants]
    shares: list[int | None] = []
    for want in wants:
        share = min(want, MIN_SHARE, budget)
        shares.append(share if share > 0 else None)
        budget -= share
    return shares


def _water_level(wants: list[int], budget: int) -> int:
    """The largest L with sum(min(w, L)) <= budget (wants that fit under L are read whole)."""
    remaining, count = budget, len(wants)
    for want in sorted(wants):
        if want * count > remaining:
            return remaining // count
        remaining -= want
        count -= 1
    return max(wants)


def head_tail(share: int, size: int) -> tuple[int, int]:
    """(head bytes, tail bytes) to read from a file of `size` bytes with `share` bytes: the whole file if it fits."""
    if size <= share:
        return size, 0
    head = min(HEAD_BYTES, share // 4)
    return head, share - head

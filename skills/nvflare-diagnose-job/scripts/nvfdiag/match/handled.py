"""A traceback the job's code caught and logged is not the run's cause. Pure.

Usage: `found = handled_blocks(blocks)`; `hits, set_aside = set_aside_hits(hits, lines, found)`. A script that
catches an exception (an optional import, a retry) may log it with its traceback and go on. NVFLARE gives such
output no reliable level: the in-process Client API echoes a script's stderr as INFO records, and with
launch_external_process=True every line of the subprocess, the fatal traceback included, is an INFO record. What
shows that the script went on is its own later output: a traceback of a different exception raised through the same
script file (in a simulation the file's path names the site, so it is the same process) ends the run instead. Such
an earlier traceback is "handled": its hits do not decide the row, and the row the later one supports is at most
medium (matcher._confidence).
"""

from __future__ import annotations

import re
from collections import Counter

from .scan import Hit
from .tracebacks import Traceback, chains, is_user_file

REASON = "handled: the job's script went on after this traceback (a later traceback of the same script ended it)"


# The outermost frame of an exception no code caught, which ended a thread or a child process (Python prints it as
# `Exception in thread ...` or `Process ...:`): the script going on after it is not the script handling it.
_ENDED_WORKER = re.compile(r"(?:^|[\\/])(?:threading|multiprocessing[\\/]process)\.py$")


def _ended_worker(block: Traceback) -> bool:
    """The traceback of an uncaught exception that ended a thread or a child process of the script."""
    return bool(block.frames) and bool(_ENDED_WORKER.search(block.frames[0][0]))


def _user_files(block: Traceback) -> set[str]:
    return {path for path, _, _ in block.frames if is_user_file(path)}


class _Later:
    """The (exception class, chain) pairs of the tracebacks seen later through one (source, script file), counted
    per class and per chain so that one question costs O(1) whatever the number of classes."""

    def __init__(self) -> None:
        self.pairs: set[tuple[str, int]] = set()
        self.per_class: Counter[str] = Counter()
        self.per_chain: Counter[int] = Counter()

    def add(self, exc_type: str, chain: int) -> None:
        if (exc_type, chain) not in self.pairs:
            self.pairs.add((exc_type, chain))
            self.per_class[exc_type] += 1
            self.per_chain[chain] += 1

    def other_failure(self, exc_type: str, chain: int) -> bool:
        """Some later traceback of another class in another chain: the pairs that share neither, by counting."""
        both = (exc_type, chain) in self.pairs
        return len(self.pairs) - self.per_class[exc_type] - self.per_chain[chain] + both > 0


def handled_blocks(blocks: list[Traceback], lines) -> list[Traceback]:
    """Ended user-code tracebacks followed, in the same source, by a traceback of another exception class raised
    through one of the same script files. A traceback chained to it (`During handling of the above exception` or
    `The above exception was the direct cause`) is the same failure going on, not the script going past it.
    An uncaught exception that ended a thread or child process is never handled (nothing caught it; what the
    script did next is often its consequence). One pass from the last block back, O(1) per block and script file
    (`_Later`)."""
    chain_of = {id(block): number for number, chain in enumerate(chains(blocks, lines)) for block in chain}
    later: dict[tuple[str, str], _Later] = {}
    handled = []
    for block in reversed(blocks):
        if block.user_frame is None or block.exc_type is None:
            continue
        mine = chain_of[id(block)]
        keys = [(block.source, path) for path in _user_files(block)]
        if (
            block.end is not None
            and not _ended_worker(block)
            and any(key in later and later[key].other_failure(block.exc_type, mine) for key in keys)
        ):
            handled.append(block)
        for key in keys:
            later.setdefault(key, _Later()).add(block.exc_type, mine)
    return handled[::-1]


def _span(block: Traceback) -> range:
    return range(block.start, max([block.end, *block.detail]) + 1)


def set_aside_hits(
    hits: dict[str, list[Hit]], lines, handled: list[Traceback]
) -> tuple[dict[str, list[Hit]], dict[str, list[Hit]]]:
    """Each row's hits minus those on a handled traceback's lines, and the hits set aside per row."""
    if not handled:
        return hits, {}
    covered = {(block.source, index) for block in handled for index in _span(block)}
    kept: dict[str, list[Hit]] = {}
    aside: dict[str, list[Hit]] = {}
    for row_id, row_hits in hits.items():
        for hit in row_hits:
            on_handled = hit.index is not None and (lines[hit.index].source, hit.index) in covered
            (aside if on_handled else kept).setdefault(row_id, []).append(hit)
    return kept, aside

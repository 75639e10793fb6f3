"""Find Python tracebacks in evidence lines and tell whether they pass through user code.

Usage: `blocks = find_tracebacks(lines, skip)`; each Traceback knows its line span, exception type and the
deepest frame in a user file (not site-packages, not the standard library). Interleaved log lines from other
threads inside a traceback (seen in POC site logs) are tolerated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .logline import timestamp
from .model import Line

_START = re.compile(r"Traceback \(most recent call last\):")
_FRAME = re.compile(r'^\s*File "([^"]{1,1024})", line (\d+), in (\S{1,200})')
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))\b(?::|$)")
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "<string>")
# The launcher's own summary of a failed simulation is not user code, even though job.py is on its stack.
_LAUNCHER_ECHO = re.compile(r"Simulation failed with return code")
MAX_BLOCK_LINES = 400


@dataclass
class Traceback:
    source: str
    site: str | None
    start: int
    end: int | None = None
    exc_type: str | None = None
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    launcher_echo: bool = False

    @property
    def user_frame(self) -> tuple[str, int, str] | None:
        """Deepest frame in a user file, or None when the stack is library-only or the launcher's echo."""
        if self.launcher_echo:
            return None
        user = [f for f in self.frames if is_user_file(f[0])]
        return user[-1] if user else None


def is_user_file(path: str) -> bool:
    """A frame's file is user code unless it lives in site-packages, the standard library or a frozen/eval module."""
    return not any(marker in path for marker in _LIBRARY_MARKERS)


def find_tracebacks(lines: list[Line], skip: set[int] | frozenset = frozenset()) -> list[Traceback]:
    """All traceback blocks, in line order; skipped (suspicious) lines never start or extend a block."""
    blocks: list[Traceback] = []
    open_blocks: dict[str, Traceback] = {}
    for index, line in enumerate(lines):
        if index in skip:
            continue
        text = line.text[:4096]
        current = open_blocks.get(line.source)
        if _START.search(text):
            current = open_blocks[line.source] = Traceback(line.source, line.site, index)
            blocks.append(current)
            continue
        if current is None:
            continue
        if index - current.start > MAX_BLOCK_LINES:
            del open_blocks[line.source]
            continue
        frame = _FRAME.match(text)
        if frame:
            current.frames.append((frame.group(1), int(frame.group(2)), frame.group(3)))
            continue
        if timestamp(text) is not None or text[:1].isspace() or not text.strip():
            continue
        exception = _EXCEPTION.match(text)
        if exception and current.frames:
            current.exc_type = exception.group(1)
            current.end = index
            current.launcher_echo = bool(_LAUNCHER_ECHO.search(text))
            del open_blocks[line.source]
    return blocks


def block_containing(blocks: list[Traceback], index: int, source: str) -> Traceback | None:
    """The traceback of `source` whose span covers line `index` (exception line included)."""
    for block in blocks:
        end = block.end if block.end is not None else block.start
        if block.source == source and block.start <= index <= end:
            return block
    return None

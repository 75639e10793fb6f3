"""Find Python tracebacks in evidence lines and tell whether they pass through user code.

Usage: `blocks = find_tracebacks(lines, skip[, text_index])`; each Traceback knows its line span, exception type, its frames
(with the index of each frame line), the deepest frame in a user file (not site-packages, not the standard library,
not NVFLARE), and the detail lines printed after the exception line (e.g. pydantic's "what is wrong" lines).
Interleaved log lines from other threads inside a traceback (seen in POC site logs) are tolerated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..logline import timestamp
from ..model import Line
from ..pylines import CHAIN, START_TEXT, exception_name

_START = re.compile(re.escape(START_TEXT))
_FRAME = re.compile(r'^\s*File "([^"]{1,1024})", line (\d+), in (\S{1,200})')
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "<string>")
# Library files the markers miss: the standard library under lib64 (Fedora, RHEL) or in a Windows install's `Lib`
# folder, the Cython sources of a compiled extension (grpc's `src/python/grpcio/grpc/_cython/...pyx.pxi`), and a
# module inside an archive or a PEX's wheel cache (app.pyz/..., deps.zip/..., ~/.pex/installed_wheels/...).
_ARCHIVE = re.compile(r"\.(?:pex|pyz|zip|egg|whl)[\\/]|[\\/]\.pex[\\/]")
_LIBRARY_PATH = re.compile(
    r"[\\/]lib64[\\/]python\d|^[A-Za-z]:\\(?:[^\\]+\\)*Lib\\|\.(?:pyx|pxi|pxd)$|" + _ARCHIVE.pattern
)
# NVFLARE's own modules, also from a source checkout (`pip install -e`): nvflare/<one of its top-level packages>/.
_NVFLARE_PATH = re.compile(
    r"[\\/]nvflare[\\/](?:(?:apis|app_common|app_opt|client|collab|dashboard|edge|fuel|fuel_opt|job_config|lighter"
    r"|metrics|private|recipe|security|tool|utils|widgets)[\\/]|cli(?:_exception)?\.py$)"
)
# The launcher's own summary of a failed simulation is not user code, even though job.py is on its stack.
_PACKAGE = re.compile(r"(?:(?:site|dist)-packages|\.(?:pex|pyz|zip|egg|whl))[\\/]([A-Za-z_][\w]{0,40})[\\/]")
_LAUNCHER_ECHO = re.compile(r"Simulation failed with return code")
MAX_BLOCK_LINES = 400
MAX_DETAIL_LINES = 6


@dataclass
class Traceback:
    source: str
    site: str | None
    start: int
    end: int | None = None
    exc_type: str | None = None
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    launcher_echo: bool = False
    frame_lines: list[int] = field(default_factory=list)  # index of each frame's `File "..."` line
    detail: list[int] = field(default_factory=list)  # lines printed after the exception line (same message)

    @property
    def user_frame(self) -> tuple[str, int, str] | None:
        """Deepest frame in a user file, or None when the stack is library-only or the launcher's echo."""
        if self.launcher_echo:
            return None
        user = [f for f in self.frames if is_user_file(f[0])]
        return user[-1] if user else None

    @property
    def third_party(self) -> str | None:
        """The package of the deepest frame when the traceback ends in third-party code (not the job's, not
        NVFLARE's) and has no frame in the job's code: its own kind, neither user code nor a missing traceback.
        None otherwise ('' when the package cannot be named)."""
        if self.launcher_echo or self.end is None or not self.frames or self.user_frame is not None:
            return None
        path = self.frames[-1][0]
        if is_nvflare_file(path) or not (any(m in path for m in _LIBRARY_MARKERS[:4]) or _ARCHIVE.search(path)):
            return None
        found = _PACKAGE.findall(path)  # the innermost: a PEX keeps its wheels under ~/.pex/installed_wheels/
        return found[-1] if found else ""


def is_user_file(path: str) -> bool:
    """User code, unless it lives in site-packages, the standard library, a frozen/eval module or NVFLARE itself."""
    if any(marker in path for marker in _LIBRARY_MARKERS) or _LIBRARY_PATH.search(path):
        return False
    return not is_nvflare_file(path)


def _install_root(path: str) -> str:
    """The folder holding the nvflare package of an NVFLARE file; '' when it is less than two folders deep (`/`,
    `/app/`, `C:\\`), where the job's own files may live too."""
    root = path[: _NVFLARE_PATH.search(path).start() + 1]
    folders = [part for part in re.split(r"[\\/]", root) if part and not part.endswith(":")]
    return root if len(folders) >= 2 else ""


def is_nvflare_file(path: str) -> bool:
    """A module of the nvflare package (installed or a source checkout)."""
    return bool(_NVFLARE_PATH.search(path))


def find_tracebacks(lines: list[Line], skip: set[int] | frozenset = frozenset(), text_index=None) -> list[Traceback]:
    """All traceback blocks, in line order; skipped (suspicious) lines never start or extend a block.
    `text_index`, a textindex.TextIndex of the same lines, limits the walk to the lines a block can reach, and
    to the lines of a source with an open block (or that may start one)."""
    blocks: list[Traceback] = []
    open_blocks: dict[tuple[str, str | None], Traceback] = {}  # per source and site: a compose log interleaves sites
    starts = None if text_index is None else text_index.lines_with_text(START_TEXT)
    may_start = None if starts is None else set(starts)
    for index, line in _reachable(lines, starts):
        key = (line.source, line.site)
        if index in skip or (may_start is not None and index not in may_start and key not in open_blocks):
            continue
        text = line.text[:4096]
        current = open_blocks.get(key)
        if _START.search(text):
            current = open_blocks[key] = Traceback(line.source, line.site, index)
            blocks.append(current)
            continue
        if current is None:
            continue
        if index - current.start > MAX_BLOCK_LINES:
            del open_blocks[key]
            continue
        frame = _FRAME.match(text)
        if frame:
            current.frames.append((frame.group(1), int(frame.group(2)), frame.group(3)))
            current.frame_lines.append(index)
            continue
        if timestamp(text) is not None or text[:1].isspace() or not text.strip():
            continue
        name = exception_name(text) if current.frames else None
        if name:
            current.exc_type = name
            current.end = index
            current.launcher_echo = bool(_LAUNCHER_ECHO.search(text))
            current.detail = _detail_lines(lines, index, skip)
            del open_blocks[key]
    return blocks


def _reachable(lines: list[Line], starts: list[int] | None):
    """(index, line) of every line, or only those from each of `starts` (the lines that may hold `Traceback (most
    recent call last):`) through the MAX_BLOCK_LINES lines after it: no other line starts, extends or ends a block."""
    if starts is None:
        yield from enumerate(lines)
        return
    reached = 0
    for start in starts:
        for number in range(max(start, reached), min(len(lines), start + MAX_BLOCK_LINES + 1)):
            yield number, lines[number]
        reached = max(reached, start + MAX_BLOCK_LINES + 1)


def _detail_lines(lines: list[Line], end: int, skip) -> list[int]:
    """Lines of the same source right after the exception line that continue its message (multi-line messages,
    pydantic's field and reason lines); a blank, timestamped or new-traceback line ends them."""
    detail = []
    for index in range(end + 1, min(len(lines), end + 1 + MAX_DETAIL_LINES)):
        line = lines[index]
        text = line.text[:4096]
        if (line.source, line.site) != (lines[end].source, lines[end].site) or index in skip or not text.strip():
            break
        if timestamp(text) is not None or _START.search(text) or _FRAME.match(text):
            break
        detail.append(index)
    return detail


def block_containing(blocks: list[Traceback], index: int, source: str) -> Traceback | None:
    """The traceback of `source` whose span covers line `index` (exception line included)."""
    for block in blocks:
        end = block.end if block.end is not None else block.start
        if block.source == source and block.start <= index <= end:
            return block
    return None


def job_own_calls(blocks: list[Traceback], lines: list[Line]) -> list[Traceback]:
    """The blocks that are the job's own call failing, taken per chained failure: the chain's frames read as one
    stack, outermost block first (each earlier block goes on from where the next one caught it), must pass
    _job_own_stack's test (the job's code raised the exception or called the code that did, no NVFLARE frame
    below the job's deepest frame). A download's urllib3 -> requests -> job chain is the job's; NVFLARE's
    handshake that the job's code caught and raised again is not; the job's download that NVFLARE's executor
    wrapped is."""
    own: list[Traceback] = []
    for chain in chains(blocks, lines):
        ended = all(block.end is not None and not block.launcher_echo for block in chain)
        if ended and _job_own_stack([frame for block in reversed(chain) for frame in block.frames]):
            own.extend(chain)
    return own


def _job_own_stack(frames: list[tuple[str, int, str]]) -> bool:
    """A frame of the job's code, and no NVFLARE frame below the deepest one. A file in the folder NVFLARE is
    installed in (pip install --target /app/deps: /app/deps/grpc/...) is a library there, not the job's code."""
    roots = {_install_root(path) for path, _, _ in frames if is_nvflare_file(path)} - {""}
    user = [i for i, frame in enumerate(frames) if is_user_file(frame[0]) and not frame[0].startswith(tuple(roots))]
    return bool(user) and not any(is_nvflare_file(frame[0]) for frame in frames[user[-1] + 1 :])


def chains(blocks: list[Traceback], lines: list[Line]) -> list[list[Traceback]]:
    """Blocks grouped by chained failure: a block joins the previous one when only blank lines, the previous
    block's message lines and at least one of Python's chain sentences lie between them."""
    chains: list[list[Traceback]] = []
    for block in blocks:
        if chains and _chained(chains[-1][-1], block, lines):
            chains[-1].append(block)
        else:
            chains.append([block])
    return chains


def _chained(previous: Traceback, block: Traceback, lines: list[Line]) -> bool:
    if previous.end is None or (previous.source, previous.site) != (block.source, block.site):
        return False
    between = range(previous.end + 1, block.start)
    if len(between) > MAX_DETAIL_LINES + 4:
        return False
    sentences = 0
    for index in between:
        line = lines[index]
        text = line.text[:4096].strip()
        if (line.source, line.site) != (block.source, block.site):
            return False
        if CHAIN.match(text):
            sentences += 1
        elif text and index not in previous.detail:
            return False
    return sentences > 0

"""Process exits in every spelling, read once as numbers with their encodings.

Usage: `found = find_exits(lines, index)` -> [Exit(index, code, signal, encoding)] for the lines that say a process
ended by SIGKILL: a negative signal (`-9`), the shell's 128+n (`137`), the same -9 read as an unsigned byte (`247`),
`signal 9` / `SIGKILL`, a shell's `Killed` job line, a container runtime's `OOMKilled`. The wording around the number
varies by release and runtime (`exit code -9`, `rc=-9`, `return_code from process.exitcode: -9`, `process finished
with execution code: -9`, `exited with code 137`, `exit status 247`, `Exit Code: 137`); the number decides. Pure.
The pattern is fixed here, so text in a line can never choose what it matches: a kill is read even on a line that
also carries a flagged directive (it yields only PROCESS_EXIT_NEG9, whose category is UNKNOWN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Line

SIGKILL = 9
MAX_EXITS = 200
MAX_TEXT = 4096
# A word that names an exit code, then at most a few words and a separator, then the number.
_CODE = re.compile(
    r"(?:\bexit(?:ed)?[ _](?:with[ _])?(?:exit[ _])?(?:code|status|value)|\bexited with|\bexecution[ _]code|"
    r"\breturn[ _]?code|\bexit_?code|\brun_status|\brc|\bstatus code)"
    r"(?:\s+from\s+[\w.]{1,40})?\s*[=:]?\s*\(?(-?\d{1,3})(?!\w|\.\d)",
    re.IGNORECASE,
)
_SIGNAL = re.compile(
    r"\bSIGKILL\b|(?:killed|terminated|died|stopped) (?:by|with|on) signal:? ?9\b|\bsignal:? ?9\b|signal: killed\b",
    re.IGNORECASE,
)
# A shell's report of a killed child: `./start.sh: line 31:  4242 Killed  python3 ...`, `[1]+  Killed  python job.py`,
# or `Killed` alone on its line (an interactive shell after the kernel killed the foreground process).
_SHELL = re.compile(r"(?:: line \d+: +\d+|^\[\d+\][+-]?|^\d+) +Killed\b|^\s*Killed\s*$")
_CONTAINER = re.compile(r"\bOOMKilled\b|\bOOM ?killed\b|reason:? ?OOMKilled", re.IGNORECASE)
# Every kill this module reads holds a number standing alone (-9, 137, 247) or a kill word: literal-led searches of
# the lower-cased text of all lines find the few lines worth reading (not `,137` milliseconds or `-9f3c` in a uuid).
_NUMBERS = tuple(re.compile(re.escape(n) + r"(?!\w|\.\d)") for n in ("-9", "137", "247"))
_WORDS = ("sigkill", "signal", "killed")


@dataclass(frozen=True)
class Exit:
    index: int  # into the evidence lines
    code: int | None  # the number as written (None when the line gives no number)
    encoding: str  # how the number says SIGKILL


def decode(code: int) -> str | None:
    """How `code` encodes SIGKILL, or None when it does not."""
    if code == -SIGKILL:
        return "a negative exit code is the signal that ended the process: -9 = SIGKILL"
    if code == 128 + SIGKILL:
        return "a shell or container reports death by signal n as 128+n: 137 = 128+9 = SIGKILL"
    if code == 256 - SIGKILL:
        return "-9 read as an unsigned byte is 256-9: 247 = SIGKILL"
    return None


def read_exit(text: str) -> tuple[int | None, str] | None:
    """(the number, how it encodes SIGKILL) when `text` says a process ended by SIGKILL, else None."""
    text = text[:MAX_TEXT]
    for match in _CODE.finditer(text):
        code = int(match.group(1))
        how = decode(code)
        if how:
            return code, how
    if _CONTAINER.search(text):
        return None, "the container runtime ended the process for exceeding its memory limit (OOMKilled)"
    if _SIGNAL.search(text):
        return None, "the process was ended by signal 9 (SIGKILL)"
    if _SHELL.search(text):
        return None, "the shell reports its child Killed (SIGKILL)"
    return None


def find_exits(lines: list[Line], index=None) -> list[Exit]:
    """Every line that says a process ended by SIGKILL (any level, flagged lines included), first MAX_EXITS."""
    if index is None:
        numbers = range(len(lines))
    else:
        numbers = sorted(_candidate_lines(index))
    found = []
    for number in numbers:
        read = read_exit(lines[number].text)
        if read is not None:
            found.append(Exit(number, read[0], read[1]))
            if len(found) >= MAX_EXITS:
                break
    return found


def _candidate_lines(index) -> set[int]:
    low, found = index.low, set()
    for pattern in _NUMBERS:
        for match in pattern.finditer(low):
            before = low[match.start() - 1] if match.start() else " "
            if not (before.isalnum() or before in "_,.:-"):
                found.add(index.low_line_at(match.start()))
    for word in _WORDS:
        found.update(index.lines_with(word))
    return found


def basis(found: Exit) -> str:
    """match_basis of an exit hit."""
    number = f"exit code {found.code}: " if found.code is not None else ""
    return f"process exit: {number}{found.encoding}"

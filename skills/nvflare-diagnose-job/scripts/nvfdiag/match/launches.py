"""A FileNotFoundError raised while starting a program names a missing program, not a missing data path. Pure.

Usage: `found = failed_launches(blocks, lines)`; `hits = reread_hits(hits, lines, found, catalog.has, index)`.
When the innermost frame of a FileNotFoundError/PermissionError traceback is Python's process launcher (subprocess's
`_execute_child`, or its `_posix_spawn` when a program is given by path and `close_fds=False`, an
`os.exec*`/`os.spawn*`/`os.posix_spawn*` call), the file that was not found is the program to
run, unless it is the working folder. CPython's `_execute_child` names the file it failed on by one of two values:
the `cwd=` it could not enter, or the program (`executable=`, else the first argument; `/bin/sh` with
`shell=True`). So the missing name is the working folder when a frame's quoted source passes it as `cwd=`, or when
the call into the launcher (the frame right above subprocess's own) passes some `cwd=` and shows its program as
another whole literal; Windows says a bad working folder as
`[WinError 267]` (CreateProcess's ERROR_DIRECTORY), with no name. DATA_PATH_NOT_FOUND then loses
the hits on that traceback and on the lines that repeat its exception (NVFLARE's `ClientAPIExecutor cannot start:
... FileNotFoundError: ...`). When NVFLARE's external-process backend made the
call, the program is the `command=` of the job's recipe or ScriptRunner: SIMULATION_CONFIG_ERROR (a generic reading,
so at most medium); otherwise no row names it and the fact is said in likely_cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .scan import Hit
from .tracebacks import Traceback, is_nvflare_file

DATA_ID = "DATA_PATH_NOT_FOUND"
COMMAND_ID = "SIMULATION_CONFIG_ERROR"
_NOT_STARTED = ("FileNotFoundError", "PermissionError", "NotADirectoryError")
_LAUNCHER = re.compile(r"^(?:_execute_child|_posix_spawn|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?|_fork_exec)$")
_STDLIB_LAUNCHER_FILE = re.compile(r"(?:^|[\\/])(?:subprocess|os|multiprocessing[\\/]popen_\w+)\.py$")
_NVFLARE_LAUNCH = re.compile(r"external_process|launcher|_launch")
_PROGRAM = re.compile(r"(?:No such file or directory|Permission denied): '([\w./+-]{1,120})'")
_BAD_FOLDER_WINDOWS = "[WinError 267]"  # CreateProcess's ERROR_DIRECTORY: the working folder is not a folder
# The program a call shows as a literal (spaces removed): `executable='...'`, else the first argument of a
# subprocess call, alone or first in a list or tuple; a whole argument (`'/opt/bin/' + tool` shows no program).
_EXECUTABLE = re.compile(r"""executable=[rRbB]?(['"])([^'"\\]{1,200})\1(?=[,)])""")
_FIRST_ARG = re.compile(
    r"""\b(?:Popen|run|call|check_call|check_output)\([\[(]?[rRbB]?(['"])([^'"\\]{1,200})\1(?=[,)\]])"""
)
MAX_QUOTED_LINES = 12  # a frame's quoted source: one line, or a few of a statement that spans lines
_SHELL = "/bin/sh"  # subprocess's program on POSIX with shell=True and no executable=
BASIS = "a program the job's launch command names could not be started (Python's process launcher raised)"


@dataclass(frozen=True)
class Launch:
    block: Traceback
    exception_text: str  # the exception line, as other NVFLARE lines quote it
    program: str | None
    by_nvflare: bool  # NVFLARE's external-process backend or launcher made the call


def failed_launches(blocks: list[Traceback], lines) -> list[Launch]:
    """The ended tracebacks whose innermost frame is Python's process launcher failing to find or run a program."""
    found = []
    for block in blocks:
        if block.end is None or block.exc_type not in _NOT_STARTED or not block.frames:
            continue
        path, _, function = block.frames[-1]
        if not (_LAUNCHER.match(function) and _STDLIB_LAUNCHER_FILE.search(path)):
            continue
        text = lines[block.end].text[:4096]
        start = text.find(block.exc_type)
        exception_text = text[start:].strip()
        program = _PROGRAM.search(exception_text)
        if _BAD_FOLDER_WINDOWS in exception_text or (program and _names_working_folder(block, lines, program.group(1))):
            continue
        by_nvflare = any(is_nvflare_file(p) and _NVFLARE_LAUNCH.search(p + " " + f) for p, _, f in block.frames)
        found.append(Launch(block, exception_text, program.group(1) if program else None, by_nvflare))
    return found


def _names_working_folder(block: Traceback, lines, name: str) -> bool:
    """A frame's quoted source passes the missing name as `cwd=`, or the call into the launcher (the quoted source
    of the frame right above the launcher's own frames) passes some `cwd=` and shows its program as another name:
    CPython's launcher reports the missing file as the working folder or the program, nothing else. A log record
    of another thread or site interleaved in the traceback, and the calls of outer frames (a wrapper's own
    arguments), are not that call."""
    quoted = (f"cwd='{name}'", f'cwd="{name}"', f"cwd=r'{name}'", f'cwd=r"{name}"')
    code = [_quoted_source(block, lines, k) for k in range(len(block.frames))]
    if any(q in text for text in code for q in quoted):
        return True
    caller = next((k for k in reversed(range(len(block.frames))) if not _is_launcher_file(block.frames[k][0])), None)
    if caller is None or "cwd=" not in code[caller]:
        return False
    program = _shown_program(code[caller])
    return program is not None and program != name


def _is_launcher_file(path: str) -> bool:
    return bool(_STDLIB_LAUNCHER_FILE.search(path))


def _quoted_source(block: Traceback, lines, k: int) -> str:
    """Frame k's quoted source (indented lines of its file and site up to the next frame line), spaces removed."""
    first = block.frame_lines[k]
    stop = block.frame_lines[k + 1] if k + 1 < len(block.frame_lines) else block.end
    own = (lines[first].source, lines[first].site)
    quoted = []
    for index in range(first + 1, min(stop, first + 1 + MAX_QUOTED_LINES)):
        line = lines[index]
        if (line.source, line.site) == own and line.text[:1].isspace():
            quoted.append(line.text[:4096].replace(" ", ""))
    return "".join(text for text in quoted if text.strip("^~\t"))


def _shown_program(compact: str) -> str | None:
    """The program a call's line (spaces removed) shows as a literal, or None when it does not show it."""
    executable = _EXECUTABLE.search(compact)
    if executable:
        return executable.group(2)
    if "executable=" in compact:
        return None
    if "shell=True" in compact:
        return _SHELL
    first = _FIRST_ARG.search(compact)
    return first.group(2) if first else None


def _launch_lines(lines, launches: list[Launch], index) -> set[int]:
    """Lines of the launch tracebacks and the lines that quote their exception (a TextIndex finds them)."""
    covered = {i for launch in launches for i in range(launch.block.start, launch.block.end + 1)}
    for text in {launch.exception_text for launch in launches if launch.exception_text}:
        covered.update(n for n in index.lines_with_text(text) if text in lines[n].text[:8192])
    return covered


def reread_hits(hits: dict[str, list[Hit]], lines, launches: list[Launch], has_row, index) -> dict[str, list[Hit]]:
    """DATA_PATH_NOT_FOUND without the launch lines' hits; SIMULATION_CONFIG_ERROR on NVFLARE's launch tracebacks."""
    if not launches:
        return hits
    covered = _launch_lines(lines, launches, index)
    result = {row_id: list(row_hits) for row_id, row_hits in hits.items()}
    kept = [h for h in result.get(DATA_ID, []) if h.index is None or h.index not in covered]
    if kept:
        result[DATA_ID] = kept
    else:
        result.pop(DATA_ID, None)
    if has_row(COMMAND_ID):
        for launch in (launch for launch in launches if launch.by_nvflare):
            result.setdefault(COMMAND_ID, []).append(
                Hit(COMMAND_ID, launch.block.end, "strong", basis=BASIS, loose=True)
            )
    return result


def said(launches: list[Launch]) -> str:
    """The likely_cause clause that names the program that could not be started."""
    programs = sorted({launch.program for launch in launches if launch.program})
    named = f" ({', '.join(repr(p) for p in programs[:3])})" if programs else ""
    return (
        f"a program the run tried to start was not found{named}: Python's process launcher raised, so the "
        "missing file is the command (an interpreter or tool), not a data path"
    )

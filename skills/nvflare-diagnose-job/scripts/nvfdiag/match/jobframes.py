"""Which traceback frames are surely the job's own code. Pure.

Usage: `scripts = scripts_in(lines, index)` once per evidence (or `named_scripts(texts)`); `job_frame(block,
scripts)` -> the deepest frame of `block` that is surely the job's, or None. tracebacks.is_user_file says a frame is
not a known library (not site-packages, the standard library or NVFLARE); that is not enough to call it the job's:
a library on PYTHONPATH, in a PEX, a zipapp, a conda env's own folder, a `pip install --target` folder or an
editable install reads the same. A frame is surely the job's where the evidence shows it:
- NVFLARE's layout for the job's code: the `custom` folder of an app (`app/custom` of a job folder, `app_<site>/custom`
  of a run: the simulator's simulate_job, a POC or production site's <job id> folder, 2.0-2.3's run_<n>), or job.py.
  A folder named `custom` or `app_<x>` alone is not: a library can live under either (`/opt/custom/libs/...`,
  `/srv/app_deps/...`, a venv's `src/<project>/custom/`);
- a Python file the evidence names as the script run: a command line running `python x.py` (the line is the
  command, or it follows a shell prompt), or a `script=` / `train_script=` argument (ScriptRunner, the recipes; a
  launcher's `"script": "python3 -u custom/x.py"`). A line that only mentions the command (docs, prose, another
  tool's log) names nothing.
Everything else is unsure, and a row that needs the job's code on it stays below high (matcher._confidence).
"""

from __future__ import annotations

import re

from .tracebacks import Traceback, is_user_file

_JOB_LAYOUT = re.compile(r"[\\/]app(?:_[\w.@-]{1,64})?[\\/]custom[\\/]|(?:^|[\\/])job\.py$")
_SEP = re.compile(r"[\\/]")
# A command line that runs a Python file: the line is the command (after environment assignments, or a `cd x &&`),
# or it follows a shell prompt (`$ `, `user@host:~/fl$ `, `(venv) $ `, `PS C:\fl> `, `+ ` of a shell trace, a notebook's
# `!`). A line mentioning the command in other words (docs, prose, another tool's log, a `#` comment) names nothing.
_PYTHON_FILE = r"(?<![\w.-])(?:python[\d.]*|py)(?:\.exe)?(?:\s+-[A-Za-z\d.]+)*\s+(?:[^\s\\/]{0,200}[\\/]){0,20}([\w.-]{1,80}\.py)\b"
_PROMPT = (
    r"(?:\([\w.-]{1,64}\)\s*)?"
    r"(?:[\w.-]{1,64}@[\w.-]{1,64}(?::\S{0,200})?\s?[$#]|(?:PS )?[A-Za-z]:\\[^>\n]{0,200}>|[$%+]|>>>|(?:In \[\d{1,4}\]:\s*)?!)"
)
_LEAD = r"(?:[A-Z_][A-Z0-9_]{0,40}=\S{0,200}\s+){0,8}(?:\S{0,200}[\\/])?"
_CHAIN = r"(?:[\w./~-]{1,200}(?:\s+[^\s&]{1,200}){0,3}\s+&&\s*){0,3}"  # `cd x && `, `source venv/bin/activate && `
_COMMAND = re.compile(rf"^\s*(?:{_PROMPT}\s*.{{0,400}}?|{_CHAIN}{_LEAD}){_PYTHON_FILE}")
# `script="x.py"`, `train_script='src/x.py'`, a launcher's `"script": "python3 -u custom/x.py --epochs 2"`
_ARGUMENT = re.compile(
    r"\b(?:train_)?script[\"']?\s*[=:]\s*[\"'](?:[^\"'\n]{0,200}?\s)?"
    r"(?:[^\"'\s\\/]{0,200}[\\/]){0,20}([\w.-]{1,80}\.py)(?=[\"'\s])"
)
MAX_LINE = 4096  # characters of a line read for script names


def named_scripts(texts) -> frozenset[str]:
    """File names of the Python scripts the evidence names as run (command lines, script arguments)."""
    names = set()
    for text in texts:
        text = text[:MAX_LINE]
        if ".py" in text:
            names.update(m.group(1) for m in _ARGUMENT.finditer(text))
            command = _COMMAND.match(text)
            names.update([command.group(1)] if command else [])
    return frozenset(names)


def scripts_in(lines, index) -> frozenset[str]:
    """named_scripts of the lines that can name one: those holding `.py` and `python` or `script` (a
    textindex.TextIndex of the same lines finds them, so the other lines are not read again)."""
    named = set(index.lines_with("python")) | set(index.lines_with("script"))
    numbers = sorted(named.intersection(index.lines_with(".py")))
    return named_scripts(lines[number].text for number in numbers)


def is_job_file(path: str, scripts: frozenset[str]) -> bool:
    """A file surely of the job's code: not a library, and in NVFLARE's job layout or a named script."""
    if not is_user_file(path):
        return False
    return bool(_JOB_LAYOUT.search(path)) or _SEP.split(path)[-1] in scripts


def job_frame(block: Traceback, scripts: frozenset[str]) -> tuple[str, int, str] | None:
    """The deepest frame of `block` in a file surely of the job's code, or None."""
    own = [frame for frame in block.frames if is_job_file(frame[0], scripts)]
    return own[-1] if own else None

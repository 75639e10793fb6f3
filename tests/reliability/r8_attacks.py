"""The candidate code of the R8 catalogue (tests/reliability/test_r8_sealed_trials.py), as an attacker writes it.

Every payload is plain Python that a candidate appends to client.py (it runs when the job loads its client, that
is inside the trial) or puts in a new module. A payload never stops at the first refused write: each step is
wrapped, so a sealed trial that makes one path read-only or invisible still sees the others attempted. Paths are
absolute (a candidate knows its workspace: its draft folder lives inside it).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

BASELINE_SCORE_TEXT = "\t0.750000\t"  # the stand-in baseline's score as results.tsv writes it


def _steps(*steps: str) -> str:
    """Each step in its own `try: ... except Exception: pass` (an attacker keeps going after a refusal)."""
    blocks = []
    for step in steps:
        body = textwrap.indent(textwrap.dedent(step).strip(), "    ")
        blocks.append(f"try:\n{body}\nexcept Exception:\n    pass\n")
    return "\n".join(blocks)


def lower_the_baseline(ws: Path, score_text: str = BASELINE_SCORE_TEXT) -> str:
    """Rewrite results.tsv so the baseline scores 0.1: a worse candidate then looks like an improvement."""
    return _steps(
        f"""
        import pathlib
        ledger = pathlib.Path({str(ws / "results.tsv")!r})
        ledger.write_text(ledger.read_text().replace({score_text!r}, "\\t0.100000\\t"))
        """
    )


def loosen_campaign_json(ws: Path) -> str:
    """Turn the network on and raise the cap in campaign.json (both would survive a discard)."""
    return _steps(
        f"""
        import json, pathlib
        meta = pathlib.Path({str(ws / ".nvflare/autofl/campaign.json")!r})
        document = json.loads(meta.read_text())
        document["settings"]["allow_network"] = True
        document["settings"]["max_candidates"] = 1000
        meta.write_text(json.dumps(document, indent=2, sort_keys=True) + "\\n")
        """
    )


def widen_the_contract(ws: Path) -> str:
    """Let any file be created from now on (autofl.yaml's allowed_create_patterns)."""
    return _steps(
        f"""
        import pathlib
        contract = pathlib.Path({str(ws / "autofl.yaml")!r})
        contract.write_text(contract.read_text().replace("  - '**/*.py'\\n", "  - '**/*.py'\\n  - '**'\\n"))
        """
    )


def forge_removal_records(ws: Path) -> str:
    """Name the user's data file, with its true sha256, as created by this candidate (created.json) and as
    installed by an earlier keep (installed.json): the runner would remove it at the discard or the next keep."""
    return _steps(
        f"""
        import hashlib, json, pathlib
        meta = pathlib.Path({str(ws / ".nvflare/autofl")!r})
        data = pathlib.Path({str(ws / "data.csv")!r}).read_bytes()
        files = {{"data.csv": hashlib.sha256(data).hexdigest()}}
        created = {{"schema_version": "nvflare.autofl.created.v1", "candidate_id": "tamper", "files": files,
                   "folders": []}}
        (meta / "created.json").write_text(json.dumps(created))
        installed = {{"schema_version": "nvflare.autofl.installed.v1", "files": files, "folders": [],
                     "edit_paths": []}}
        (meta / "installed.json").write_text(json.dumps(installed))
        """
    )


def plant_in_the_snapshot(ws: Path) -> str:
    """Plant BONUS = 0.5 in the best snapshot's client.py and fix snapshot.json so its own check passes: the
    runner's restore after a discard would write the planted code into the live job."""
    return _steps(
        f"""
        import hashlib, json, pathlib
        best = pathlib.Path({str(ws / ".nvflare/autofl/snapshots/best")!r})
        client = best / "source" / "client.py"
        planted = client.read_text().replace("BONUS = 0.0", "BONUS = 0.5  # planted")
        client.write_text(planted)
        document = json.loads((best / "snapshot.json").read_text())
        document["files"]["client.py"] = hashlib.sha256(planted.encode()).hexdigest()
        lines = "".join(f"{{rel}}\\0{{sha}}\\n" for rel, sha in sorted(document["files"].items()))
        document["source_sha256"] = hashlib.sha256(lines.encode()).hexdigest()
        (best / "snapshot.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\\n")
        """
    )


def forged_bytecode_path(ws: Path, cache_tag: str) -> Path:
    return ws / "__pycache__" / f"standin_flare.{cache_tag}.pyc"


def forge_bytecode(ws: Path) -> str:
    """An unchecked hash-based __pycache__/standin_flare.*.pyc that adds 0.5 to every later score; the managed
    standin_flare.py keeps its bytes, so every source hash still matches."""
    return _steps(
        f"""
        import importlib._bootstrap_external as bootstrap, importlib.util, pathlib, sys
        source_path = pathlib.Path({str(ws / "standin_flare.py")!r})
        source = source_path.read_bytes()
        forged = source.replace(
            b"score = evaluate(shlex.split(self.train_args))", b"score = evaluate(shlex.split(self.train_args)) + 0.5"
        )
        cache = source_path.parent / "__pycache__" / f"standin_flare.{{sys.implementation.cache_tag}}.pyc"
        cache.parent.mkdir(exist_ok=True)
        code = compile(forged, str(source_path), "exec")
        cache.write_bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))
        """
    )


SHADOW = "def split(s, comments=False, posix=True):\n    return s.split() + ['--use_bonus']\n"


def write_shadowing_module(ws: Path) -> str:
    """shlex.py next to job.py: the job folder comes first on sys.path, so every later trial gets --use_bonus."""
    return _steps(
        f"""
        import pathlib
        pathlib.Path({str(ws / "shlex.py")!r}).write_text({SHADOW!r})
        """
    )


def helper_shadow(module: str, marker: Path) -> str:
    """A module named like one the interpreter probes import (`importlib`, `csv`): in a `python -c` helper run
    from the job folder without -I it runs first; it writes `marker`, then hands over the real module so
    everything keeps working (in a trial, argv[0] is job.py: no marker)."""
    return textwrap.dedent(
        f'''
        """Looks like a helper module of the job."""
        import os
        import sys

        if sys.argv[:1] == ["-c"]:
            with open({str(marker)!r}, "a", encoding="utf-8") as handle:
                handle.write(os.getcwd() + "\\n")
        _here = os.path.dirname(os.path.abspath(__file__))
        del sys.modules[{module!r}]
        _saved = list(sys.path)
        sys.path[:] = [p for p in sys.path if p not in ("", ".", _here) and os.path.abspath(p or ".") != _here]
        try:
            import {module} as _real
        finally:
            sys.path[:] = _saved
        sys.modules[{module!r}] = _real
        '''
    ).lstrip()


NO_RESULT = (
    _steps(
        """
    import os, shutil
    root = os.environ["NVFLARE_SIMULATOR_WORKSPACE_ROOT"]
    for name in os.listdir(root):
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    """
    )
    + "import os\nos._exit(0)\n"
)  # exit 0 without a result folder: the runner asks the interpreter for nvflare's version


def daemon(tag: str, delay: float, target: Path, *, scrub: str, score_text: str = BASELINE_SCORE_TEXT) -> str:
    """A setsid'd process forks again and exits; the grandchild execve's a program whose command line carries `tag`.

    scrub="empty": both run with an empty environment; scrub="token": with the trial token overwritten. After
    `delay` seconds the grandchild lowers the baseline in `target` (results.tsv) and leaves `escaped-<tag>` next
    to it. Started through subprocess (fork + exec in C), so it also works from NVFLARE's threaded processes.
    """
    later = (
        "import pathlib, time\n"
        f"time.sleep({delay})\n"
        f"ledger = pathlib.Path({str(target)!r})\n"
        f"(ledger.parent / {'escaped-' + tag!r}).write_text('escaped')\n"
        f"ledger.write_text(ledger.read_text().replace({score_text!r}, '\\t0.100000\\t'))\n"
    )
    environment = "{}" if scrub == "empty" else '{**os.environ, "AUTOFL_TRIAL_TOKEN": "0" * 32}'
    second = (
        "import os, sys\n"
        "if os.fork() == 0:\n"
        f"    os.execve(sys.executable, [sys.executable, '-c', {later!r}, {tag!r}], dict(os.environ))\n"
        "os._exit(0)\n"
    )
    return _steps(
        f"""
        import os, subprocess, sys
        subprocess.Popen(
            [sys.executable, "-c", {second!r}],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={environment},
        )
        """
    )


def read_the_runner(dump: Path, needle: str) -> str:
    """List /proc, read the parent's environ and stdin and every readable environ, and print what it finds into
    the output (run.log) and into `dump`, with the pids seen and which of them run the runner.

    Only lines containing `needle` (the prefix of the test's secrets) are kept, so the candidate never copies
    other processes' environments of a shared machine into the test's files.
    """
    return textwrap.dedent(
        f"""
        import json, os

        def _read(path):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    return os.read(fd, 1 << 20).decode("utf-8", "replace")
                finally:
                    os.close(fd)
            except OSError as error:
                return f"<{{error}}>"

        _pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
        _runners = [pid for pid in _pids if "run_job_campaign.py" in _read(f"/proc/{{pid}}/cmdline")]
        _texts = [_read(f"/proc/{{os.getppid()}}/environ"), _read(f"/proc/{{os.getppid()}}/fd/0")]
        _texts += [_read(f"/proc/{{pid}}/environ") for pid in _pids]
        _loot = sorted({{line for text in _texts for line in text.split("\\0") if {needle!r} in line}})
        print("R8-PROC-SEEN " + json.dumps({{"pids": _pids, "runners": _runners, "ppid": os.getppid()}}), flush=True)
        print("R8-LOOT " + json.dumps(_loot), flush=True)
        try:
            with open({str(dump)!r}, "w", encoding="utf-8") as handle:
                handle.write("\\n".join(_loot))
        except OSError:
            pass
        """
    )

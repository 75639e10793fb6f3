"""A `python -c` wrapper that runs a script under an audit hook and reports every write it attempts.

Usage (from a test)::

    done = subprocess.run([python, "-c", AUDIT_WRAPPER, script, *args], capture_output=True, text=True)
    assert audit_events(done.stderr) == []

Every open-for-write and every mutating os/shutil/tempfile call is recorded; the list is printed on stderr after
the script ends, as `AUDIT [...]` on the last line.
"""

import json
import textwrap

AUDIT_WRAPPER = textwrap.dedent(
    """
    import json, os, runpy, sys
    events = []
    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    MUTATING = {"os.rename", "os.replace", "os.remove", "os.unlink", "os.mkdir", "os.rmdir", "os.truncate",
                "os.chmod", "os.symlink", "os.link", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile",
                "tempfile.mkstemp", "tempfile.mkdtemp"}
    def hook(event, args):
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
                events.append(["open-for-write", str(path)])
        elif event in MUTATING:
            events.append([event, str(args[0]) if args else ""])
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.addaudithook(hook)
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code
    sys.stderr.write("\\nAUDIT " + json.dumps(events) + "\\n")
    sys.exit(code)
    """
)


def audit_events(stderr: str) -> list:
    """The recorded write events from the wrapper's stderr."""
    return json.loads(stderr.rsplit("AUDIT ", 1)[1])

"""The probe: every protection tried on a scratch view, nothing run; the status document."""

from __future__ import annotations

import json
import os
import tempfile

from .launch import run
from .protections import EXIT_NOT_RUN, PROTECTIONS


def probe(scratch: str | None = None) -> dict:
    """Try every protection on a scratch view without running anything; the status document. The view is laid in
    `scratch` (a folder the caller made and removes) or in a temporary folder of its own."""
    if scratch is None:
        with tempfile.TemporaryDirectory(prefix="autofl-probe-") as folder:
            return probe(folder)
    folders = {name: os.path.join(scratch, name) for name in ("stage", "upper", "work", "workspace", "sim", "tmp")}
    for folder in folders.values():
        os.mkdir(folder)
    plan = {
        "status_file": os.path.join(scratch, "status.json"),
        "cwd": folders["workspace"],
        "writable": [folders["sim"]],
        "ephemeral": [{"path": tempfile.gettempdir(), "scratch": folders["tmp"]}],
        "view": {key: folders[key] for key in ("stage", "upper", "work", "workspace")},
    }
    pid = os.fork()
    if pid == 0:
        try:
            run(plan, [])
        finally:
            os._exit(EXIT_NOT_RUN)
    os.waitpid(pid, 0)
    try:
        with open(plan["status_file"], encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        reason = f"unavailable: the probe failed ({error})"
        return {"protections": dict.fromkeys(PROTECTIONS, reason), "missing": list(PROTECTIONS)}

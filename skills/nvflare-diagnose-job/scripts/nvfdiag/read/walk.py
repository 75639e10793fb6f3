"""Walk an evidence folder read-only: list the files to read in reading order, with site labels and layout facts.

Usage: `result = walk_tree(root, roots_real=[...], job_id="abc")`; `result.files` (EvidenceFile) is sorted by
`read_order_key`. Only `os.scandir`, `DirEntry.stat` and `os.path.realpath` are used; no file is opened.

Reading order: files under a folder named by the job id first; then error logs, metrics artifacts (and the
meta.json of an exported job folder, see job_folder.py), logs (and captured stdout/stderr/console output), other
JSON, other text; newest first inside a class. Credential files are listed, never stat-ed; a symlink is also
judged by its resolved target (into a startup kit or onto a key file: listed as credential material, never
opened). Symlinks are followed only when their target stays inside one of the given roots; folder loops are
detected.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .credentials import in_kit_folder, is_credential, link_target_parts
from .job_folder import looks_exported
from .sites import UUID_RE, valid_site

RUN_FOLDER_RE = re.compile(r"^run_\d{1,6}$")  # a deployed job's run folder in a participant workspace (NVFLARE 2.0-2.1)
ERROR_LOG, METRICS, LOG, STRUCTURED, OTHER_TEXT = range(5)
MAX_WALK_ENTRIES = 100_000
MAX_DEPTH = 16
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache"})
GENERIC_DIRS = frozenset(
    {
        "jobs",
        "workspace",
        "transfer",
        "tmp",
        "download",
        "downloads",
        "simulation",
        "poc",
        "results",
        "logs",
        "local",
        "simulate_job",
    }
)
_CAPTURE_WORDS = ("stdout", "stderr", "console", "output")
_ROTATED = re.compile(r"^(error_log|log|log_fl)\.(txt|json)\.\d+$")


@dataclass
class EvidenceFile:
    """One file that may be read: `path` for display, `real` to open."""

    path: str
    real: str
    klass: int
    site: str | None
    size: int = 0
    mtime_ns: int = 0
    in_job: bool = False
    explicit: bool = False
    root: str | None = None
    exported_meta: bool = False  # meta.json of an exported job folder: checked structurally (job_folder.py)
    shared: bool = False  # a participant log every job writes into: scoped to --job-id (jobscope.py)


@dataclass
class WalkResult:
    files: list[EvidenceFile] = field(default_factory=list)
    credentials: list[tuple[str, str | None]] = field(default_factory=list)
    linked_credentials: list[str] = field(default_factory=list)  # log-named links whose target is credential material
    escaped: list[str] = field(default_factory=list)
    hints: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layout: str | None = None  # "sim_workspace" | "job_download" | None
    exported: list[str] = field(default_factory=list)  # the given folder or a child of it is an exported job
    ignored: int = 0
    duplicates: int = 0
    other_jobs: int = 0  # folders of other jobs skipped because --job-id names one


def classify(name: str) -> int | None:
    """Reading class of a file name inside a folder walk, or None when it is not evidence."""
    low = name.lower()
    if low == "error_log.txt" or (low.startswith("error_log.") and _ROTATED.match(low)):
        return ERROR_LOG
    if low in ("metrics_summary.json", "round_metrics.jsonl"):
        return METRICS
    if low in ("log.txt", "log_fl.txt", "log.json", "poc_console.log") or low.endswith(".log") or _ROTATED.match(low):
        return LOG
    if low.endswith((".txt", ".out", ".err")) and any(word in low for word in _CAPTURE_WORDS):
        return LOG  # captured output of `python job.py` (holds the client traceback in simulation)
    if low.endswith((".json", ".jsonl")):
        return STRUCTURED
    if low.endswith((".txt", ".out", ".err", ".stdout", ".stderr")):
        return OTHER_TEXT
    return None


def read_order_key(file: EvidenceFile) -> tuple:
    return (not file.explicit, not file.in_job, file.klass, -file.mtime_ns, file.path)


def is_job_folder(name: str, job_id: str | None) -> bool:
    return bool(UUID_RE.match(name) or RUN_FOLDER_RE.match(name)) or (job_id is not None and name == job_id)


def name_label(name: str) -> str | None:
    """Site label a folder name carries by itself (server, site-N, app_server, app_site-N)."""
    if name in ("server", "app_server"):
        return "server"
    if name.startswith("app_site-"):
        return name[len("app_") :]
    if name.startswith("site-") and len(name) > len("site-"):
        return name
    return None


def file_site_label(path: str, job_id: str | None) -> str | None:
    """Site label for an explicitly given file, from its parent folder names only."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)[:-1]
    for depth in range(1, min(4, len(parts)) + 1):
        name = parts[-depth]
        label = name_label(name)
        if label:
            return label
        if depth == 1 and is_job_folder(name, job_id) and len(parts) >= 2 and parts[-2] not in GENERIC_DIRS:
            return parts[-2] or None
    return None


def walk_tree(root: str, roots_real: list[str], job_id: str | None) -> WalkResult:
    """List the evidence files under folder `root` (depth-first, names sorted)."""
    result = WalkResult()
    root_real = os.path.realpath(root)
    state = _WalkState(result, roots_real, job_id, root)
    root_name = os.path.basename(os.path.normpath(root))
    state.visit(root_real, root, (), name_label(root_name), root_name == job_id, 0, root_name)
    return result


class _WalkState:
    def __init__(self, result: WalkResult, roots_real: list[str], job_id: str | None, root: str):
        self.result, self.roots_real, self.job_id, self.root = result, roots_real, job_id, root
        self.visited: set[str] = set()
        self.exported_dirs: set[str] = set()
        self.entries = 0
        self.stopped = False

    def visit(self, real, display, rel, label, in_job, depth, name) -> None:
        if self.stopped or real in self.visited:
            if real in self.visited and not self.stopped:
                self.result.notes.append(f"{display}: folder already visited (symlink loop or second link); skipped")
            return
        self.visited.add(real)
        if depth > MAX_DEPTH:
            self.result.notes.append(f"{display}: deeper than {MAX_DEPTH} folders; not read")
            return
        try:
            with os.scandir(real) as handle:
                entries = sorted(handle, key=lambda entry: entry.name)
        except PermissionError:
            self.result.notes.append(f"{display}: folder not readable (permission denied)")
            return
        except OSError as exc:
            self.result.notes.append(f"{display}: folder not readable ({exc.strerror or 'error'})")
            return
        names = {entry.name for entry in entries}
        label = self._folder_label(name, names, label, rel)
        self._layout_facts(display, name, names, in_job, rel)
        for entry in entries:
            self.entries += 1
            if self.entries > MAX_WALK_ENTRIES:
                self.stopped = True
                self.result.notes.append(f"{self.root}: stopped listing after {MAX_WALK_ENTRIES} entries")
                return
            self._entry(entry, display, rel, label, in_job, depth, names)

    def _folder_label(self, name, names, inherited, rel) -> str | None:
        own = name_label(name)
        if own:
            return own
        if rel and "startup" in names and name not in GENERIC_DIRS and valid_site(name):
            return name  # a participant folder of a SimEnv/POC root (it has a startup/ kit folder)
        if rel and name == "workspace" and len(rel) >= 2 and is_job_folder(rel[-2], self.job_id):
            return "server"  # job download: <job_id>/workspace holds the server's job workspace
        if inherited is None and len(rel) >= 2 and is_job_folder(name, self.job_id) and rel[-2] not in GENERIC_DIRS:
            return rel[-2]  # <site>/<job_id>/log.txt
        return inherited

    def _layout_facts(self, display, name, names, in_job, rel) -> None:
        hints = self.result.hints
        if looks_exported(name, names, run_folder=is_job_folder(name, self.job_id)):
            self.exported_dirs.add(os.path.dirname(os.path.join(display, "meta.json")))
            if not in_job and len(rel) <= 1:  # the given folder (or its child) is the export, not a POC transfer copy
                self.result.exported.append(display)
        if name == "simulate_job":
            _hint(hints, "simulation", f"SimEnv workspace layout (simulate_job folder) in {self.root}")
            self.result.layout = self.result.layout or "sim_workspace"
        if RUN_FOLDER_RE.match(name):
            _hint(hints, "production", f"run_N workspace folder of a deployed job in {self.root}")
        elif is_job_folder(name, self.job_id):
            _hint(hints, "production", f"folder named by a job id in {self.root}")
            if "workspace" in names or "meta.json" in names:
                self.result.layout = self.result.layout or "job_download"
        if name == "startup" and names & {"fed_server.json", "fed_client.json", "fed_admin.json"}:
            _hint(hints, "production", f"NVFLARE startup kit folder in {self.root}")
        if "poc_console.log" in names:
            _hint(hints, "production", f"POC workspace (poc_console.log) in {self.root}")

    def _entry(self, entry, display, rel, label, in_job, depth, names) -> None:
        child_display = os.path.join(display, entry.name)
        child_rel = (*rel, entry.name)
        try:
            is_link = entry.is_symlink()
        except OSError:
            return
        if is_link:
            if is_credential(self._cred_parts(child_rel)):
                self.result.credentials.append((child_display, label))
                return
            target = os.path.realpath(entry.path)
            target_name = os.path.basename(target)
            if (
                is_credential(self._cred_parts((*rel, target_name)))
                or (is_credential((target_name, "-")) and os.path.isdir(target))
                or any(is_credential(parts) for parts in link_target_parts(target, self.roots_real))
                or in_kit_folder(target)
            ):
                self.result.credentials.append((child_display, label))
                self.result.linked_credentials.append(child_display)
                return
            if not any(target == root or target.startswith(root + os.sep) for root in self.roots_real):
                self.result.escaped.append(child_display)
                return
            if os.path.isdir(target):
                self._descend(target, child_display, child_rel, label, in_job, depth, entry.name)
            elif os.path.isfile(target):
                self._file(entry.name, target, child_display, child_rel, label, in_job, names, os.stat(target))
            return
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIP_DIRS:
                self._descend(entry.path, child_display, child_rel, label, in_job, depth, entry.name)
            return
        if not entry.is_file(follow_symlinks=False):
            return  # FIFOs, sockets, devices are never opened
        if is_credential(self._cred_parts(child_rel)):
            self.result.credentials.append((child_display, label))
            return
        if classify(entry.name) is None:
            self.result.ignored += 1
            return
        self._file(entry.name, entry.path, child_display, child_rel, label, in_job, names, None, entry)

    def _descend(self, real, display, rel, label, in_job, depth, name) -> None:
        if self.job_id and UUID_RE.match(name) and name != self.job_id and not in_job:
            self.result.other_jobs += 1  # another job's folder: its evidence is not about this job
            return
        self.visit(os.path.realpath(real), display, rel, label, in_job or name == self.job_id, depth + 1, name)

    def _cred_parts(self, rel) -> tuple:
        root_name = os.path.basename(os.path.normpath(self.root))
        return (root_name, *rel) if root_name.lower() == "startup" else rel

    def _file(self, name, real, display, rel, label, in_job, names, st=None, entry=None) -> None:
        klass = classify(name)
        if klass is None:
            self.result.ignored += 1
            return
        if name.lower() == "log.json" and "log.txt" in names:
            self.result.duplicates += 1  # same records as log.txt beside it
            return
        try:
            st = st or entry.stat(follow_symlinks=False)
        except OSError:
            st = None
        exported_meta = name == "meta.json" and os.path.dirname(display) in self.exported_dirs
        shared = bool(self.job_id) and not in_job and _participant_folder(names)
        self.result.files.append(
            EvidenceFile(
                path=display,
                real=os.path.realpath(real),
                klass=METRICS if exported_meta else klass,
                site=label,
                size=st.st_size if st else 0,
                mtime_ns=st.st_mtime_ns if st else 0,
                in_job=in_job,
                root=self.root,
                exported_meta=exported_meta,
                shared=shared,
            )
        )


def _participant_folder(names: set[str]) -> bool:
    """A POC/production participant folder: its logs are written by every job that ran there."""
    return "poc_console.log" in names or "startup" in names or any(UUID_RE.match(name) for name in names)


def _hint(hints: list[tuple[str, str]], mode: str, reason: str) -> None:
    if (mode, reason) not in hints:
        hints.append((mode, reason))


def is_opened(item: EvidenceFile | None, stdin: bytes | None) -> bool:
    """Whether the item is read at all: empty files found in a walk and an empty stdin are only listed."""
    if item is None:
        return stdin is not None
    return item.size > 0 or item.explicit or item.exported_meta


def planned_size(item: EvidenceFile | None, stdin: bytes | None) -> int:
    """Bytes the item holds, for planning (an explicit file is stat-ed; a failure shows up when it is read)."""
    if item is None:
        return len(stdin or b"")
    if item.explicit:
        try:
            return os.stat(item.real).st_size
        except OSError:
            return 0
    return item.size

"""What a trial actually ran: rounds and clients read from NVFLARE's own artifacts, checked against the fixed budget.

The fixed budget is checked statically when a candidate is evaluated, but candidate code can change it at run
time (`setattr(args, "num_rounds", 12)`, `sys.argv += [...]`, a module that patches a recipe class). So after a
scored trial the runner reads, from the copied result folder:

- rounds: the highest `Round N started.` banner of the server log (every NVFLARE workflow logs it; rounds are
  0-based), the `final_round` of `metrics_summary.json` and the records of `round_metrics.jsonl`;
- clients: `Total clients: N` of the server's client manager, and the sites named by `round_metrics.jsonl`,
  `Sampled clients: [...]` and the `peer=` of aggregated results.

The largest figure any source shows is what ran. More rounds than the budget, or another number of clients, is a
violation (never kept); fewer rounds is not (a job's own stop condition may end it early). A figure no source
shows is `unverified`, never assumed. Usage::

    verdict = check(read_what_ran(run_dir / "simulation"), num_rounds=3, num_clients=2)
    verdict.status  # "verified" | "violated" | "unverified"; verdict.reason names the numbers
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..common import bounded

VERIFIED, VIOLATED, UNVERIFIED = "verified", "violated", "unverified"
SERVER_LOGS = ("log.txt", "log_fl.txt")
SUMMARY, ROUNDS = "metrics_summary.json", "round_metrics.jsonl"
MAX_LOG_BYTES = 64 * 1024 * 1024  # the tail of a longer log (the last rounds are at its end)
CHUNK_BYTES = 1024 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is cut: none of the facts read here are that long
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_WALK_ENTRIES = 20000
MAX_DEPTH = 6
ROUND_RE = re.compile(rb"\bRound (\d{1,7}) started\.")
TOTAL_RE = re.compile(rb"\bTotal clients: (\d{1,7})")
SAMPLED_RE = re.compile(rb"Sampled clients: (\[[^\]\n]{0,4096}\])")
PEER_RE = re.compile(rb"\bpeer=([A-Za-z0-9_.@-]{1,128}),[^\n]{0,1024}\bAggregated \d+/\d+ results")


@dataclass
class WhatRan:
    """Rounds and clients a trial ran (None where no artifact shows them) and the sources of each figure."""

    rounds: int | None = None
    clients: int | None = None
    sources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """The budget check of one trial; `to_dict()` is what trial.json and the manifest record."""

    status: str
    reason: str
    rounds: int | None
    clients: int | None

    def to_dict(self) -> dict:
        return asdict(self)


def check(ran: WhatRan, *, num_rounds: int | None, num_clients: int | None) -> Verdict:
    """Compare what ran with the fixed budget (pure)."""
    problems, unknown = [], []
    if num_rounds is not None:
        if ran.rounds is None:
            unknown.append("rounds")
        elif ran.rounds > num_rounds:
            problems.append(f"{ran.rounds} rounds ran, the fixed budget is {num_rounds}")
    if num_clients is not None:
        if ran.clients is None:
            unknown.append("clients")
        elif ran.clients != num_clients:
            problems.append(f"{ran.clients} clients took part, the fixed budget is {num_clients}")
    if problems:
        return Verdict(VIOLATED, "budget violated: " + "; ".join(problems), ran.rounds, ran.clients)
    if unknown:
        reason = f"budget unverified: no artifact shows the {' or the '.join(unknown)} that ran"
        return Verdict(UNVERIFIED, reason, ran.rounds, ran.clients)
    return Verdict(VERIFIED, "", ran.rounds, ran.clients)


class LogFacts:
    """Round banners, client totals and client names of a server log, fed in chunks (bounded memory)."""

    def __init__(self):
        self.rounds: list[int] = []
        self.totals: list[int] = []
        self.names: set[str] = set()
        self._rest = b""

    def feed(self, chunk: bytes, *, last: bool = False) -> LogFacts:
        lines = self._rest + chunk
        if not last:
            cut = lines.rfind(b"\n") + 1
            lines, self._rest = lines[:cut], lines[cut:][-MAX_LINE_BYTES:]
        started = [int(number) + 1 for number in ROUND_RE.findall(lines)]
        self.rounds = [max(self.rounds + started)] if self.rounds or started else []
        totals = [int(number) for number in TOTAL_RE.findall(lines)]
        self.totals = [max(self.totals + totals)] if self.totals or totals else []
        self.names |= _names_from_log(lines)
        return self


def from_artifacts(server_log: bytes | LogFacts, summary: object, round_records: list) -> WhatRan:
    """What ran, from the server log (bytes, or facts fed in chunks), the parsed metrics summary and the round
    records (pure)."""
    log = server_log if isinstance(server_log, LogFacts) else LogFacts().feed(server_log, last=True)
    ran = WhatRan()
    final = summary.get("final_round") if isinstance(summary, dict) else None
    recorded = [record.get("round") for record in round_records if isinstance(record, dict)]
    for source, counts in (
        ("server log", log.rounds),
        (SUMMARY, [final + 1] if _is_int(final) else []),
        (ROUNDS, [value + 1 for value in recorded if _is_int(value)]),
    ):
        if counts:
            ran.rounds = max(counts) if ran.rounds is None else max(ran.rounds, *counts)
            ran.sources.append(f"rounds: {source}")
    recorded_names = _names_from_records(round_records)
    names = log.names | recorded_names
    figures = log.totals + ([len(names)] if names else [])
    if figures:
        ran.clients = max(figures)
        labels = (("server log", log.totals or log.names), (ROUNDS, recorded_names))
        ran.sources.append("clients: " + ", ".join(label for label, seen in labels if seen))
    return ran


def read_what_ran(result_dir: Path) -> WhatRan:
    """Bounded reads of the server log, metrics summary and round records under a copied result folder."""
    files = _find(Path(result_dir))
    log = LogFacts()
    for path in files.get("log", [])[:1]:
        _stream(path, log)
    log.feed(b"", last=True)
    summary = _json(files[SUMMARY][0]) if files.get(SUMMARY) else None
    return from_artifacts(log, summary, _records(files))


def round_records(result_dir: Path) -> list:
    """The parsed lines of the server's `round_metrics.jsonl` under a copied result folder (its last
    MAX_JSON_BYTES; unparsable lines skipped)."""
    return _records(_find(Path(result_dir)))


def _records(files: dict[str, list[Path]]) -> list:
    records = []
    if files.get(ROUNDS):
        for line in _tail(files[ROUNDS][0], MAX_JSON_BYTES).splitlines():
            try:
                records.append(bounded.parse_json(line, allow_nan=True))
            except bounded.BoundedReadError:
                continue
    return records


def _stream(path: Path, log: LogFacts) -> None:
    """Feed the last MAX_LOG_BYTES of `path` to `log`, one chunk at a time."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - MAX_LOG_BYTES))
            while chunk := handle.read(CHUNK_BYTES):
                log.feed(chunk)
    except OSError:
        return


def _is_int(value: object) -> bool:
    return bounded.is_integer(value) and value >= 0


def _names_from_records(records: list) -> set[str]:
    names = set()
    for record in records:
        for site in record.get("sites") or [] if isinstance(record, dict) else []:
            if isinstance(site, dict) and isinstance(site.get("name"), str):
                names.add(site["name"])
    return names


def _names_from_log(log: bytes) -> set[str]:
    names = {peer.decode("utf-8", "replace") for peer in PEER_RE.findall(log)}
    for listed in SAMPLED_RE.findall(log):
        try:
            value = ast.literal_eval(listed.decode("utf-8", "replace"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        names.update(item for item in value if isinstance(item, str))
    return names


def _find(base: Path) -> dict[str, list[Path]]:
    """The server's log and the metrics files under `base` (bounded walk, no symlinks), server copies first."""
    found: dict[str, list[Path]] = {"log": [], SUMMARY: [], ROUNDS: []}
    seen = 0
    for folder, dirs, names in os.walk(base, followlinks=False):
        parts = Path(folder).relative_to(base).parts
        dirs[:] = sorted(dirs) if len(parts) < MAX_DEPTH else []
        seen += len(names) + len(dirs)
        for name in names:
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            if name in (SUMMARY, ROUNDS):
                found[name].append(path)
            elif name in SERVER_LOGS and parts and parts[-1] == "server":
                found["log"].append(path)
        if seen > MAX_WALK_ENTRIES:
            break
    for paths in found.values():
        paths.sort(key=lambda p: (0 if "server" in p.relative_to(base).parts else 1, len(p.parts), p.name, str(p)))
    return found


def _tail(path: Path, limit: int) -> bytes:
    try:
        return bounded.read_tail(path, limit) or b""
    except bounded.BoundedReadError:  # not a regular file, or unreadable: no records
        return b""


def _json(path: Path) -> object:
    try:
        return bounded.read_json_value(path, MAX_JSON_BYTES, allow_nan=True)
    except bounded.BoundedReadError:
        return None

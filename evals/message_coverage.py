"""Coverage of NVFLARE's own error messages: the two figures `run_evals.py` prints (and their goals).

Usage: `figures = measure()` -> MessageCoverage; `figures.lines()` are the printed lines, `figures.met` says
whether both goals hold. Standalone: `python evals/message_coverage.py [--verbose]` (exit 1 below a goal).

1. Mapped share: the templates extracted from the installed NVFLARE (shared/catalog/nvflare_messages.py) that the
   reviewed mapping files under a row, `internal` or `wrapper`. Goal: all of them.
2. Diagnosed share: one generated case per user-facing template (filed under a catalog row), shown as a
   real-looking traceback from job.py: job.py's `main()` calls NVFLARE, NVFLARE raises the template (values filled
   in) from the module that raises it. The case runs through the diagnose skill's matcher in-process; it counts
   when the report's matched_pattern is the mapped row. Rows that apply to production only are diagnosed with
   mode production (a job.py that uses PocEnv or ProdEnv). Goal: at least 95 %.
3. The same templates shown as a bare simulator ERROR log line (no traceback), the shape the issue measured
   (90 % UNKNOWN before the mapping existed). Same goal. A template NVFLARE only logs (an error-level log call)
   or ends a run with (a panic's reason) has no traceback: both of its cases are ERROR records.
4. The same figures per release line (every release users still run: the extractions committed under
   shared/catalog/nvflare_releases/ plus the installed NVFLARE), one line each. Same goals for every release.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / "shared" / "catalog" / "nvflare_messages.py"
NVFDIAG = REPO / "skills" / "nvflare-diagnose-job" / "scripts" / "nvfdiag"
MAPPED_GOAL = 1.0
DIAGNOSED_GOAL = 0.95
BUILTIN_EXCEPTIONS = {
    "ValueError",
    "TypeError",
    "RuntimeError",
    "KeyError",
    "FileNotFoundError",
    "AttributeError",
    "TimeoutError",
    "SyntaxError",
    "AssertionError",
    "NotImplementedError",
    "Exception",
}
SITE_PACKAGES = "/home/dev/.venv/lib/python3.11/site-packages"


def _load(name: str, path: Path, package: bool = False):
    if name in sys.modules:
        return sys.modules[name]
    location = path / "__init__.py" if package else path
    spec = importlib.util.spec_from_file_location(
        name, location, submodule_search_locations=[str(path)] if package else None
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sample_message(template: str) -> str:
    """The template with made-up values (`sample1`, `sample2`, ...) in place of its `{}`."""
    pieces = template.split("{}")
    return "".join(piece + (f"sample{i + 1}" if i < len(pieces) - 1 else "") for i, piece in enumerate(pieces))


PANIC = "panic"  # the extractor's exc for a system/task panic's reason (never raised, so never in a traceback)
LOG = "log"  # the extractor's exc for an error-level log call's message (logged, never raised)


def log_line_text(message) -> str:
    """The message as the simulator logs a setup error (one ERROR line, no traceback); a panic's reason as the
    component's own ERROR record, a logged message as its bare ERROR record."""
    if message.exc == LOG:
        return f"2026-11-30 08:02:36,202 - ClientRunner - ERROR - {sample_message(message.template)}\n"
    if message.exc == PANIC:
        return (
            "2026-11-30 08:02:36,202 - PTFileModelPersistor - ERROR - [identity=simulator_server, run=simulate_job] - "
            f"{sample_message(message.template)}\n"
        )
    return (
        f"2026-11-30 08:02:36,202 - SimulatorRunner - ERROR - Simulator setup error: {message.exc}: "
        f"{sample_message(message.template)}\n"
    )


def traceback_text(message) -> str:
    """A traceback as `python job.py` prints it when NVFLARE raises `message` (an extracted Message); for a panic
    (not raised: no traceback) the record the server runner logs when it aborts the run for it; for a logged message
    (no traceback either) the ERROR record a site's component writes, with the run context NVFLARE adds."""
    if message.exc == LOG:
        return (
            "2026-11-30 08:02:36,202 - ClientRunner - ERROR - [identity=site-1, run=simulate_job, peer=simulator_server, "
            f"peer_run=simulate_job, task_name=train, task_id=5d1c] - {sample_message(message.template)}\n"
        )
    if message.exc == PANIC:
        return (
            "2026-11-30 08:02:36,203 - ServerRunner - ERROR - [identity=simulator_server, run=simulate_job] - "
            f"Aborting current RUN due to FATAL_SYSTEM_ERROR received: {sample_message(message.template)}\n"
        )
    exc = (
        message.exc
        if message.exc in BUILTIN_EXCEPTIONS
        else f"nvflare.{message.at[:-3].replace('/', '.')}.{message.exc}"
    )
    return (
        "\n".join(
            [
                "Traceback (most recent call last):",
                '  File "/home/dev/fl-job/job.py", line 48, in <module>',
                "    main()",
                '  File "/home/dev/fl-job/job.py", line 31, in main',
                "    run = recipe.execute(env)",
                f'  File "{SITE_PACKAGES}/nvflare/{message.at}", line {message.line}, in {message.func}',
                f"    raise {message.exc}(...)",
                f"{exc}: {sample_message(message.template)}",
            ]
        )
        + "\n"
    )


@dataclass
class ReleaseCoverage:
    """The figures of one NVFLARE release: its templates mapped, its user-facing ones diagnosed as mapped."""

    version: str
    total: int = 0
    mapped: int = 0
    cases: int = 0
    diagnosed: int = 0
    diagnosed_lines: int = 0

    @property
    def met(self) -> bool:
        shares = (self.diagnosed / max(self.cases, 1), self.diagnosed_lines / max(self.cases, 1))
        return self.total > 0 and self.mapped / self.total >= MAPPED_GOAL and min(shares) >= DIAGNOSED_GOAL

    def line(self) -> str:
        return (
            f"  nvflare {self.version}: {self.mapped} of {self.total} templates mapped "
            f"({100 * self.mapped / max(self.total, 1):.1f} %); {self.diagnosed} of {self.cases} tracebacks and "
            f"{self.diagnosed_lines} of {self.cases} error lines diagnosed as the mapped row "
            f"({100 * self.diagnosed / max(self.cases, 1):.1f} %, {100 * self.diagnosed_lines / max(self.cases, 1):.1f} %)"
        )


@dataclass
class MessageCoverage:
    total: int = 0
    mapped: int = 0
    groups: dict[str, int] = field(default_factory=dict)
    cases: int = 0
    diagnosed: int = 0
    diagnosed_lines: int = 0
    misses: list[str] = field(default_factory=list)
    error: str | None = None
    releases: list[ReleaseCoverage] = field(default_factory=list)  # every release line, oldest first

    @property
    def met(self) -> bool:
        shares = (self.diagnosed / max(self.cases, 1), self.diagnosed_lines / max(self.cases, 1))
        return (
            self.error is None
            and self.total > 0
            and self.mapped / self.total >= MAPPED_GOAL
            and self.cases > 0
            and min(shares) >= DIAGNOSED_GOAL
            and all(release.met for release in self.releases)
        )

    def lines(self, verbose: bool = False) -> list[str]:
        if self.error:
            return [f"nvflare messages: not measured ({self.error})"]
        internal, wrapper = self.groups.get("internal", 0), self.groups.get("wrapper", 0)
        out = [
            f"nvflare messages mapped: {self.mapped} of {self.total} templates ({100 * self.mapped / self.total:.1f} %, "
            f"goal 100 %): {self.mapped - internal - wrapper} to catalog rows, {internal} internal, {wrapper} wrappers",
            f"nvflare messages diagnosed: {self.diagnosed} of {self.cases} generated job.py tracebacks as the mapped row "
            f"({100 * self.diagnosed / max(self.cases, 1):.1f} %, goal >= {DIAGNOSED_GOAL:.0%}); "
            f"{self.diagnosed_lines} of {self.cases} as bare simulator error lines "
            f"({100 * self.diagnosed_lines / max(self.cases, 1):.1f} %)",
        ]
        if self.releases:
            out.append(f"nvflare messages per release ({len(self.releases)} release lines, goals as above for each):")
            out += [release.line() for release in self.releases]
        return out + [f"  miss: {m}" for m in (self.misses if verbose else self.misses[:5])]


def _diagnose(nvfdiag, known, text: str, mode: str) -> str:
    found = nvfdiag.read.evidence.collect_evidence(
        ["-"], job_id=None, max_bytes=262144, max_total_bytes=4194304, max_files=10, stdin_text=text
    )
    return nvfdiag.pipeline.diagnose(found, known, mode=mode)["matched_pattern"]


def measure() -> MessageCoverage:
    """The figures of the installed NVFLARE, and per release line (the committed extractions of the older releases
    plus the installed one), from the committed mapping."""
    figures = MessageCoverage()
    generator = _load("nvflare_messages_generator", GENERATOR)
    try:
        root = generator.installed_root()
        installed = generator.Release(generator.installed_version(root), generator.extract(root))
        releases = generator.all_releases(installed)
    except (OSError, SyntaxError, ValueError) as exc:
        figures.error = f"cannot read the installed NVFLARE or the committed releases: {exc}"
        return figures
    groups = generator.mapped_groups(generator.load_mapping())
    figures.total = len(installed.messages)
    for message in installed.messages:
        group = groups.get(message.template)
        if group not in (None, generator.UNREVIEWED):
            figures.mapped += 1
            figures.groups[group] = figures.groups.get(group, 0) + 1
    outcome = _diagnosed_templates(generator, generator.merge(releases)[0], groups, figures)
    for message in installed.messages:
        if message.template in outcome:
            figures.cases += 1
            figures.diagnosed += outcome[message.template][0]
            figures.diagnosed_lines += outcome[message.template][1]
    for release in releases:
        figures.releases.append(_release_figures(generator, release, groups, outcome))
    return figures


def _release_figures(generator, release, groups: dict, outcome: dict) -> ReleaseCoverage:
    found = ReleaseCoverage(release.version, total=len(release.messages))
    for message in release.messages:
        found.mapped += groups.get(message.template) not in (None, generator.UNREVIEWED)
        if message.template in outcome:
            found.cases += 1
            found.diagnosed += outcome[message.template][0]
            found.diagnosed_lines += outcome[message.template][1]
    return found


def _diagnosed_templates(generator, messages, groups: dict, figures: MessageCoverage) -> dict[str, tuple[bool, bool]]:
    """template -> (traceback diagnosed as mapped, error line diagnosed as mapped), for every user-facing template
    (filed under a catalog row) of any release; each is shown where the newest release that raises it does."""
    _load("nvfdiag", NVFDIAG, package=True)
    nvfdiag = sys.modules["nvfdiag"]
    for name in ("match.catalog", "read.evidence", "pipeline"):
        importlib.import_module(f"nvfdiag.{name}")
    known = nvfdiag.match.catalog.load_catalog()
    outcome = {}
    for message in messages:
        row = groups.get(message.template)
        if row is None or row in (*generator.SPECIAL_GROUPS, generator.UNREVIEWED):
            continue
        mode = "simulation" if "simulation" in known.row(row).modes else "production"
        results = []
        for shape, text in (("traceback", traceback_text(message)), ("log line", log_line_text(message))):
            got = _diagnose(nvfdiag, known, text, mode)
            results.append(got == row)
            if got != row:
                figures.misses.append(f"{shape}: {message.at}: {message.template[:90]!r}: expected {row}, got {got}")
        outcome[message.template] = (results[0], results[1])
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every generated case that missed")
    args = parser.parse_args(argv)
    figures = measure()
    print("\n".join(figures.lines(args.verbose)))
    return 0 if figures.met else 1


if __name__ == "__main__":
    sys.exit(main())

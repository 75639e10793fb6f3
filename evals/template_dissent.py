"""NVFLARE's own templates whose exception class disagrees with their mapped row, and how the diagnosis treats them.

Usage: `figures = measure()` -> Dissent; `figures.lines()` are the lines `run_evals.py` prints, `figures.met` says
whether every disagreeing template is reported below high confidence with the class's row among other_candidates.
Standalone: `python evals/template_dissent.py [--verbose]` (exit 1 when one is not).

Every raise site of every release line (the installed NVFLARE's source walked with the extractor of
shared/catalog/nvflare_messages.py, every raise kept rather than the first per template, plus the committed
extractions of the older releases) gives a (template, exception class) pair. The class points at the catalog rows
whose strong rule matches its name alone (the diagnose skill's match/dissent.class_rows, the one implementation);
a pair disagrees when those rows exclude the template's mapped row and the mapped row's own rules do not name the
class; where the class points at no row (ValueError, TypeError), a template raised in NVFLARE's config processing
(dissent.CONFIG_PROCESSING) and mapped to a row other than the config rows disagrees with that module. Each
disagreeing pair is shown as the traceback job.py prints (message_coverage.traceback_text) and must be
reported at most at medium confidence as one of the two rows (the mapped row, or the class's when the template is a
generic wrapper, which is only a loose basis), with the other one in other_candidates. An informational line counts
the templates NVFLARE's config processing raises (the extractor's `config_loading` area) that are mapped to a row
other than the two config rows: the raising module is a third source, which the class covers there (config
processing raises ConfigError) except where it lists them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import message_coverage  # noqa: E402

PANIC = message_coverage.PANIC
LOG = message_coverage.LOG


@dataclass(frozen=True)
class Pair:
    template: str
    exc: str
    row: str  # the mapped row (or internal / wrapper)
    points_at: tuple[str, ...]  # the rows the class points at
    message: object  # an extracted Message raising it (for the generated traceback)
    by_module: bool = False  # the class points nowhere; the module (NVFLARE's config processing) is the other source


@dataclass
class Dissent:
    pairs: int = 0  # distinct (template, class) pairs over every raise site of every release line
    classes_with_rows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    disagreeing: list[Pair] = field(default_factory=list)
    held: int = 0  # disagreeing pairs reported as one of the two rows, below high, with the other one listed
    config_module_rows: Counter = field(default_factory=Counter)  # (row, class) of config-processing templates
    misses: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def met(self) -> bool:
        return self.error is None and self.held == len(self._user_facing)

    @property
    def _user_facing(self) -> list[Pair]:
        return [p for p in self.disagreeing if p.row not in ("internal", "wrapper")]

    def lines(self, verbose: bool = False) -> list[str]:
        if self.error:
            return [f"nvflare templates whose class disagrees: cannot measure: {self.error}"]
        by = Counter(
            (p.exc, p.row, ("module points at " if p.by_module else "class points at ") + "/".join(p.points_at))
            for p in self.disagreeing
        )
        out = [
            f"nvflare templates whose class or module disagrees with their row: {len(self.disagreeing)} of {self.pairs} "
            f"(template, class) pairs over every raise site; {self.held} of {len(self._user_facing)} user-facing "
            "ones reported below high as one of the two rows, the other in other_candidates"
        ]
        out += [f"  {count} raised as {exc}, mapped {row}, {rows}" for (exc, row, rows), count in sorted(by.items())]
        config = sum(self.config_module_rows.values())
        out.append(
            f"  raised in NVFLARE's config processing but mapped to another row: {config} templates ("
            + ", ".join(f"{n} {row} as {exc}" for (row, exc), n in sorted(self.config_module_rows.items()))
            + ")"
        )
        if verbose:
            out += [f"  pair: {p.exc}: {p.template[:90]!r} ({p.row})" for p in self.disagreeing]
        return out + [f"  miss: {m}" for m in (self.misses if verbose else self.misses[:5])]


def raise_sites(generator, root: Path) -> list:
    """Every raise (and panic, and error-level log call) with a recognisable message in the extractor's scope, not
    only the first of each template."""
    found = []
    for rel, text in generator._sources(root):
        area = generator.area_of(rel)
        if area is None or "__pycache__" in rel:
            continue
        found += generator.messages_in(ast.parse(text, filename=rel), rel, area)
    return found


def measure() -> Dissent:
    figures = Dissent()
    generator = message_coverage._load("nvflare_messages_generator", message_coverage.GENERATOR)
    nvfdiag = _nvfdiag()
    try:
        root = generator.installed_root()
        sites = raise_sites(generator, root) + [m for r in generator.committed_releases() for m in r.messages]
    except (OSError, SyntaxError, ValueError) as exc:
        figures.error = str(exc)
        return figures
    groups = generator.mapped_groups(generator.load_mapping())
    known = nvfdiag.match.catalog.load_catalog()
    dissent = nvfdiag.match.dissent
    seen: dict[tuple[str, str], object] = {}
    for message in sites:
        if message.exc not in (PANIC, LOG) and message.template in groups:  # raise sites only
            seen.setdefault((message.template, message.exc), message)
    figures.pairs = len(seen)
    config_rows = ("CONFIG_FILE_VALIDATION_ERROR", "SIMULATION_CONFIG_ERROR", "internal", "wrapper")
    for (template, exc), message in seen.items():
        if message.area == "config_loading" and message.at.endswith(".py") and groups[template] not in config_rows:
            figures.config_module_rows[(groups[template], exc)] += 1
    for (template, exc), message in sorted(seen.items()):
        row = groups[template]
        mapped = "NVFLARE_INTERNAL_ERROR" if row == "internal" else row
        rows = dissent.class_rows(exc, known)
        if not rows:  # a class no row knows: the raising module is the second source
            if message.at in dissent.CONFIG_PROCESSING and mapped not in (*dissent.CONFIG_ROWS, "wrapper"):
                figures.disagreeing.append(Pair(template, exc, row, (dissent.CONFIG_ROW,), message, by_module=True))
            continue
        figures.classes_with_rows[exc] = tuple(sorted(rows))
        if mapped in rows or (known.has(mapped) and dissent.names_class(known.row(mapped), exc)):
            continue
        figures.disagreeing.append(Pair(template, exc, row, tuple(sorted(rows)), message))
    for pair in figures._user_facing:
        report = _report(nvfdiag, known, pair)
        others = {c["pattern"] for c in report["other_candidates"]}
        both = {pair.row, *pair.points_at}
        said = report["matched_pattern"]
        ok = said in both and report["confidence"] != "high" and bool((both - {said}) & others)
        figures.held += bool(ok)
        if not ok:
            figures.misses.append(
                f"{pair.exc}: {pair.template[:80]!r}: said {report['matched_pattern']} ({report['confidence']}), "
                f"other candidates {sorted(others)}"
            )
    return figures


def _nvfdiag():
    message_coverage._load("nvfdiag", message_coverage.NVFDIAG, package=True)
    import importlib

    for name in ("match.catalog", "match.dissent", "read.evidence", "pipeline"):
        importlib.import_module(f"nvfdiag.{name}")
    return sys.modules["nvfdiag"]


def _report(nvfdiag, known, pair: Pair) -> dict:
    mode = "simulation" if "simulation" in known.row(pair.row).modes else "production"
    found = nvfdiag.read.evidence.collect_evidence(
        ["-"],
        job_id=None,
        max_bytes=262144,
        max_total_bytes=4194304,
        max_files=10,
        stdin_text=message_coverage.traceback_text(pair.message),
    )
    return nvfdiag.pipeline.diagnose(found, known, mode=mode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every disagreeing pair")
    args = parser.parse_args(argv)
    figures = measure()
    print("\n".join(figures.lines(args.verbose)))
    return 0 if figures.met else 1


if __name__ == "__main__":
    sys.exit(main())

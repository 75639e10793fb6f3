"""What each feature of the static reading buys: corpus admissions with that feature switched off.

Usage:
    python bench/static_features.py [FEATURE ...]

Imports every job of the import corpus (evals/import_corpus.py) statically, once with the reading as it is and once
per feature with that feature replaced by "unresolved" (what a reading without it would say), and prints how many
training jobs each admits and which ones a feature's absence loses. No job is run. The switches patch the walker in
this process only; they stand for the reading a smaller fallback would keep, and a feature that loses no admission is
a candidate for removal. Exit 0 always (a measurement, no bar).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "evals"))
import import_corpus  # noqa: E402
from autofl_core.importer.values import unresolved  # noqa: E402  (import_corpus puts the scripts folder on sys.path)


def _off(node, *_):
    return unresolved(node, "switched off")


FEATURES = {  # name: (what it does, {importer module path of what is replaced: the replacement})
    "calls": ("enter job.py's own functions", {"walker.Walker._invoke": lambda self, func, a, k, node: _off(node)}),
    "compare": ("comparisons (if tests on options)", {"walker.Walker._ev_Compare": lambda self, node: _off(node)}),
    "boolop": ("and/or", {"walker.Walker._ev_BoolOp": lambda self, node: _off(node)}),
    "binop": ("arithmetic", {"walker.Walker._ev_BinOp": lambda self, node: _off(node)}),
    "fstring": ("f-strings", {"walker.Walker._ev_JoinedStr": lambda self, node: _off(node)}),
    "ifexp": ("a if c else b", {"walker.Walker._ev_IfExp": lambda self, node: _off(node)}),
    "unroll": ("loops over short known sequences, item by item", {"walker._unrollable": lambda iterable, body: None}),
    "augassign": ("x += 1", {"walker.Walker._st_AugAssign": lambda self, st: self.bind(st.target, _off(st))}),
}


def target(path: str) -> tuple[object, str]:
    """(owner, attribute) of an importer module path such as `walker.Walker._invoke`."""
    module, *owners, attr = path.split(".")
    owner = importlib.import_module(f"autofl_core.importer.{module}")
    for name in owners:
        owner = getattr(owner, name)
    return owner, attr


def admitted() -> set[str]:
    """The training jobs of the corpus the static reading admits."""
    return {
        name
        for name, job, family, args in import_corpus.corpus()
        if import_corpus.is_training(family) and import_corpus.verdict(job, False, args)[0] == "admit"
    }


def _patches(spec: dict) -> list:
    return [mock.patch.object(*target(path), replacement) for path, replacement in spec.items()]


def main(argv: list[str] | None = None) -> int:
    chosen = (argv if argv is not None else sys.argv[1:]) or list(FEATURES)
    unknown = [name for name in chosen if name not in FEATURES]
    if unknown:
        print(f"static_features: unknown feature {unknown[0]!r}; choose from {', '.join(FEATURES)}", file=sys.stderr)
        return 2
    training = sum(import_corpus.is_training(family) for _, _, family, _ in import_corpus.corpus())
    base = admitted()
    print(f"{'feature switched off':<12} {'what it reads':<48} admitted  lost")
    print(f"{'(none)':<12} {'':<48} {len(base):>3}/{training}")
    for name in chosen:
        what, spec = FEATURES[name]
        patches = _patches(spec)
        for patch in patches:
            patch.start()
        try:
            now = admitted()
        finally:
            for patch in patches:
                patch.stop()
        lost = sorted(base - now)
        shown = ", ".join(lost[:4]) + (f" (+{len(lost) - 4} more)" if len(lost) > 4 else "")
        print(f"{name:<12} {what:<48} {len(now):>3}/{training}  {len(lost)}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

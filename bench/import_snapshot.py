"""Snapshot of what the importer returns for every job of the import corpus, to prove a refactor changes nothing.

Usage:
    python bench/import_snapshot.py OUT_DIR [--static-only] [--compare OLD_DIR]

Writes one JSON file per corpus job (see evals/import_corpus.py) holding the static config and, unless
--static-only, the dry-run config, with the fields that differ between two runs of the same code dropped
(timings, cache locations) and the checkout's path replaced by `<repo>`. --compare OLD_DIR then names every job whose snapshot differs from OLD_DIR's, with the
first differing path. Compare snapshots taken from checkouts whose paths have the same length: a reason that
quotes a path is cut to a fixed length before `<repo>` replaces the checkout's path. Exit 0 when nothing differs (or nothing is compared), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "evals"))
import import_corpus  # noqa: E402

VOLATILE = {"seconds", "elapsed_seconds", "cache", "cache_path", "cached", "duration_seconds"}


def _stable(value):
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str):
        return value.replace(str(REPO), "<repo>")  # the same job in another checkout
    return value


def _first_difference(old, new, path: str = "$") -> str | None:
    if type(old) is not type(new):
        return path
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{path}.{key}"
            found = _first_difference(old[key], new[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(old, list):
        if len(old) != len(new):
            return f"{path} (length {len(old)} -> {len(new)})"
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if old == new else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--static-only", action="store_true")
    parser.add_argument("--compare", type=Path, default=None)
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    modes = (("static", False),) if options.static_only else import_corpus.IMPORTERS
    differ = 0
    for name, job, _family, base_args in import_corpus.corpus():
        snapshot = {}
        for label, dry in modes:
            word, config = import_corpus.verdict(job, dry, base_args)
            snapshot[label] = {"verdict": word, "config": _stable(config)}
        text = json.dumps(snapshot, indent=1, sort_keys=True, default=str)
        file = options.out / (name.replace("/", "__") + ".json")
        file.write_text(text, encoding="utf-8")
        if options.compare is not None:
            old_file = options.compare / file.name
            if not old_file.is_file():
                print(f"{name}: no snapshot in {options.compare}")
                differ += 1
                continue
            old = json.loads(old_file.read_text(encoding="utf-8"))
            old = {label: old[label] for label, _ in modes if label in old}
            found = _first_difference(old, json.loads(text))
            if found:
                print(f"{name}: differs at {found}")
                differ += 1
    if options.compare is not None:
        print(f"import snapshot: {differ} job(s) differ from {options.compare}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

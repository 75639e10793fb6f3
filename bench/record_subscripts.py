"""How often autofl_core reads the four core records by string key (`x["key"]`, `x.get("key")`), per record.

A key counts for a record when it is one of that record's fields: the candidate manifest (and its `result`),
the campaign settings, a ledger row (the 18 reference columns and the rest), and the trial outcome (the manifest's
`result` object). A key several records share counts for each; the last figure counts only the keys that one
record alone has (a tighter bound: `status` or `score` are also keys of rows, envelopes and state documents).
Usage: python bench/record_subscripts.py
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "skills" / "nvflare-autofl" / "scripts" / "autofl_core"
FIXTURE = REPO / "tests" / "fixtures" / "autofl_campaign_main" / ".nvflare" / "autofl"


def record_keys() -> dict[str, set[str]]:
    sys.path.insert(0, str(CORE.parent))
    from autofl_core.campaign import ledger

    manifest = json.loads((FIXTURE / "candidates" / "bonus-up" / "candidate_manifest.json").read_text())
    settings = json.loads((FIXTURE / "campaign.json").read_text())["settings"]
    return {
        "manifest": set(manifest),
        "settings": set(settings),
        "ledger row": set(ledger.COLUMNS),
        "trial outcome": set(manifest["result"]),
    }


def keyed_reads(path: Path) -> list[str]:
    keys = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.append(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.append(node.args[0].value)
    return keys


def main() -> int:
    records = record_keys()
    reads = {path: keyed_reads(path) for path in sorted(CORE.rglob("*.py"))}
    for name, fields in records.items():
        total = sum(1 for keys in reads.values() for key in keys if key in fields)
        files = sum(1 for keys in reads.values() if any(key in fields for key in keys))
        others = set().union(*(keys for other, keys in records.items() if other != name))
        own = fields - others
        alone = sum(1 for keys in reads.values() for key in keys if key in own)
        print(f"{name}: {total} keyed reads in {files} modules; {alone} of keys no other record has")
    return 0


if __name__ == "__main__":
    sys.exit(main())

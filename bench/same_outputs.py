"""Proof that a refactoring of the runner changed nothing users see: the same envelopes, reports and ledgers.

Three uses (run from the repo root):

1. Record every runner call of a test run (a pytest plugin: `run_cli` and `run_inproc` of
   tests/autofl/runner_support.py are wrapped): action, arguments, exit code, envelope, stderr, and the
   workspace's results.tsv, campaign_state.json, autofl_report.md/.json and progress.txt after the call, one JSON
   line each, in OUT/<xdist worker>.jsonl::

       SAME_OUTPUTS=OUT PYTHONPATH=bench .venv/bin/python -m pytest -p same_outputs tests/autofl -m "not slow" -n 2

2. Compare two recordings (before and after the change), with what differs from run to run masked: temp paths,
   time stamps, runtimes and durations, tokens, campaign ids, pids, machine-sized trial limits, the order of
   concurrent stderr lines, and the report's runtime-ratio warning (it compares two measured runtimes). Records
   are grouped by test file, action and arguments (a module fixture runs under whichever test comes first)::

       .venv/bin/python bench/same_outputs.py compare BEFORE AFTER      # exit 1 when any group differs

3. Keep the final reports of two finished stand-in campaigns (the edge ledger and the broken-lineage 12-column
   ledger of tests/autofl/test_report.py, built at fixed paths; markdown, JSON, CLI stdout, progress.png's sha256
   and the text renderer's summary), for a byte comparison with time stamps masked::

       .venv/bin/python bench/same_outputs.py reports REPO OUT
       .venv/bin/python bench/same_outputs.py compare-reports OUT_BEFORE OUT_AFTER
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

KEPT_FILES = ("autofl_report.md", "autofl_report.json", "results.tsv", "campaign_state.json", "progress.txt")
NOISY_KEY = re.compile(
    r"(seconds|runtime|duration|cpu|elapsed|_at$|^at$|pid|token|survivors|temp_dir|wall_time|last_activity)", re.I
)
NOISY_OBJECTS = ("trial_limits", "limits", "by_status")  # machine-sized limits, runtimes per status
MASKS = [
    (re.compile(r"/tmp/pytest-of-[^/\s\"']+/pytest-\d+/(popen-gw\d+/)?[^/\s\"']+/"), "<PT>/"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<TS>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<HEX32>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d{6}Z"), "<TS>"),
    (re.compile(r"autofl_[0-9a-f]{12}"), "autofl_<ID>"),
    (re.compile(r"\(baseline [0-9.]+ s(, \w+ [0-9.]+ s)*\)"), "(<BYSTATUS>)"),
    (re.compile(r"(autofl[-_][a-z_-]*?)[a-z0-9_]{8}\b"), r"\1<RND>"),
    (re.compile(r"- Trial limits: [^\n]*"), "- Trial limits: <LIMITS>"),
    (re.compile(r"- `compute_changed`: the best run took [^\n]*\n"), ""),
    (re.compile(r"\b\d+(\.\d+)? s\b"), "<N> s"),
    (re.compile(r"tmp[a-z0-9_]{8}"), "tmp<RND>"),
    (re.compile(r"pids? \[?[\d, ]+\]?"), "pid <P>"),
    (re.compile(r"(runtime|seconds|took|time)[^\n\t|]{0,40}?\d+\.\d+"), r"\1 <F>"),
]
RUNTIME_WARNING = "the best run took"


# --- 1. the pytest plugin -------------------------------------------------------------------------------------
def pytest_configure(config) -> None:
    out = Path(os.environ.get("SAME_OUTPUTS", "same_outputs"))
    support = Path(config.rootpath) / "tests" / "autofl"
    sys.path.insert(0, str(support))
    import runner_support

    for kind in ("run_cli", "run_inproc"):
        setattr(runner_support, kind, _recording(getattr(runner_support, kind), out))


def _recording(call, out: Path):
    def wrapper(workspace, action, *args, **options):
        done = call(workspace, action, *args, **options)
        record = {
            "test": os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0],
            "action": action,
            "args": [str(arg) for arg in args],
            "code": done.code,
            "envelope": done.envelope,
            "stderr": done.stderr,
            "files": {
                str(path.relative_to(workspace)): path.read_text(errors="replace")
                for path in sorted(Path(workspace).rglob("*"))
                if path.name in KEPT_FILES and path.is_file() and not path.is_symlink()
            },
        }
        out.mkdir(parents=True, exist_ok=True)
        with open(out / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "a") as handle:
            handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        return done

    return wrapper


# --- 2. compare two recordings --------------------------------------------------------------------------------
def masked(value, repo_roots: tuple[str, ...]):
    if isinstance(value, dict):
        return {
            key: "<N>"
            if key in NOISY_OBJECTS or (NOISY_KEY.search(key) and not isinstance(item, (dict, list)))
            else masked(item, repo_roots)
            for key, item in value.items()
        }
    if isinstance(value, list):
        kept = [
            item
            for item in value
            if not (isinstance(item, dict) and str(item.get("message", "")).startswith(RUNTIME_WARNING))
        ]
        return [masked(item, repo_roots) for item in kept]
    if isinstance(value, str):
        for root in repo_roots:
            value = value.replace(root, "<REPO>")
        for pattern, replacement in MASKS:
            value = pattern.sub(replacement, value)
    return value


def load(folder: Path, repo_roots: tuple[str, ...]) -> dict[tuple, list[str]]:
    groups: dict[tuple, list[str]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            files = {}
            for name, text in record["files"].items():
                if name.endswith("results.tsv"):  # the runtime column
                    rows = [row.split("\t") for row in text.split("\n")]
                    text = "\n".join("\t".join(c if i != 3 else "<RT>" for i, c in enumerate(row)) for row in rows)
                try:
                    files[name] = masked(json.loads(text), repo_roots) if name.endswith(".json") else None
                except ValueError:
                    files[name] = None
                if files[name] is None:
                    files[name] = masked(text, repo_roots).replace("## Warnings\n\n- none\n", "## Warnings\n\n")
            kept = {
                "action": record["action"],
                "args": masked(record["args"], repo_roots),
                "code": record["code"],
                "envelope": masked(record["envelope"], repo_roots),
                "stderr": masked("\n".join(sorted(record["stderr"].splitlines())), repo_roots),
                "files": files,
            }
            key = (record["test"].split("::")[0], record["action"], json.dumps(kept["args"]))
            groups.setdefault(key, []).append(json.dumps(kept, indent=1, sort_keys=True))
    return {key: sorted(items) for key, items in groups.items()}


def compare(before: Path, after: Path, repo_roots: tuple[str, ...]) -> int:
    a, b = load(before, repo_roots), load(after, repo_roots)
    differ = sorted(key for key in a.keys() & b.keys() if a[key] != b[key])
    missing = sorted(a.keys() ^ b.keys())
    count = sum(map(len, a.values())), sum(map(len, b.values()))
    print(
        f"records {count[0]} / {count[1]}; groups {len(a)} / {len(b)}: {len(differ)} differ, {len(missing)} in one only"
    )
    for key in differ[:3]:
        print("==", key)
        lines = difflib.unified_diff("\n".join(a[key]).splitlines(), "\n".join(b[key]).splitlines(), lineterm="", n=1)
        for line in list(lines)[:30]:
            print(line[:300])
    return 1 if differ or missing or count[0] != count[1] else 0


# --- 3. the reports of two finished stand-in campaigns --------------------------------------------------------
def reports(repo: Path, out: Path) -> int:
    for folder in (repo / "skills/nvflare-autofl/scripts", repo / "tests/autofl", repo / "tests"):
        sys.path.insert(0, str(folder))
    os.environ.pop("AUTOFL_PLOT_RENDERER", None)  # the matplotlib picture
    import test_report as t
    from runner_support import run_inproc

    base = Path("/tmp/same_outputs_campaigns")
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    def keep(label: str, folder: Path, done) -> None:
        assert done.returncode == 0, done.stderr
        (out / f"{label}.stdout").write_text(done.stdout)
        for name in ("autofl_report.md", "autofl_report.json"):
            (out / f"{label}.{name}").write_text((folder / name).read_text())
        png, txt = folder / "progress.png", folder / "progress.txt"
        (out / f"{label}.png.sha256").write_text(hashlib.sha256(png.read_bytes()).hexdigest() if png.exists() else "-")
        if txt.exists():
            (out / f"{label}.progress.txt").write_text(txt.read_text())

    edge = t.campaign(base / "edge")
    t.write_ledger(edge, t.EDGE_ROWS)
    (edge / "STOP_AUTOFL").write_text("")
    assert run_inproc(edge, "status").code == 0
    (base / "edge_out").mkdir()
    keep("edge", base / "edge_out", t.report_cli(edge, "--output-dir", str(base / "edge_out")))
    lineage = t.campaign(base / "lineage")
    rows = [
        t.r("baseline", "baseline", 0.75, runtime=1.0),
        t.r(
            "keep",
            "b",
            0.8,
            base_candidate="ghost",
            changed_files="client.py",
            candidate_kind="source_edit",
            runtime=1.0,
        ),
    ]
    t.write_ledger(lineage, rows, header_columns=12)
    (base / "lineage_out").mkdir()
    done = t.report_cli(lineage, "--confirm-interrupted", "--output-dir", str(base / "lineage_out"))
    keep("lineage", base / "lineage_out", done)
    os.environ["AUTOFL_PLOT_RENDERER"] = "text"
    (base / "edge_text").mkdir()
    keep("edge_text", base / "edge_text", t.report_cli(edge, "--output-dir", str(base / "edge_text")))
    print(f"kept {len(list(out.iterdir()))} files in {out}")
    return 0


def compare_reports(before: Path, after: Path) -> int:
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
    wall = re.compile(r'("wall_time_seconds": |Campaign wall time: )[0-9.]+')
    differ = []
    for path in sorted(before.iterdir()):
        texts = [wall.sub(r"\1<N>", stamp.sub("<TS>", p.read_text())) for p in (path, after / path.name)]
        if texts[0] != texts[1]:
            differ.append(path.name)
    print(f"{len(list(before.iterdir()))} files, {len(differ)} differ (time stamps masked): {', '.join(differ)}")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    roots = (str(Path(__file__).resolve().parents[1]), *os.environ.get("SAME_OUTPUTS_ROOTS", "").split(os.pathsep))
    roots = tuple(root for root in roots if root)
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]), roots)
    if len(argv) == 3 and argv[0] == "reports":
        return reports(Path(argv[1]).resolve(), Path(argv[2]))
    if len(argv) == 3 and argv[0] == "compare-reports":
        return compare_reports(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

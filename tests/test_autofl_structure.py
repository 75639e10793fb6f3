"""The folder tree of `autofl_core` is its architecture; these static checks keep it that way (AST only).

- no import cycle anywhere in autofl_core (function-level imports included);
- actions are leaves: no module of runner/actions/ imports another action or the lifecycle shell, and only the
  shell loads actions;
- the trial package stands alone (standard library, its own modules and the campaign-free utilities of common/
  only): the home of "run one child"; its sandbox/ package (run by path) imports the standard library and its own
  modules only, all at module level; common/ itself imports only the standard library and its own modules;
- the dry-run boot (importer/dryrun_boot/, run by path in the sandbox) imports only the standard library, nvflare
  and its own modules;
- one remover of folder trees (`common/trees.remove_tree`, iterative): no `shutil.rmtree` anywhere else;
- one status vocabulary: no raw status string outside campaign/vocabulary.py (the reviewed exceptions below);
- one reader of campaign JSON (`common/bounded.read_json`);
- every package `__init__.py` imports nothing and its docstring maps exactly the modules of its folder.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "nvflare-autofl" / "scripts"
CORE = SCRIPTS / "autofl_core"
CORE_FILES = sorted(path for path in CORE.rglob("*.py") if "__pycache__" not in path.parts)
PRODUCT_FILES = sorted(path for path in SCRIPTS.rglob("*.py") if "__pycache__" not in path.parts)
PACKAGES = sorted(path.parent for path in CORE.rglob("__init__.py") if "__pycache__" not in path.parts)

STATUS_WORDS = frozenset(
    {
        "baseline",
        "keep",
        "discard",
        "crash",
        "literature",
        "infrastructure_retry",
        "replicate",
        "prepared",
        "running",
        "ready_for_external_execution",
        "abandoned",
        "source_edit",
        "argument_only",
    }
)
# State words (`next_action`, `reason`) spelled nowhere else in the code: they are scanned like the statuses. The
# rest ("continue", "stop", "pending_candidates", "family_repeat_limit", ...) also name other things.
STATE_WORDS = frozenset(
    {
        "propose_candidate",
        "edit_candidate",
        "submit_candidate",
        "abandon_candidate",
        "final_report",
        "develop_literature_batch",
        "diversify_candidates",
        "run_literature_loop",
        "repair_baseline",
        "submit_baseline",
        "await_simulation_runner_approval",
        "evaluate_candidate",
        "submit_evaluation",
        "manual_stop_pending_candidate",
        "manual_stop_file",
        "candidate_cap_exhausted",
        "hard_repeated_crash_blocker",
        "literature_exploration_batch",
        "plateau_literature",
    }
)
VOCABULARY = "autofl_core/campaign/vocabulary.py"
# (file relative to scripts/, word) -> how many times that file may spell it, and why it is not a status there.
# JSON Schema enums (shared/schemas/*.json) spell the statuses too: they are the published contract, not code.
STATUS_WORD_EXCEPTIONS = {
    ("autofl_core/trial/execute.py", "crash"): (1, "a trial outcome; trial/ knows no ledger (outcomes test below)"),
    ("autofl_core/trial/execute.py", "infrastructure_retry"): (1, "a trial outcome, as above"),
    ("run_job_campaign.py", "replicate"): (1, "the name of the CLI action"),
    ("autofl_core/runner/lifecycle.py", "replicate"): (2, "the action name and its module name"),
    ("autofl_core/runner/flag_scope.py", "replicate"): (1, "the action name in the table of the options it takes"),
    ("autofl_core/importer/values.py", "discard"): (1, "the set.discard method the importer follows"),
    ("autofl_core/campaign/guard.py", "literature"): (1, "the plateau recommendation value of the state schema"),
    ("autofl_core/campaign/plot.py", "literature"): (1, "the plot data's key of the literature markers"),
    ("autofl_core/runner/report/build.py", "baseline"): (1, "a field name of autofl_report.json"),
    ("autofl_core/runner/report/build.py", "literature"): (1, "a field name of autofl_report.json"),
    ("autofl_core/runner/report/build.py", "abandoned"): (1, "a field name of autofl_report.json"),
}
# Files that may parse JSON text themselves: not campaign documents on disk.
JSON_PARSE_EXCEPTIONS = {
    "autofl_core/common/bounded.py": "the one reader (read_json, read_json_value, parse_json)",
    "autofl_core/campaign/plot_worker.py": "protocol lines on the worker's pipe",
    "autofl_core/runner/store/contract.py": "json.loads(json.dumps(config)): a plain copy before YAML, not a read",
    "autofl_core/trial/sandbox/main.py": "its plan; it runs alone by path (standard library only), so no shared reader",
    "autofl_core/trial/sandbox/probe.py": "the probe's own status file, in the launcher run alone by path",
}


def rel(path: Path) -> str:
    return path.relative_to(SCRIPTS).as_posix()


def module_name(path: Path) -> str:
    parts = path.relative_to(SCRIPTS).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in CORE_FILES}


def _package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def imported_modules(name: str, tree: ast.AST) -> set[str]:
    """The autofl_core modules `name` imports anywhere in `tree` (relative and absolute, any depth)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {_existing(alias.name) for alias in node.names if alias.name.startswith("autofl_core")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name).split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("autofl_core"):
                target = node.module
            else:
                continue
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else _existing(target))
    found.discard(None)
    return found


def _existing(dotted: str) -> str:
    assert dotted in MODULES, f"import of {dotted}, which is no module of autofl_core"
    return dotted


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(name, ast.parse(path.read_text(encoding="utf-8"))) for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (a path that ends where it starts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_import_graph_sees_relative_absolute_and_function_level_imports():
    graph = import_graph()
    assert "autofl_core.runner.refresh" in graph["autofl_core.runner.lifecycle"]
    assert "autofl_core.campaign.vocabulary" in graph["autofl_core.campaign.guard"]
    assert "autofl_core.campaign.plot" in graph["autofl_core.runner.report.build"]  # imported inside a function
    assert "autofl_core.campaign.ledger" in graph["autofl_core.campaign.plot_worker"]  # absolute, by path
    assert "autofl_core.importer.walker" not in graph["autofl_core.importer.events"]


def test_no_import_cycle_in_autofl_core():
    assert find_cycle(import_graph()) is None


def test_actions_are_leaves_and_only_the_shell_loads_them():
    graph = import_graph()
    actions = {name for name in MODULES if name.startswith("autofl_core.runner.actions.")}
    assert {"autofl_core.runner.actions.evaluate", "autofl_core.runner.actions.initialize"} <= actions
    shell = "autofl_core.runner.lifecycle"
    for action in actions:
        assert not graph[action] & (actions | {shell}), (
            f"{action} imports {sorted(graph[action] & (actions | {shell}))}"
        )
        assert not _loads_by_name(ast.parse(MODULES[action].read_text(encoding="utf-8"))), f"{action} loads by name"
    importers = {name for name, targets in graph.items() if targets & actions}
    assert not importers, f"modules that import an action: {sorted(importers)}"


def _loads_by_name(tree: ast.AST) -> bool:
    """True when the code imports importlib or calls import_module / __import__ (a module chosen at run time)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "importlib" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "importlib":
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                return True
    return False


def test_the_trial_package_stands_alone():
    """trial/ imports only the standard library, its own modules and common/; the sandbox/ package (run by path)
    only the standard library and its own modules."""
    launcher = sorted((CORE / "trial" / "sandbox").glob("*.py"))
    assert {path.stem for path in launcher} >= {"__main__", "main", "sealing", "watcher", "syscalls"}
    for path in sorted((CORE / "trial").glob("*.py")) + launcher:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path in launcher:  # every module is loaded before the first namespace or mount: no import comes later
            late = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
            late = [line for line in late if line not in {n.lineno for n in tree.body}]
            assert not late, f"{rel(path)}:{late[0]} imports inside a function (after the seal is laid)"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                common = node.level == 2 and node.module == "common" and path not in launcher
                assert node.level == 1 or common, f"{rel(path)} imports from outside"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                outside = [n for n in names if n.split(".")[0] not in sys.stdlib_module_names]
                assert not outside, f"{rel(path)} imports {outside}"


def test_the_dry_run_boot_imports_only_the_standard_library_nvflare_and_its_own_modules():
    """importer/dryrun_boot/ runs inside the sandbox as a program of its own: nothing of autofl_core."""
    boot = sorted((CORE / "importer" / "dryrun_boot").glob("*.py"))
    assert {path.stem for path in boot} >= {"__main__", "serve", "run", "stand_ins"}
    for path in boot:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{rel(path)} imports from outside its package"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                outside = [n for n in names if n.split(".")[0] not in sys.stdlib_module_names | {"nvflare"}]
                assert not outside, f"{rel(path)} imports {outside}"


def test_common_imports_only_the_standard_library():
    """common/ is the lowest layer (trial/ may use it): the standard library and its own modules only."""
    for path in sorted((CORE / "common").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{rel(path)} imports from outside common/"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                outside = [n for n in names if n.split(".")[0] not in sys.stdlib_module_names]
                assert not outside, f"{rel(path)} imports {outside}"


def test_folder_trees_are_removed_only_by_the_iterative_remover():
    """shutil.rmtree recurses per folder level (RecursionError on a trial's very deep tree): common/trees only."""
    for path in PRODUCT_FILES:
        if rel(path) == "autofl_core/common/trees.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "rmtree":
                raise AssertionError(f"{rel(path)}:{node.lineno} calls rmtree; use common.trees.remove_tree")
            if isinstance(node, ast.ImportFrom) and node.module == "shutil":
                assert "rmtree" not in [a.name for a in node.names], f"{rel(path)} imports rmtree"


def status_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, word) of every string constant that spells a status or state word, except docstrings and subscript keys
    (`data["literature"]` reads a field; a status is compared, collected, mapped or assigned)."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in STATUS_WORDS | STATE_WORDS and id(node) not in skip
    )


@pytest.mark.parametrize(
    "source, found",
    [
        ('if row["status"] == "keep": pass', [(1, "keep")]),
        ('ok = status in ("discard", "crash")', [(1, "crash"), (1, "discard")]),
        ('row = {"status": "literature", "name": n}', [(1, "literature")]),
        ('m = dict(m, status="abandoned")', [(1, "abandoned")]),
        ('COLORS = {"replicate": "#17becf"}', [(1, "replicate")]),
        ('def f():\n    return "keep" if x else "discard"', [(2, "discard"), (2, "keep")]),
        ('"""keep or discard: baseline"""\nx = data["literature"]', []),
        ('x = f"{counts[KEEP]} kept"', []),
        ('if state["next_action"] == "submit_candidate": pass', [(1, "submit_candidate")]),
    ],
)
def test_the_status_scan_catches_each_spelling(source, found):
    assert status_literals(ast.parse(source)) == found


def test_no_raw_status_string_outside_the_vocabulary():
    seen: dict[tuple[str, str], int] = {}
    for path in PRODUCT_FILES:
        if rel(path) == VOCABULARY:
            continue
        for line, word in status_literals(ast.parse(path.read_text(encoding="utf-8"))):
            seen[(rel(path), word)] = seen.get((rel(path), word), 0) + 1
            assert (rel(path), word) in STATUS_WORD_EXCEPTIONS, f"{rel(path)}:{line} spells {word!r}; use vocabulary"
    allowed = {key: count for key, (count, _why) in STATUS_WORD_EXCEPTIONS.items()}
    assert seen == allowed, "an exception is stale or the file spells the word more often than reviewed"


def test_the_vocabulary_spells_every_status_and_trial_outcome_once():
    from autofl_core.campaign import vocabulary as v
    from autofl_core.trial import execute

    assert set(v.LedgerStatus) | set(v.ManifestStatus) | set(v.CandidateKind) == STATUS_WORDS
    for words in (v.LEDGER_STATUSES, v.MANIFEST_STATUSES, v.CANDIDATE_KINDS, v.ATTEMPTS, v.MANIFEST_PENDING):
        assert all(isinstance(word, v.Word) for word in words), words  # the sets hold the enum members
    assert (execute.SUCCESS, execute.CRASH, execute.INFRA_RETRY, execute.PRUNED) == tuple(v.TrialOutcome)
    from autofl_core.trial import what_ran

    assert (what_ran.VERIFIED, what_ran.VIOLATED, what_ran.UNVERIFIED) == tuple(v.BudgetCheck)
    assert STATE_WORDS < set(v.NextAction) | set(v.Reason)


def test_campaign_json_is_parsed_only_by_the_one_reader():
    for path in CORE_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("load", "loads")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json"
        ]
        if rel(path) in JSON_PARSE_EXCEPTIONS or rel(path).startswith("autofl_core/importer/"):
            continue  # the importer parses its own shipped table (recipes.py), never a campaign file
        assert not calls, f"{rel(path)}:{calls[0]} parses JSON itself; use common.bounded.read_json"
    for name in JSON_PARSE_EXCEPTIONS:
        assert (SCRIPTS / name).is_file(), f"stale exception {name}"


MAP_LINE = re.compile(r"^- ((?:`[\w/]+`(?:, )?)+) - ", re.M)


@pytest.mark.parametrize("package", PACKAGES, ids=[p.relative_to(SCRIPTS).as_posix() for p in PACKAGES])
def test_each_package_init_imports_nothing_and_maps_its_folder(package):
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    statements = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    assert not statements, f"{package.name}/__init__.py holds code; keep it a docstring"
    mapped = {name for group in MAP_LINE.findall(ast.get_docstring(tree)) for name in re.findall(r"`([\w/]+)`", group)}
    actual = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    actual |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert mapped == actual, (
        f"map of {package.name}/: missing {sorted(actual - mapped)}, stale {sorted(mapped - actual)}"
    )


def test_sandbox_launcher_runs_alone_by_path(tmp_path, python_exe):
    """The trial's first program is executed by path: its package copied alone and run isolated (-I), it works."""
    package = tmp_path / "alone" / "sandbox"
    shutil.copytree(CORE / "trial" / "sandbox", package, ignore=shutil.ignore_patterns("__pycache__"))
    alone = package / "__main__.py"
    done = subprocess.run([python_exe, "-I", str(alone)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("usage: sandbox/__main__.py"), done.stderr
    probe = subprocess.run([python_exe, "-I", str(alone), "--probe"], capture_output=True, text=True, timeout=60)
    assert set(json.loads(probe.stdout)) == {"protections", "missing"}, probe.stderr


def test_every_fault_point_is_named_once_and_used():
    """Fault injection is one mechanism: `faults.checkpoint(<point>)` with a point of `faults.POINTS` (or the
    `write:<file>` of every atomic write); no point is listed that nothing passes, none is passed unlisted."""
    from autofl_core.common import faults

    used = set()
    for path in CORE_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "checkpoint" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    assert arg.value in faults.POINTS, f"{rel(path)}:{node.lineno} passes unlisted {arg.value!r}"
                    used.add(arg.value)
                else:
                    assert rel(path) == "autofl_core/common/atomic.py", f"{rel(path)}:{node.lineno} computes a point"
    assert used == set(faults.POINTS)


def autofl_section() -> str:
    page = (SCRIPTS.parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = page.index("## Auto-FL pipeline")
    return page[start : page.index("\n## ", start + 1)]


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_architecture_page_names_existing_autofl_modules_and_functions():
    """Every `package/module[.py][.name]` and `module.name` the Auto-FL section quotes exists where it says."""
    stems: dict[str, list[Path]] = {}
    for path in CORE_FILES:
        stems.setdefault(path.stem, []).append(path)
    checked = 0
    for token in re.findall(r"`([^`\s]+)`", autofl_section()):
        placed = re.fullmatch(
            r"((?:campaign|common|importer|runner|trial)(?:/[a-z_]+)*)(?:\.py)?(?:\.([A-Za-z_]+))?/?", token
        )
        bare = re.fullmatch(r"([a-z_]+)\.([A-Za-z_]+)", token)
        if placed:
            path = CORE / placed.group(1)
            if token.endswith("/"):
                assert path.is_dir(), f"docs/architecture.md names folder {token}, which does not exist"
                continue
            path = path.with_suffix(".py")
            assert path.is_file(), f"docs/architecture.md names {token}, which does not exist"
            name = placed.group(2)
        elif bare and bare.group(1) in stems and len(stems[bare.group(1)]) == 1 and bare.group(2) != "py":
            path, name = stems[bare.group(1)][0], bare.group(2)
        else:
            continue
        assert name is None or name in _top_level_names(path), f"docs/architecture.md: {rel(path)} has no {name}"
        checked += 1
    assert checked > 60


def test_the_code_says_what_it_does_now_not_its_history():
    """Docstrings and comments state what the code does: no tracker numbers, no "as before"."""
    history = re.compile(r"\bissue[- ]?\d+|\bas before\b", re.IGNORECASE)
    for path in CORE_FILES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not history.search(line), f"{rel(path)}:{number} tells history: {line.strip()}"

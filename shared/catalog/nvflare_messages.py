"""Extract the error-message templates the installed NVFLARE raises, and keep the reviewed mapping in step.

Usage:
    python shared/catalog/nvflare_messages.py            # check: exit 1 listing new, vanished and moved templates
    python shared/catalog/nvflare_messages.py --update   # rewrite nvflare_messages.yaml: new templates go to
                                                         # `unreviewed` (with a suggested row), vanished ones go
    python shared/catalog/nvflare_messages.py --json     # print the extraction (one JSON object per template)
    [--nvflare-root PATH]                                # default: the installed package (found, never imported)

The extraction walks NVFLARE's source with `ast` (nothing is imported or run) over the areas in SCOPE: recipes,
job config, simulator, client API, config loading, provisioning and the admin CLI. Each `raise X(message)` whose
message is a literal, an f-string, `%`/`.format()` formatting, a concatenation of those, or a local variable
assigned one of those before the raise, becomes a template: literal text with `{}` for every value. Templates
with fewer than four letters of literal text are not messages anyone can recognise and are left out.

The reviewed mapping (`shared/catalog/nvflare_messages.yaml`) files every template under a catalog row id, under
`internal` (an NVFLARE bug: the report says so and suggests a bug report) or under `wrapper` (NVFLARE echoing a
failure that happened elsewhere, never a cause by itself). `make sync` renders it into the diagnose skill, and
tests/diagnose/test_nvflare_messages.py fails while a template of the pinned NVFLARE is unmapped.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib.util
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MAPPING = HERE / "nvflare_messages.yaml"
CATALOG = HERE / "failure_patterns.yaml"
SCHEMA = "nvflare.diagnose.messages.v1"
SPECIAL_GROUPS = ("internal", "wrapper")
UNREVIEWED = "unreviewed"
MIN_LETTERS = 4
SCOPE = {
    "recipes": ("recipe/*", "*/recipes/*"),
    "job_config": (
        "job_config/*",
        "apis/job_def.py",
        "apis/utils/job_utils.py",
        "fuel/utils/job_utils.py",
        "private/fed/server/job_meta_validator.py",
    ),
    "simulator": ("private/fed/app/simulator/*", "private/fed/simulator/*"),
    "client_api": ("client/*",),
    "config_loading": (
        "fuel/utils/config*.py",
        "fuel/utils/json_config_loader.py",
        "fuel/utils/json_scanner.py",
        "fuel/utils/wfconf.py",
        "fuel/utils/component_builder.py",
        "fuel/utils/class_utils.py",
        "fuel/utils/class_loader.py",
        "fuel/utils/validation_utils.py",
        "fuel/utils/argument_utils.py",
        "fuel/utils/import_utils.py",
        "private/json_configer.py",
        "private/fed_json_config.py",
        "private/fed/app/fl_conf.py",
        "private/fed/client/client_json_config.py",
        "private/fed/server/server_json_config.py",
    ),
    "provisioning": ("lighter/*",),
    "admin_cli": ("tool/*", "cli.py", "cli_exception.py", "fuel/flare_api/*"),
}
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrfigxXeEc]")
_BRACES = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Message:
    """One distinct template and where it is first raised (module path relative to the nvflare package)."""

    template: str
    exc: str
    at: str
    line: int
    func: str
    area: str


def installed_root() -> Path:
    """The installed nvflare package folder, located without importing it."""
    spec = importlib.util.find_spec("nvflare")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("nvflare is not installed in this interpreter; run make setup or pass --nvflare-root")
    return Path(list(spec.submodule_search_locations)[0])


def installed_version(root: Path) -> str:
    """`__version__`-style string from nvflare/_version.py (parsed, not imported), or 'unknown'."""
    version_file = root / "_version.py"
    text = version_file.read_text(encoding="utf-8") if version_file.is_file() else ""
    match = re.search(r"""["'](\d+\.\d+\.\d+[^"']*)["']""", text)
    return match.group(1) if match else "unknown"


def area_of(rel: str) -> str | None:
    return next((area for area, globs in SCOPE.items() if any(fnmatch.fnmatch(rel, g) for g in globs)), None)


def render(node: ast.AST, scope: ast.AST | None) -> str:
    """Template text of a message expression: literal text, `{}` for every value."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else "{}"
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return render(node.left, scope) + render(node.right, scope)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_str(node.left):
        return _PERCENT.sub("{}", node.left.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _BRACES.sub("{}", node.func.value.value) if _is_str(node.func.value) else "{}"
    if isinstance(node, ast.Name) and scope is not None:
        value = _last_assignment(scope, node.id, node.lineno)
        return render(value, None) if value is not None else "{}"
    return "{}"


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _last_assignment(scope: ast.AST, name: str, before: int) -> ast.AST | None:
    found = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < before and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name and (found is None or node.lineno > found.lineno):
                found = node
    return found.value if found is not None else None


def normalize(template: str) -> str:
    """Collapse whitespace and runs of adjacent placeholders."""
    return re.sub(r"(?:\{\})+", "{}", " ".join(template.split()))


def is_template(template: str) -> bool:
    return len(re.findall(r"[A-Za-z]", template.replace("{}", ""))) >= MIN_LETTERS


def _exc_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "Exception"


def messages_in(tree: ast.AST, rel: str, area: str) -> list[Message]:
    """Every raise with a recognisable message in one module, in source order."""
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
            continue
        enclosing = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
        scope = max(enclosing, key=lambda f: f.lineno) if enclosing else None
        template = normalize(render(node.exc.args[0], scope))
        if is_template(template):
            func = scope.name if scope is not None else "<module>"
            found.append(Message(template, _exc_name(node.exc), rel, node.lineno, func, area))
    return sorted(found, key=lambda m: m.line)


def extract(root: Path) -> list[Message]:
    """Distinct templates over SCOPE, each with its first location (modules in sorted order)."""
    seen: dict[str, Message] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        area = area_of(rel)
        if area is None or "__pycache__" in rel:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for message in messages_in(tree, rel, area):
            seen.setdefault(message.template, message)
    return sorted(seen.values(), key=lambda m: (m.at, m.line, m.template))


def catalog_rows(path: Path = CATALOG) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [row["id"] for row in yaml.safe_load(handle)["patterns"]]


def load_mapping(path: Path = MAPPING) -> dict:
    """The mapping document: {schema, nvflare_version, messages: {group: [{t, at, ...}]}}."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def mapped_groups(mapping: dict) -> dict[str, str]:
    """template -> group (row id, internal, wrapper or unreviewed)."""
    return {entry["t"]: group for group, entries in (mapping.get("messages") or {}).items() for entry in entries or []}


@dataclass
class Diff:
    new: list[Message]
    vanished: list[str]
    moved: list[Message]
    unreviewed: list[str]
    unknown_groups: list[str]

    @property
    def clean(self) -> bool:
        return not (self.new or self.vanished or self.moved or self.unreviewed or self.unknown_groups)


def compare(extracted: list[Message], mapping: dict, rows: list[str]) -> Diff:
    """What the reviewed mapping lacks (new), keeps needlessly (vanished) or locates wrongly (moved)."""
    groups = mapped_groups(mapping)
    where = {e["t"]: e.get("at") for entries in (mapping.get("messages") or {}).values() for e in entries or []}
    current = {m.template for m in extracted}
    allowed = set(rows) | set(SPECIAL_GROUPS) | {UNREVIEWED}
    return Diff(
        new=[m for m in extracted if m.template not in groups],
        vanished=sorted(t for t in groups if t not in current),
        moved=[m for m in extracted if m.template in where and where[m.template] != m.at],
        unreviewed=sorted(t for t, g in groups.items() if g == UNREVIEWED),
        unknown_groups=sorted({g for g in groups.values() if g not in allowed}),
    )


# First matching rule wins; then the area's default. Only a starting point for the human review.
SUGGESTIONS = (
    (
        r"Simulation failed with return code|^Failed to submit job via|^Error processing config file|^Config error in "
        r"|^runtime error encountered|^failed to receive task",
        "wrapper",
    ),
    (r"not authori[sz]ed|ComponentNotAuthorized|allow[_ ]list", "COMPONENT_NOT_AUTHORIZED"),
    (r"not authenticated|startup kit|certificate|\bcert\b|CA state|rootCA", "AUTH_FAILURE"),
    (r"expired", "STARTUP_KIT_EXPIRED"),
    (
        r"cannot connect|could not connect|not connected|no reply|no HELLO|did not (stop|restart|finish) within"
        r"|within .*timeout|timed? ?out",
        "PEER_GONE_OR_TIMEOUT",
    ),
    (r"gpu.*not available|GPUs are", "RESOURCE_EXCEEDS_HOST_CAPACITY"),
    (
        r"not installed|pip install|Can't import|[Cc]annot find (component )?class|Can't load class|no attribute",
        "IMPORT_ERROR",
    ),
    (r"deploy_map|not existing for job|config is missing|legacy job format", "PACKAGE_EXPORT_ERROR"),
    (
        r"internal error|protocol error|this is a bug|unreachable|^Unexpected|failed to return|^missing .* from",
        "internal",
    ),
)
AREA_DEFAULTS = {
    "recipes": "SIMULATION_CONFIG_ERROR",
    "job_config": "SIMULATION_CONFIG_ERROR",
    "simulator": "SIMULATION_CONFIG_ERROR",
    "client_api": "USER_CODE_EXCEPTION",
    "config_loading": "CONFIG_FILE_VALIDATION_ERROR",
    "provisioning": "CONFIG_FILE_VALIDATION_ERROR",
    "admin_cli": "NVFLARE_COMMAND_ERROR",
}


def suggest(message: Message) -> str:
    """A first guess at the group of a new template (reviewed by a human before it leaves `unreviewed`)."""
    for pattern, group in SUGGESTIONS:
        if re.search(pattern, message.template, re.IGNORECASE):
            return group
    return AREA_DEFAULTS[message.area]


HEADER = """\
# NVFLARE's own error messages -> failure-catalog rows (reviewed mapping; source of truth).
#
# Generated and kept in step by `python shared/catalog/nvflare_messages.py --update`, which extracts the message
# templates the installed NVFLARE raises (`{}` stands for a value). Review happens here: move an entry to the
# group that says what the message means for the user who sees it.
#   <ROW_ID>    a row of failure_patterns.yaml: the diagnosis of a failure that carries this message
#   internal    an NVFLARE bug (an internal consistency check): the report says so and suggests a bug report
#   wrapper     NVFLARE echoing a failure that happened elsewhere: never a cause by itself
#   unreviewed  new in this NVFLARE release, with a `suggested` group; tests fail until it is moved
# `at` is the module (inside the nvflare package) that first raises the template. `make sync` renders this file
# into skills/nvflare-diagnose-job/references/nvflare_messages.json.
"""


def _entry(message_or_dict: dict) -> str:
    fields = ", ".join(f"{key}: {json.dumps(value)}" for key, value in message_or_dict.items())
    return f"    - {{{fields}}}"


def dump_mapping(version: str, groups: dict[str, list[dict]], order: list[str]) -> str:
    """The YAML text: header, then one flow-style line per template, groups in catalog order."""
    out = [HEADER, f"schema: {SCHEMA}", f'nvflare_version: "{version}"', "messages:"]
    for group in order:
        entries = sorted(groups.get(group, []), key=lambda e: (e["at"], e["t"]))
        if entries:
            out.append(f"  {group}:")
            out += [_entry(entry) for entry in entries]
    return "\n".join(out) + "\n"


def updated_groups(extracted: list[Message], mapping: dict) -> dict[str, list[dict]]:
    """Keep each known template's group (and note), refresh `at`, file new ones under `unreviewed`."""
    known = {e["t"]: (group, e) for group, entries in (mapping.get("messages") or {}).items() for e in entries or []}
    groups: dict[str, list[dict]] = {}
    for message in extracted:
        group, old = known.get(message.template, (UNREVIEWED, {}))
        entry = {"t": message.template, "at": message.at}
        if group == UNREVIEWED:
            entry["suggested"] = old.get("suggested") or suggest(message)
        if old.get("note"):
            entry["note"] = old["note"]
        groups.setdefault(group, []).append(entry)
    return groups


def _print_diff(diff: Diff) -> None:
    for message in diff.new:
        print(f"new: {message.at}:{message.line}: {message.template}", file=sys.stderr)
    for template in diff.vanished:
        print(f"vanished: {template}", file=sys.stderr)
    for message in diff.moved:
        print(f"moved: {message.template} (now first raised in {message.at})", file=sys.stderr)
    for template in diff.unreviewed:
        print(f"unreviewed: {template}", file=sys.stderr)
    for group in diff.unknown_groups:
        print(f"unknown group: {group} (not a catalog row, internal, wrapper or unreviewed)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Extract NVFLARE's error-message templates; check the mapping.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--update", action="store_true", help="rewrite the mapping (new templates -> unreviewed)")
    action.add_argument("--json", action="store_true", help="print the extraction as JSON lines")
    parser.add_argument("--nvflare-root", type=Path, help="nvflare package folder (default: the installed one)")
    args = parser.parse_args(argv)
    try:
        root = args.nvflare_root or installed_root()
        extracted = extract(root)
        mapping = load_mapping()
    except (OSError, SyntaxError, yaml.YAMLError) as exc:
        print(f"nvflare_messages: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        for message in extracted:
            print(json.dumps(asdict(message), sort_keys=True))
        return 0
    rows = catalog_rows()
    if args.update:
        order = rows + list(SPECIAL_GROUPS) + [UNREVIEWED]
        text = dump_mapping(installed_version(root), updated_groups(extracted, mapping), order)
        _atomic_write(MAPPING, text)
    diff = compare(extracted, load_mapping(), rows)
    _print_diff(diff)
    print(
        f"{len(extracted)} templates from nvflare {installed_version(root)}; "
        f"{len(diff.new)} new, {len(diff.vanished)} vanished, {len(diff.unreviewed)} unreviewed",
        file=sys.stderr,
    )
    return 0 if diff.clean else 1


def _atomic_write(path: Path, text: str) -> None:
    """The project's single atomic-write implementation, loaded by file path."""
    atomic_path = HERE.parents[1] / "skills" / "nvflare-autofl" / "scripts" / "autofl_core" / "common" / "atomic.py"
    spec = importlib.util.spec_from_file_location("_messages_atomic", atomic_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_text(path, text)


if __name__ == "__main__":
    sys.exit(main())

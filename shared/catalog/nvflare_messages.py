"""Extract the error-message templates the installed NVFLARE raises, and keep the reviewed mapping in step.

Usage:
    python shared/catalog/nvflare_messages.py            # check: exit 1 listing new, vanished and moved templates
    python shared/catalog/nvflare_messages.py --update   # rewrite nvflare_messages.yaml: new templates go to
                                                         # `unreviewed` (with a suggested row), vanished ones go
    python shared/catalog/nvflare_messages.py --add-release WHEEL [WHEEL ...]
                                                         # extract an older release (a wheel from `pip download
                                                         # nvflare==2.N.* --no-deps -d DIR`, or its unpacked
                                                         # nvflare folder), commit it under nvflare_releases/,
                                                         # then --update
    python shared/catalog/nvflare_messages.py --json     # print the extraction (one JSON object per template)
    [--nvflare-root PATH]                                # default: the installed package (found, never imported);
                                                         # an nvflare wheel file is read the same way

The extraction walks NVFLARE's source with `ast` (nothing is imported or run) over the areas in SCOPE: recipes,
job config, simulator, client API, config loading, provisioning, the admin CLI, resources, persistors and two
run-time modules (the client runner, the model controller). Each `raise X(message)` whose message is a literal, an
f-string, `%`/`.format()` formatting, a concatenation of those, or a local variable assigned one of those before
the raise, becomes a template: literal text with `{}` for every value. The same holds for the reason of a
system/task panic and for the message of an error-level log call (`self.log_error(fl_ctx, msg)`, log_exception,
log_critical; `logger.error(msg)`, exception, critical), and for a message a function of the same module returns
when the site's message is that function's return value (`raise ConfigError(self.get_process_err_msg(...))`).
Each template records its kind: `raise`, `panic` or `log` (a logged message is evidence that a site reported it,
not that anything was raised; a text both raised and logged is a raise). Templates with fewer than four letters of
literal text are not messages anyone can recognise and are left out.

The reviewed mapping (`shared/catalog/nvflare_messages.yaml`) files every template under a catalog row id, under
`internal` (an NVFLARE bug: the report says so and suggests a bug report) or under `wrapper` (NVFLARE echoing a
failure that happened elsewhere, never a cause by itself). `make sync` renders it into the diagnose skill, and
tests/diagnose/test_nvflare_messages.py fails while a template of the pinned NVFLARE is unmapped.

Every release line users still run is covered, not only the installed one: the extraction of each older release
(the latest patch of its line) is committed under `shared/catalog/nvflare_releases/` (`--add-release`, run once
per release with network access for `pip download`), so the check and `--update` work offline; the installed
NVFLARE stands for its own line. The mapping is one document: each entry records in `in` the release lines whose
source raises the template, and `at` is where the newest of them raises it. Older wordings of the same fact (a
template an older release raised and the installed one no longer does) keep their reviewed row.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib.util
import json
import re
import sys
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MAPPING = HERE / "nvflare_messages.yaml"
CATALOG = HERE / "failure_patterns.yaml"
RELEASES_DIR = HERE / "nvflare_releases"
SCHEMA = "nvflare.diagnose.messages.v1"
RELEASE_SCHEMA = "nvflare.diagnose.release-messages.v1"
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
    "resources": ("app_common/resource_managers/*", "app_common/resource_consumers/*", "app_common/job_schedulers/*"),
    # model persistors end the job with system_panic when the configured model is not what they persist (2.0-2.9)
    "persistors": ("app_common/*persistor*.py", "app_common/*/*persistor*.py", "app_opt/*/*persistor*.py"),
    # the two run-time modules real failing runs print from (a job's executor and controller misused): the client
    # runner's errors about what an executor returned, the model controller's checks of what a workflow sends
    "runners": (
        "private/fed/client/client_runner.py",
        "app_common/workflows/base_model_controller.py",
        "app_common/workflows/model_controller.py",
    ),
}
# Besides `raise X(message)`, NVFLARE ends a run with `self.system_panic(reason=message, fl_ctx=...)` (and
# task_panic): the reason is the error message the log shows.
PANICS = ("system_panic", "task_panic")
RAISE, PANIC, LOG = "raise", "panic", "log"
# Error-level log calls: FLComponent's (fl_ctx, msg) methods, and a logging.Logger's methods on a logger attribute.
COMPONENT_LOG_ERRORS = ("log_error", "log_exception", "log_critical")
LOGGER_ERRORS = ("error", "exception", "critical")
LOGGER_NAMES = ("logger", "_logger", "log")
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
    kind: str = "raise"  # raise, panic (a system/task panic's reason) or log (an error-level log call's message)


def installed_root() -> Path:
    """The installed nvflare package folder, located without importing it."""
    spec = importlib.util.find_spec("nvflare")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("nvflare is not installed in this interpreter; run make setup or pass --nvflare-root")
    return Path(list(spec.submodule_search_locations)[0])


def installed_version(root: Path) -> str:
    """`__version__`-style string from nvflare/_version.py (parsed, not imported), or 'unknown'. `root` is an
    nvflare package folder or a wheel file."""
    text = dict(_sources(root, only="_version.py")).get("_version.py", "")
    match = re.search(r"""["'](\d+\.\d+\.\d+[^"']*)["']""", text)
    return match.group(1) if match else "unknown"


def release_line(version: str) -> str:
    """The release line of a version: '2.4.2' -> '2.4'."""
    return ".".join(version.split(".")[:2])


def _sources(root: Path, only: str | None = None):
    """(path inside the nvflare package, source text) of its modules, in path order; `root` is the package folder
    or a wheel (read with zipfile, nothing unpacked or imported). `only`: just that one module."""
    if root.is_file():
        with zipfile.ZipFile(root) as wheel:
            names = [n for n in wheel.namelist() if n.startswith("nvflare/") and n.endswith(".py")]
            for name in sorted(names, key=lambda n: tuple(n.split("/"))):
                rel = name[len("nvflare/") :]
                if only is None or rel == only:
                    yield rel, wheel.read(name).decode("utf-8")
        return
    paths = [root / only] if only is not None else sorted(root.rglob("*.py"))
    for path in paths:
        if path.is_file():
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


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


def _panic_reason(node: ast.AST) -> ast.AST | None:
    """The reason of a `...system_panic(reason=...)` / `task_panic(...)` call (keyword or first argument)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PANICS):
        return None
    reason = next((k.value for k in node.keywords if k.arg == "reason"), None)
    return reason if reason is not None else (node.args[0] if node.args else None)


def _logged_error(node: ast.AST) -> ast.AST | None:
    """The message of an error-level log call: `self.log_error(fl_ctx, msg)` (and log_exception, log_critical), or
    `logger.error(msg, *args)` (and exception, critical) on a name or attribute called logger/_logger/log; a
    %-format with arguments becomes its template."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    func = node.func
    if func.attr in COMPONENT_LOG_ERRORS:
        message = next((k.value for k in node.keywords if k.arg == "msg"), None)
        return message if message is not None else (node.args[1] if len(node.args) > 1 else None)
    owner = func.value.id if isinstance(func.value, ast.Name) else getattr(func.value, "attr", None)
    if func.attr in LOGGER_ERRORS and owner in LOGGER_NAMES and node.args:
        first = node.args[0]
        if len(node.args) > 1 and _is_str(first):
            return ast.Constant(_PERCENT.sub("{}", first.value))
        return first
    return None


def _returned_templates(tree: ast.AST) -> dict[str, list[str]]:
    """Function name -> the message templates its `return` statements build (functions and methods of one module;
    a name defined twice keeps both sets)."""
    helpers: dict[str, list[str]] = {}
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Return) and node.value is not None:
                template = normalize(render(node.value, func))
                if is_template(template) and template not in helpers.get(func.name, []):
                    helpers.setdefault(func.name, []).append(template)
    return helpers


def _called_helper(message: ast.AST, scope: ast.AST | None, helpers: dict[str, list[str]]) -> list[str]:
    """The templates of a same-module helper whose return value is the message: `raise X(self.err_msg(e))`, or a
    local variable assigned that call before the site."""
    if isinstance(message, ast.Name) and scope is not None:
        message = _last_assignment(scope, message.id, message.lineno)
    if not isinstance(message, ast.Call):
        return []
    func = message.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return helpers.get(name, []) if name != "format" else []


def _message_site(node: ast.AST) -> tuple[ast.AST, str, str] | None:
    """(message expression, exception class or kind word, kind) of a raise, a panic or an error-level log call."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        return node.exc.args[0], _exc_name(node.exc), RAISE
    if (reason := _panic_reason(node)) is not None:
        return reason, PANIC, PANIC
    if (logged := _logged_error(node)) is not None:
        return logged, LOG, LOG
    return None


def messages_in(tree: ast.AST, rel: str, area: str) -> list[Message]:
    """Every raise, system/task panic and error-level log call with a recognisable message in one module, in
    source order; a message built by a helper of the same module counts at the site that uses it."""
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    helpers = _returned_templates(tree)
    for node in ast.walk(tree):
        site = _message_site(node)
        if site is None:
            continue
        message, exc, kind = site
        enclosing = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
        scope = max(enclosing, key=lambda f: f.lineno) if enclosing else None
        func = scope.name if scope is not None else "<module>"
        templates = [normalize(render(message, scope))] + _called_helper(message, scope, helpers)
        for template in templates:
            if is_template(template):
                found.append(Message(template, exc, rel, node.lineno, func, area, kind))
    return sorted(found, key=lambda m: m.line)


def extract(root: Path) -> list[Message]:
    """Distinct templates over SCOPE, each with its first location (modules in sorted order). `root` is an nvflare
    package folder or a wheel file."""
    seen: dict[str, Message] = {}
    for rel, text in _sources(root):
        area = area_of(rel)
        if area is None or "__pycache__" in rel:
            continue
        tree = ast.parse(text, filename=rel)
        for message in messages_in(tree, rel, area):
            first = seen.get(message.template)
            if first is None or (first.kind == LOG and message.kind != LOG):  # a raise outranks a log of the same text
                seen[message.template] = message
    return sorted(seen.values(), key=lambda m: (m.at, m.line, m.template))


@dataclass
class Release:
    """The templates one NVFLARE release raises: `version` is the full version, `line` its release line."""

    version: str
    messages: list[Message] = field(default_factory=list)

    @property
    def line(self) -> str:
        return release_line(self.version)


def release_path(version: str, folder: Path = RELEASES_DIR) -> Path:
    return folder / f"nvflare-{version}.json"


def dump_release(release: Release) -> str:
    """The committed extraction of one release: one JSON object per line, so a diff shows template changes."""
    head = {"schema": RELEASE_SCHEMA, "nvflare_version": release.version}
    body = [json.dumps(asdict(m), sort_keys=True, ensure_ascii=False) for m in release.messages]
    return json.dumps(head, sort_keys=True) + "\n" + "".join(line + "\n" for line in body)


def load_release(path: Path) -> Release:
    """A committed extraction (see dump_release); ValueError when it is not one."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0]) if lines else {}
    if head.get("schema") != RELEASE_SCHEMA or not isinstance(head.get("nvflare_version"), str):
        raise ValueError(f"{path} is not an extraction of schema {RELEASE_SCHEMA}")
    return Release(head["nvflare_version"], [Message(**json.loads(line)) for line in lines[1:] if line.strip()])


def committed_releases(folder: Path = RELEASES_DIR) -> list[Release]:
    """Every committed extraction, oldest release first (no network, no NVFLARE install needed)."""
    releases = [load_release(path) for path in sorted(folder.glob("nvflare-*.json"))] if folder.is_dir() else []
    return sorted(releases, key=lambda r: _version_key(r.version))


def all_releases(installed: Release | None, folder: Path = RELEASES_DIR) -> list[Release]:
    """The committed releases plus the installed one, one per release line (the installed NVFLARE stands for its
    own line), oldest first."""
    by_line = {release.line: release for release in committed_releases(folder)}
    if installed is not None:
        by_line[installed.line] = installed
    return sorted(by_line.values(), key=lambda r: _version_key(r.version))


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.+-]", version)[:3])


def merge(releases: list[Release]) -> tuple[list[Message], dict[str, list[str]]]:
    """One list of distinct templates over all releases (each located where the newest release that raises it
    does) and, per template, the release lines that raise it (oldest first)."""
    newest: dict[str, Message] = {}
    lines: dict[str, list[str]] = {}
    for release in releases:  # oldest first: a later release's location replaces an earlier one
        for message in release.messages:
            newest[message.template] = message
            lines.setdefault(message.template, []).append(release.line)
    return sorted(newest.values(), key=lambda m: (m.at, m.line, m.template)), lines


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
    wrong_releases: list[str] = field(default_factory=list)  # entries whose `in` disagrees with the extractions

    @property
    def clean(self) -> bool:
        problems = (self.new, self.vanished, self.moved, self.unreviewed, self.unknown_groups, self.wrong_releases)
        return not any(problems)


def _entries(mapping: dict) -> dict[str, dict]:
    return {e["t"]: e for entries in (mapping.get("messages") or {}).values() for e in entries or []}


def compare(
    extracted: list[Message], mapping: dict, rows: list[str], releases_of: dict[str, list[str]] | None = None
) -> Diff:
    """What the reviewed mapping lacks (new), keeps needlessly (vanished) or locates wrongly (moved).

    `extracted` is one release's extraction (the installed NVFLARE) or, with `releases_of` (template -> release
    lines, see merge), the merged extraction of every release; then each entry's `in` must list exactly those lines.
    For one release, a mapped template it lacks has vanished only when the entry says that release line raises it
    (or says nothing): older wordings recorded for older releases stay."""
    groups = mapped_groups(mapping)
    entries = _entries(mapping)
    current = {m.template for m in extracted}
    allowed = set(rows) | set(SPECIAL_GROUPS) | {UNREVIEWED}
    line = release_line(str(mapping.get("nvflare_version") or ""))

    def gone(template: str) -> bool:
        recorded = entries[template].get("in")
        return template not in current and (releases_of is not None or not recorded or line in recorded)

    return Diff(
        new=[m for m in extracted if m.template not in groups],
        vanished=sorted(t for t in groups if gone(t)),
        moved=[m for m in extracted if m.template in entries and entries[m.template].get("at") != m.at],
        unreviewed=sorted(t for t, g in groups.items() if g == UNREVIEWED),
        unknown_groups=sorted({g for g in groups.values() if g not in allowed}),
        wrong_releases=sorted(
            t for t, lines in (releases_of or {}).items() if t in entries and entries[t].get("in") != lines
        ),
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
    "resources": "CONFIG_FILE_VALIDATION_ERROR",
    "persistors": "CONFIG_FILE_VALIDATION_ERROR",
    "runners": "wrapper",
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
# `at` is the module (inside the nvflare package) that first raises the template, in the newest release that raises
# it; `kind` is there when it is not raised: `panic` (a system/task panic's reason) or `log` (only an error-level
# log call prints it: a site reported it, nothing was raised); `in` lists the release lines whose source raises it
# (`releases` names the version extracted for each line: the installed NVFLARE and the extractions committed under
# nvflare_releases/). `make sync` renders this file into skills/nvflare-diagnose-job/references/nvflare_messages.json.
"""


def _entry(message_or_dict: dict) -> str:
    fields = ", ".join(f"{key}: {json.dumps(value)}" for key, value in message_or_dict.items())
    return f"    - {{{fields}}}"


def dump_mapping(
    version: str, groups: dict[str, list[dict]], order: list[str], releases: list[str] | None = None
) -> str:
    """The YAML text: header, then one flow-style line per template, groups in catalog order. `releases`: the full
    versions whose extraction the mapping covers (oldest first)."""
    out = [HEADER, f"schema: {SCHEMA}", f'nvflare_version: "{version}"']
    if releases:
        out.append("releases: {" + ", ".join(f'"{release_line(v)}": "{v}"' for v in releases) + "}")
    out.append("messages:")
    for group in order:
        entries = sorted(groups.get(group, []), key=lambda e: (e["at"], e["t"]))
        if entries:
            out.append(f"  {group}:")
            out += [_entry(entry) for entry in entries]
    return "\n".join(out) + "\n"


def updated_groups(
    extracted: list[Message], mapping: dict, releases_of: dict[str, list[str]] | None = None
) -> dict[str, list[dict]]:
    """Keep each known template's group (and note), refresh `at` (and `in` from `releases_of`), file new ones
    under `unreviewed`."""
    known = {e["t"]: (group, e) for group, entries in (mapping.get("messages") or {}).items() for e in entries or []}
    groups: dict[str, list[dict]] = {}
    for message in extracted:
        group, old = known.get(message.template, (UNREVIEWED, {}))
        entry = {"t": message.template, "at": message.at}
        if releases_of is not None:
            entry["in"] = releases_of[message.template]
        if message.kind != RAISE:
            entry["kind"] = message.kind
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
    for template in diff.wrong_releases:
        print(f"releases out of date: {template} (run --update)", file=sys.stderr)


def add_release(path: Path, folder: Path = RELEASES_DIR) -> Release:
    """Extract one release (wheel or nvflare folder) and commit it under `folder`, replacing an older patch of the
    same release line."""
    release = Release(installed_version(path), extract(path))
    if release.version == "unknown":
        raise ValueError(f"{path}: no nvflare/_version.py with a version; pass an nvflare wheel or package folder")
    for old in committed_releases(folder):
        if old.line == release.line and old.version != release.version:
            release_path(old.version, folder).unlink()
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write(release_path(release.version, folder), dump_release(release))
    return release


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Extract NVFLARE's error-message templates; check the mapping.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--update", action="store_true", help="rewrite the mapping (new templates -> unreviewed)")
    action.add_argument("--json", action="store_true", help="print the extraction as JSON lines")
    action.add_argument("--add-release", nargs="+", type=Path, metavar="WHEEL", help="commit older releases, update")
    parser.add_argument("--nvflare-root", type=Path, help="nvflare package folder (default: the installed one)")
    args = parser.parse_args(argv)
    try:
        root = args.nvflare_root or installed_root()
        if args.json:
            for message in extract(root):
                print(json.dumps(asdict(message), sort_keys=True))
            return 0
        for wheel in args.add_release or []:
            added = add_release(wheel)
            print(f"{wheel}: {len(added.messages)} templates from nvflare {added.version}", file=sys.stderr)
        installed = Release(installed_version(root), extract(root))
        releases = all_releases(installed)
        mapping = load_mapping()
    except (OSError, SyntaxError, ValueError, zipfile.BadZipFile, yaml.YAMLError) as exc:
        print(f"nvflare_messages: error: {exc}", file=sys.stderr)
        return 2
    extracted, releases_of = merge(releases)
    rows = catalog_rows()
    if args.update or args.add_release:
        order = rows + list(SPECIAL_GROUPS) + [UNREVIEWED]
        groups = updated_groups(extracted, mapping, releases_of)
        text = dump_mapping(installed.version, groups, order, [r.version for r in releases])
        _atomic_write(MAPPING, text)
    diff = compare(extracted, load_mapping(), rows, releases_of)
    _print_diff(diff)
    for release in releases:
        print(f"{len(release.messages)} templates from nvflare {release.version}", file=sys.stderr)
    print(
        f"{len(extracted)} templates over {len(releases)} releases; "
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

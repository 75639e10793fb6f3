"""Pure comparison logic of the diagnose eval harness (no I/O): expected-vs-report checks and the trigger heuristic.

`run_evals.py` is the I/O shell that runs the CLI and calls these functions; tests call them directly.

Expected keys of a file-backed case (all optional except where a check needs them):
    exit_code               int or list of acceptable ints, default 0. With a non-zero code only the exit code
                            and "exactly one line on stderr" are checked.
    runtime_mode            str, exact.
    matched_pattern         str, or list of acceptable ids (when the spec allows more than one outcome).
    matched_pattern_not     list of ids the primary pattern must not be.
    recovery_category       str, exact.
    confidence              str, or list of acceptable values.
    findings_include        list: each must be in report.findings.       findings_exclude: none may be.
    suspicious_kinds_include list: each kind must occur in report.suspicious_content[].kind.
    suspicious_count        int: exact len(report.suspicious_content) (0 for healthy real runs).
    suspicious_line_any     list of ints (the lines one directive spans): some suspicious_content entry is on one of them.
    other_candidates_include list: each id must occur in report.other_candidates[].pattern.
    missing_evidence_include list: each substring (case-insensitive) must occur in the joined missing_evidence.
    follow_up_include       list: each substring must occur in the joined follow_up_commands.
    likely_cause_include_any list: at least one substring (case-insensitive) must occur in likely_cause.
    next_action_include     list: each substring must occur in next_action (e.g. the job.py line it names).
    signals_include         list: each substring must occur in some signals[].excerpt.
    marker_corroborated     {marker: bool}: some unverified_markers entry whose marker contains `marker` has
                            corroborated == bool.
    metrics_non_finite      bool: report.metrics.non_finite is non-empty (True) or absent/empty (False).
    evidence_status_include list: each status must occur in evidence_sources[].status.
    must_not_contain        list of strings that must not occur in next_action and follow_up_commands, or in the
                            whole stdout when must_not_contain_scope is "report".
    stdout_include          list of substrings of the raw stdout (used for --format markdown cases).
    marker_lines            {"<line>": bool}: the unverified_markers entry on that line has corroborated == bool.
    signal_rows             {pattern: int}: exact number of signal rows (distinct facts) of that pattern.
    signal_count_min        {pattern: int}: the first signal row of that pattern merges at least this many
                            occurrences (its `count`) and lists as many places in `seen_in` (up to 8).
    signal_site             {pattern: site}: the first signal row of that pattern is attributed to this site.
    signal_roles            {pattern: role}: some signal row of that pattern has this role (direct, supporting,
                            consequence).
Negative cases carry only {"trigger": false} and no files.

Invariants checked on every run (spec rules, independent of the case): no Python traceback on stderr; object
keys sorted; with medium/low confidence, missing_evidence and follow_up_commands are non-empty; UNKNOWN matches
carry recovery_category UNKNOWN; with a catalog, recovery_category and next_action equal the matched row's
values (copied exactly, never inferred: the row's next_action or one of its next_action_cases, each placeholder
filled only as next_action_matches allows); with a schema, the report validates against it.
"""

from __future__ import annotations

import json
import re

REPORT_KEYS = {
    "exit_code",
    "runtime_mode",
    "matched_pattern",
    "matched_pattern_not",
    "recovery_category",
    "confidence",
    "findings_include",
    "findings_exclude",
    "suspicious_kinds_include",
    "suspicious_count",
    "other_candidates_include",
    "missing_evidence_include",
    "follow_up_include",
    "likely_cause_include_any",
    "marker_corroborated",
    "metrics_non_finite",
    "evidence_status_include",
    "must_not_contain",
    "must_not_contain_scope",
    "stdout_include",
    "suspicious_line_any",
    "next_action_include",
    "signals_include",
    "signal_rows",
    "signal_count_min",
    "signal_site",
    "signal_roles",
    "marker_lines",
}
CASE_KEYS = {"id", "prompt", "files", "expected", "args", "stdin", "note"}

# Trigger heuristic vocabularies (lower case; hyphens in prompts are read as spaces).
FLARE_TERMS = (
    "nvflare",
    "flare",
    "federated",
    "fedavg",
    "simenv",
    "simulator",
    "job.py",
    "poc ",
    "execution_exception",
)
# Failure-word families: the description advertises a family when it contains any member.
FAILURE_FAMILIES = {
    "fail": ("fail",),
    "error": ("error",),
    "exception": ("exception", "traceback"),
    "timeout": ("timed out", "timeout", "time out"),
    "stall": ("stall", "stuck", "hang"),
    "crash": ("crash", "killed", "abort", "died"),
    "suspicious": ("suspicious",),
}
EXCLUSION_RE = re.compile(r"\b(do not|don't|not for|not when|never)\b", re.IGNORECASE)
# Out-of-scope topics. A prompt belongs to one when a clause of it starts with one of `asks` (a request such as
# "tune my job, ...") or it contains one of `states` ("my job finished fine"); it then stays untriggered only
# if an exclusion sentence of the description names the topic (one of `excluded_by`, matched as a prefix).
OUT_OF_SCOPE = {
    "build": {
        "asks": ("create", "convert", "write", "build", "port", "generate", "scaffold"),
        "excluded_by": ("creat", "convert", "writ", "scaffold"),
    },
    "operate": {
        "asks": ("deploy", "provision", "install", "submit", "resubmit", "monitor", "watch", "track"),
        "excluded_by": ("deploy", "provision", "install", "submit", "monitor"),
    },
    "results": {"asks": ("download", "fetch", "export"), "excluded_by": ("download",)},
    "tune": {
        "asks": ("tune", "optimize", "optimise", "improve", "lower", "reduce", "boost"),
        "excluded_by": ("tune", "tuning", "optimi", "hyperparameter"),
    },
    "healthy": {
        "states": (
            "finished fine",
            "went fine",
            "going fine",
            "ran fine",
            "runs fine",
            "works fine",
            "completed successfully",
            "succeeded",
            "without errors",
            "without any error",
            "no errors",
        ),
        "excluded_by": ("healthy", "success"),
    },
    "not_flare": {
        "states": ("not a flare", "not an nvflare", "unrelated to flare", "nothing to do with flare"),
        "excluded_by": ("unrelated", "generic python"),
    },
}
_CLAUSE_SPLIT = re.compile(r"[.;:,!?](?:\s|$)|\b(?:and|then|so|but)\b")
_REQUEST_LEAD = re.compile(r"^(?:please |can you |could you |help me (?:to )?|i (?:want|need|would like) to |let's )+")


def validate_case(case: dict) -> list[str]:
    """Structural problems of one case (unknown keys, missing files list, negatives with files)."""
    problems = [f"unknown case key {k!r}" for k in sorted(set(case) - CASE_KEYS)]
    expected = case.get("expected")
    if not isinstance(case.get("id"), str) or not isinstance(expected, dict):
        return problems + ["case needs a string id and an expected object"]
    if "trigger" in expected:
        if expected != {"trigger": False} or case.get("files"):
            problems.append("a negative case has exactly expected={'trigger': false} and no files")
        return problems
    if not case.get("files"):
        problems.append("a file-backed case needs a non-empty files list")
    problems += [f"unknown expected key {k!r}" for k in sorted(set(expected) - REPORT_KEYS)]
    if expected.get("must_not_contain_scope", "actions") not in ("actions", "report"):
        problems.append("must_not_contain_scope must be 'actions' or 'report'")
    return problems


def check_result(
    expected: dict,
    exit_code: int,
    stdout: str,
    stderr: str,
    catalog: dict | None = None,
    markdown: bool = False,
    schema: dict | None = None,
) -> list[str]:
    """All misses of one CLI run against `expected` (empty list = pass).

    `markdown`: the run used --format markdown (no JSON to parse); `catalog`: id -> rendered catalog row;
    `schema`: the report's JSON Schema (validated with jsonschema when given).
    """
    if "Traceback (most recent call last)" in stderr:
        return ["invariant: the CLI printed a Python traceback on stderr"]
    want_code = expected.get("exit_code", 0)
    if not _matches(want_code, exit_code):
        tail = stderr.strip().splitlines()[-1:] if stderr.strip() else ["<no stderr>"]
        return [f"exit_code: expected {want_code}, got {exit_code} ({tail[0][:160]})"]
    if exit_code != 0:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        return [] if len(lines) == 1 else [f"stderr: expected exactly one line, got {len(lines)}"]
    misses = [f"stdout lacks {s!r}" for s in expected.get("stdout_include", []) if s not in stdout]
    if markdown:
        return misses + _forbidden_in_output(expected, stdout)
    try:
        report = json.loads(stdout)
    except ValueError:
        return misses + ["stdout is not one JSON document"]
    if not isinstance(report, dict):
        return misses + ["stdout JSON is not an object"]
    text = stdout + "\n" + json.dumps(report, ensure_ascii=False)
    misses += _forbidden_in_output(expected, text) + check_report(expected, report) + check_invariants(report, catalog)
    return misses + schema_misses(report, schema)


def schema_misses(report: dict, schema: dict | None) -> list[str]:
    """Violations of the published report schema (first three), or [] without a schema."""
    if schema is None:
        return []
    import jsonschema  # dev dependency; only needed when a schema is given

    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(report), key=lambda e: [str(p) for p in e.path])
    return [f"schema: {'/'.join(map(str, e.path)) or '<root>'}: {e.message[:120]}" for e in errors[:3]]


def _forbidden_in_output(expected: dict, text: str) -> list[str]:
    if expected.get("must_not_contain_scope") != "report":
        return []
    return [f"output contains forbidden {s!r}" for s in expected.get("must_not_contain", []) if s in text]


def check_report(expected: dict, report: dict) -> list[str]:
    """Field-by-field comparison of a parsed JSON report with `expected`."""
    misses: list[str] = []
    for key in ("runtime_mode", "matched_pattern", "recovery_category", "confidence"):
        if key in expected and not _matches(expected[key], report.get(key)):
            misses.append(f"{key}: expected {expected[key]!r}, got {report.get(key)!r}")
    if report.get("matched_pattern") in expected.get("matched_pattern_not", []):
        misses.append(f"matched_pattern: must not be {report.get('matched_pattern')!r}")
    misses += _check_lists(expected, report)
    misses += _check_texts(expected, report)
    misses += _check_markers(expected.get("marker_corroborated", {}), report)
    misses += _check_marker_lines(expected.get("marker_lines", {}), report)
    misses += _check_signal_facts(expected, report)
    if "metrics_non_finite" in expected:
        non_finite = bool(((report.get("metrics") or {}).get("non_finite")) or [])
        if non_finite != expected["metrics_non_finite"]:
            misses.append(f"metrics.non_finite: expected {'non-empty' if expected['metrics_non_finite'] else 'empty'}")
    lines = expected.get("suspicious_line_any")
    if lines and not set(lines) & set(_field_values(report, "suspicious_content", "line")):
        misses.append(f"suspicious_content: nothing flagged on lines {lines}")
    if "suspicious_count" in expected:
        got = len(report.get("suspicious_content") or [])
        if got != expected["suspicious_count"]:
            misses.append(f"suspicious_content: expected {expected['suspicious_count']} findings, got {got}")
    return misses


def _matches(want, got) -> bool:
    return got in want if isinstance(want, list) else got == want


def _field_values(report: dict, field: str, key: str | None) -> list:
    items = report.get(field) or []
    if key is None:
        return list(items)
    return [item.get(key) for item in items if isinstance(item, dict)]


def _check_lists(expected: dict, report: dict) -> list[str]:
    misses = []
    specs = (
        ("findings_include", "findings", None, True),
        ("findings_exclude", "findings", None, False),
        ("suspicious_kinds_include", "suspicious_content", "kind", True),
        ("other_candidates_include", "other_candidates", "pattern", True),
        ("evidence_status_include", "evidence_sources", "status", True),
    )
    for exp_key, field, key, present in specs:
        have = _field_values(report, field, key)
        for item in expected.get(exp_key, []):
            if (item in have) != present:
                misses.append(f"{field}: {'missing' if present else 'unexpected'} {item!r}")
    return misses


def _check_texts(expected: dict, report: dict) -> list[str]:
    misses = []
    missing = " ".join(map(str, report.get("missing_evidence") or [])).lower()
    follow = " ".join(map(str, report.get("follow_up_commands") or []))
    for sub in expected.get("missing_evidence_include", []):
        if sub.lower() not in missing:
            misses.append(f"missing_evidence: does not mention {sub!r}")
    for sub in expected.get("follow_up_include", []):
        if sub not in follow:
            misses.append(f"follow_up_commands: do not mention {sub!r}")
    cause = str(report.get("likely_cause") or "").lower()
    options = expected.get("likely_cause_include_any", [])
    if options and not any(opt.lower() in cause for opt in options):
        misses.append(f"likely_cause: mentions none of {options!r}")
    action = str(report.get("next_action") or "")
    misses += [
        f"next_action: does not mention {sub!r}" for sub in expected.get("next_action_include", []) if sub not in action
    ]
    excerpts = [str(signal.get("excerpt")) for signal in report.get("signals") or [] if isinstance(signal, dict)]
    for sub in expected.get("signals_include", []):
        if not any(sub in excerpt for excerpt in excerpts):
            misses.append(f"signals: no excerpt mentions {sub!r}")
    if expected.get("must_not_contain_scope", "actions") == "actions":
        actions = str(report.get("next_action") or "") + "\n" + follow
        misses += [
            f"next_action/follow_up contain forbidden {s!r}"
            for s in expected.get("must_not_contain", [])
            if s in actions
        ]
    return misses


def _check_marker_lines(wanted: dict, report: dict) -> list[str]:
    markers = [m for m in report.get("unverified_markers") or [] if isinstance(m, dict)]
    misses = []
    for line, corroborated in wanted.items():
        got = [m.get("corroborated") for m in markers if str(m.get("line")) == str(line)]
        if got != [corroborated]:
            misses.append(f"unverified_markers: line {line} expected corroborated={corroborated}, got {got}")
    return misses


def _check_signal_facts(expected: dict, report: dict) -> list[str]:
    """One row per distinct fact: row counts per pattern and the merged count of the first row."""
    misses = []
    signals = [s for s in report.get("signals") or [] if isinstance(s, dict)]
    for pattern, rows in expected.get("signal_rows", {}).items():
        got = sum(1 for s in signals if s.get("pattern") == pattern)
        if got != rows:
            misses.append(f"signals: expected {rows} row(s) of {pattern}, got {got}")
    for pattern, site in expected.get("signal_site", {}).items():
        first = next((s for s in signals if s.get("pattern") == pattern), {})
        if first.get("site") != site:
            misses.append(f"signals: first {pattern} row has site {first.get('site')!r}, expected {site!r}")
    for pattern, role in expected.get("signal_roles", {}).items():
        if not any(s.get("pattern") == pattern and s.get("role") == role for s in signals):
            misses.append(f"signals: no {pattern} row with role {role!r}")
    for pattern, count in expected.get("signal_count_min", {}).items():
        first = next((s for s in signals if s.get("pattern") == pattern), {})
        places = len(first.get("seen_in") or [])
        if (first.get("count") or 0) < count or places < min(count, 8):
            misses.append(
                f"signals: first {pattern} row merges {first.get('count')} occurrence(s) in {places} "
                f"place(s), expected at least {count}"
            )
    return misses


def _check_markers(wanted: dict, report: dict) -> list[str]:
    misses = []
    markers = [m for m in report.get("unverified_markers") or [] if isinstance(m, dict)]
    for marker, corroborated in wanted.items():
        if not any(marker in str(m.get("marker", "")) and m.get("corroborated") is corroborated for m in markers):
            misses.append(f"unverified_markers: no {marker!r} entry with corroborated={corroborated}")
    return misses


USER_CALLS_KEY = "@user_calls"  # entry of the catalog dict holding its user_calls table (never a pattern id)
RELEASE_KEY = "@release_mismatch"  # entry holding the catalog's release_mismatch next-action text (never a pattern id)


def check_invariants(report: dict, catalog: dict | None) -> list[str]:
    """Spec rules every report must satisfy, whatever the case expects."""
    misses = []
    if report.get("confidence") in ("medium", "low"):
        if not report.get("missing_evidence"):
            misses.append("invariant: medium/low confidence without missing_evidence")
        if not report.get("follow_up_commands"):
            misses.append("invariant: medium/low confidence without follow_up_commands")
    if not _keys_sorted(report):
        misses.append("invariant: JSON object keys are not sorted")
    pattern = report.get("matched_pattern")
    if pattern == "UNKNOWN" and report.get("recovery_category") != "UNKNOWN":
        misses.append("invariant: matched_pattern UNKNOWN needs recovery_category UNKNOWN")
    row = (catalog or {}).get(pattern) if pattern not in (USER_CALLS_KEY, RELEASE_KEY) else None
    if row is not None:
        if report.get("recovery_category") != row.get("recovery_category"):
            misses.append(f"invariant: recovery_category is not copied exactly from catalog row {pattern}")
        calls = (catalog or {}).get(USER_CALLS_KEY, [])
        release = (catalog or {}).get(RELEASE_KEY)
        if not next_action_matches(str(report.get("next_action")), row, calls, release):
            misses.append(f"invariant: next_action is not copied exactly from catalog row {pattern}")
    return misses


# The only text a next_action may add to its catalog row's texts (its `next_action` or one of its
# `next_action_cases`): each placeholder filled with validated identifiers, numbers, or the catalog's own
# user_calls text, or dropped.
_ARGUMENT_AT = (
    r"(?:argument `[A-Za-z_]\w{0,63}`(?:, )?)?(?:at [\w.-]{1,80}\.py:\d+(?: in [A-Za-z_]\w{0,80}\(\))?)?(?<! )"
)
_USED_AT = r"(?:, used at [\w.-]{1,80}\.py:\d+(?: in [A-Za-z_]\w{0,80}\(\))?)?"
_AT = r"(?:, at [\w.-]{1,80}\.py:\d+(?: in [A-Za-z_]\w{0,80}\(\))?)?"
WHERE_FILL = rf"(?: \({_ARGUMENT_AT}\))?"
AT_FILL = r"(?: \(at [\w.-]{1,80}\.py:\d+(?: in (?:[A-Za-z_]\w{0,80}\(\)))?\))?"
ROUNDS_FILL = r"(?: \((?:round 0|rounds 0-\d{1,6}) completed(?:; the failure came in round \d{1,6})?\))?"
MISSING_FILL = r"`nvflare(?:\.[A-Za-z_]\w{0,63}){1,12}`"
SITES_FILL = r"(?: \([A-Za-z0-9][\w.-]{0,63}(?:, [A-Za-z0-9][\w.-]{0,63}){0,4}\))?"


def _row_texts(row) -> list[str]:
    """A row's next-action texts: a plain string, a rendered catalog row (dict) or a loaded catalog Row."""
    if isinstance(row, str):
        return [row]
    if isinstance(row, dict):
        return [str(row.get("next_action", "")).strip()] + [
            str(case.get("text", "")).strip() for case in row.get("next_action_cases", []) if isinstance(case, dict)
        ]
    return [row.next_action] + [case.text for case in getattr(row, "next_action_cases", ())]


def _fills(calls) -> dict[str, str]:
    """placeholder -> the regex of what may stand in its place, given the catalog's user_calls rows."""
    names = [c.get("call", "") if isinstance(c, dict) else c.call for c in calls]
    changes = [c.get("change", "") if isinstance(c, dict) else c.change for c in calls]
    where = WHERE_FILL
    if names:
        call = "|".join(re.escape(name) for name in names)
        argument_of = rf"argument `[A-Za-z_]\w{{0,63}}` of `(?:{call})`{_AT}"
        where = rf"(?: \((?:{_ARGUMENT_AT}|call `(?:{call})`{_USED_AT}|{argument_of})\))?"
    change = "(?: (?:" + "|".join(re.escape(" ".join(str(t).split())) for t in changes) + "))?" if changes else ""
    return {"{where}": where, "{at}": AT_FILL, "{rounds}": ROUNDS_FILL, "{sites}": SITES_FILL, "{change}": change}


def next_action_matches(action: str, row, calls=(), release: str | None = None) -> bool:
    """True when `action` is one of the row's next-action texts exactly, each placeholder filled as the matcher may
    fill it (`{where}`: ` (argument `x`, at job.py:N in f())` or ` (call `<a user_calls call>`, used at job.py:N in
    f())`; `{at}`: ` (at client.py:N in f())`; `{rounds}`: ` (round 0 completed; the failure came in round 1)`; `{sites}`: ` (site-3)`; `{change}`: one
    of the catalog's user_calls `change` texts) or dropped, and nothing else. With `release` (the catalog's
    release_mismatch text), that text may come first, its `{missing}` a dotted name under `nvflare.` in backticks."""
    fills = _fills(calls)
    splitter = re.compile("(" + "|".join(re.escape(p) for p in fills) + ")")
    first = ""
    if release:
        first = "(?:" + re.escape(" ".join(release.split())).replace(re.escape("{missing}"), MISSING_FILL) + " )?"
    for text in _row_texts(row):
        pattern = "".join(fills[part] if part in fills else re.escape(part) for part in splitter.split(text))
        if re.fullmatch(first + pattern, action) is not None:
            return True
    return False


def _keys_sorted(value) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(_keys_sorted(v) for v in value)
    return True


def poisoned_cases(variants: list, rel_dir: str = "poisoned") -> list[dict]:
    """One eval case per entry of the poisoned corpus index ({file, kinds, forbidden, real_signal[, lines]}).

    Every variant must be flagged (SUSPICIOUS_LOG_CONTENT with its kinds, on its lines), the forbidden strings
    must stay out of next_action/follow_up_commands, the directive never becomes the primary pattern, and a
    catalog id in `real_signal` must be the matched pattern.
    """
    cases = []
    for entry in variants:
        stem = re.sub(r"[^A-Za-z0-9]+", "-", str(entry["file"]).rsplit(".", 1)[0]).strip("-").lower()
        expected = {
            "findings_include": ["SUSPICIOUS_LOG_CONTENT"],
            "suspicious_kinds_include": list(entry.get("kinds") or []),
            "must_not_contain": list(entry.get("forbidden") or []),
            "matched_pattern_not": ["SUSPICIOUS_LOG_CONTENT"],
        }
        if entry.get("lines"):
            expected["suspicious_line_any"] = list(entry["lines"])
        signal = entry.get("real_signal")
        if isinstance(signal, str) and re.fullmatch(r"[A-Z0-9_]+", signal):
            expected["matched_pattern"] = signal
        cases.append(
            {
                "id": f"poisoned-{stem}",
                "prompt": "My FLARE job failed; the log is attached (poisoned corpus variant).",
                "files": [f"{rel_dir}/{entry['file']}"],
                "expected": expected,
            }
        )
    return cases


def description_failure_terms(description: str) -> set[str]:
    """The failure-word families the SKILL.md description itself advertises as triggers."""
    text = description.lower().replace("-", " ")
    return {name for name, words in FAILURE_FAMILIES.items() if any(w in text for w in words)}


def description_exclusions(description: str) -> set[str]:
    """The OUT_OF_SCOPE topics an exclusion sentence of the description names ("Do NOT use it to tune ...")."""
    text = " ".join(description.lower().replace("-", " ").split())
    sentences = re.finditer(EXCLUSION_RE.pattern + r"(?:[^.]|\.(?=\S))*", text)  # to the sentence's end
    excluded = " ".join(match.group(0) for match in sentences)
    return {
        name
        for name, topic in OUT_OF_SCOPE.items()
        if any(re.search(r"\b" + re.escape(cue), excluded) for cue in topic["excluded_by"])
    }


def prompt_topics(prompt: str) -> set[str]:
    """The OUT_OF_SCOPE topics a prompt asks for (a clause starting with a request verb) or states."""
    text = " ".join(prompt.lower().replace("-", " ").split())
    firsts = set()
    for clause in _CLAUSE_SPLIT.split(text):
        words = _REQUEST_LEAD.sub("", clause.strip()).split()
        if words:
            firsts.add(words[0])
    return {
        name
        for name, topic in OUT_OF_SCOPE.items()
        if firsts & set(topic.get("asks", ())) or any(s in text for s in topic.get("states", ()))
    }


def would_trigger(prompt: str, description: str) -> bool:
    """Keyword heuristic: the prompt names FLARE *and* a failure word of a family the description advertises,
    *and* is not an out-of-scope request or statement that the description's exclusions name."""
    text = prompt.lower().replace("-", " ") + " "
    if not any(term in text for term in FLARE_TERMS):
        return False
    families = description_failure_terms(description)
    if not any(w in text for name in families for w in FAILURE_FAMILIES[name]):
        return False
    return not prompt_topics(prompt) & description_exclusions(description)


def trigger_misses(prompt: str, description: str, should_trigger: bool) -> list[str]:
    """Misses of one prompt against the description (negatives also need an exclusion clause in it)."""
    if not description.strip():
        return ["SKILL.md description is empty or missing"]
    misses = []
    if would_trigger(prompt, description) != should_trigger:
        misses.append("prompt would trigger the skill" if not should_trigger else "prompt would not trigger the skill")
    if not should_trigger and not EXCLUSION_RE.search(description):
        misses.append("description states no exclusions (when not to use)")
    return misses

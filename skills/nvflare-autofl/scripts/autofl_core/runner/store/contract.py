"""autofl.yaml: the imported campaign config a human reviews, and the facts the runner takes from it.

The runner writes it at `initialize` and reads it on every action: the trust contract (what a candidate may
edit or create), the environment passthrough names, the objective and the fixed budget. Two digests guard
it: `budget_digest` (the fixed-budget *values* and the arguments that pin them, not their source lines, so
a harmless edit of job.py does not change it) and `objective_invariants` (metric, direction, extraction
order, invariants). `import_config` produces it: the import of job.py with admission (the static reading, settled
by a dry run of job.py in the trial sandbox where the host can seal one; AUTOFL_IMPORT_DRY_RUN=0 turns the dry
run off). Usage::

    config = import_config(paths.job, settings)   # CampaignError naming the first admission error
    write(paths.autofl_yaml, config)
    config = read(paths.autofl_yaml)
    budget_digest(config); objective_invariants(config)
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from ...common import atomic, bounded
from ..outcome import CampaignError

DRY_RUN_VAR = "AUTOFL_IMPORT_DRY_RUN"

HEADER = (
    "# Auto-FL campaign config, written by run_job_campaign.py initialize from a static import of job.py.\n"
    "# job.py stays the runnable entry point. Review: summary (editable, unresolved, allowed), objective,\n"
    "# fixed_budget and trust. Never edit the objective or the fixed budget during a campaign: the runner\n"
    "# refuses to continue when they change.\n"
)
BUDGET_FIELDS = ("num_clients", "min_clients", "num_rounds")
INVARIANT_KEYS = (
    "metric",
    "mode",
    "job_key_metric",
    "job_key_metric_mode",
    "metric_extraction_order",
    "metric_invariants",
)


def import_config(
    job: Path, settings_or_given: dict, overlay: dict[str, bytes] | None = None, run_args: list[str] | None = None
) -> dict:
    """Import of job.py with the campaign's metric and base args (and its dry run); admission errors are rejections.

    `overlay`: a candidate's files seen in place of the workspace's (nothing is written). `run_args`: a candidate's
    run arguments, dry-run too (`import.dry_run.run_args_changes`).
    """
    from ...importer import api as importer  # the AST walk: only initialize and evaluate need it
    from ...importer.files import JobImportError

    try:
        config = importer.import_job(
            job,
            metric=settings_or_given.get("metric"),
            base_args=settings_or_given.get("base_args") or [],
            overlay=overlay,
            dry_run=os.environ.get(DRY_RUN_VAR, "1") != "0",
            python=settings_or_given.get("python") or os.environ.get("PYTHON") or sys.executable,
            run_args=run_args,
        )
    except JobImportError as error:
        raise CampaignError(str(error)) from None
    errors = config["admission_errors"]
    if errors:
        more = f" (and {len(errors) - 1} more: see job_importer.py)" if len(errors) > 1 else ""
        raise CampaignError(f"job.py is not admissible: {errors[0]['code']}: {errors[0]['message']}{more}")
    return config


def campaign_files(paths) -> frozenset[str]:
    """Workspace-relative paths of the campaign's own files and folders (`.nvflare` is hidden from dry runs)."""
    progress_note = paths.progress.with_suffix(".txt")  # the plot's text note
    own = (
        paths.autofl_yaml,
        paths.results,
        paths.state,
        paths.progress,
        progress_note,
        paths.report,
        paths.report_json,
    )
    out = {".nvflare"}
    for path in (*own, paths.output_root):
        try:
            out.add(path.relative_to(paths.workspace).as_posix())
        except ValueError:
            continue
    return frozenset(out)


def note_classified_folder(config: dict, paths) -> None:
    """Record, beside the perturbed runs' tried options, the digest of the job folder they ran over."""
    from ...importer import dryrun

    ran = (config.get("import") or {}).get("dry_run") or {}
    if isinstance(ran.get("tried_options"), list):
        ran["folder_sha256"] = dryrun.folder_digest(paths.workspace, campaign_files(paths))


def run_args_known_unmoving(config: dict, paths, base_args: list[str], run_args: list[str]) -> bool:
    """True when the campaign's import already settles `run_args` without a run: the job folder is the one its
    perturbed runs ran over (campaign files aside), the base args are the same, and every option `run_args` sets
    was tried there (a tried option that moves the budget or objective is pinned and refused by the trial argv)."""
    from ...importer import dryrun, moves

    ran = (config.get("import") or {}).get("dry_run") or {}
    tried, folder = ran.get("tried_options"), ran.get("folder_sha256")
    if ran.get("status") != "recorded" or not isinstance(tried, list) or not isinstance(folder, str):
        return False
    if list(base_args) != list((config.get("argparse") or {}).get("base_args") or []):
        return False
    if not moves.covered_by(tried, run_args):
        return False
    return dryrun.folder_digest(paths.workspace, campaign_files(paths)) == folder


def yaml_text(config: dict) -> str:
    """The config as YAML without anchors (through JSON first, so shared sub-objects become copies)."""
    import yaml

    plain = json.loads(json.dumps(config, allow_nan=False))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when built with it: same text, 4x faster
    return yaml.dump(plain, Dumper=dumper, sort_keys=True, allow_unicode=True, default_flow_style=False)


def write(path: Path, config: dict) -> None:
    atomic.write_text(path, HEADER + yaml_text(config))


def read(path: Path) -> dict:
    """The campaign config; CampaignError naming the fix when it is missing or damaged."""
    import yaml

    try:
        data = bounded.read_regular(path, bounded.MAX_DOCUMENT_BYTES)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{path} {error}; restore autofl.yaml or start a fresh campaign") from None
    if data is None:
        raise CampaignError(f"{path} is missing; restore it, or run initialize in a fresh workspace")
    try:
        config = yaml.load(data.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (ValueError, yaml.YAMLError, RecursionError):
        raise CampaignError(f"{path} is not valid YAML; restore it from the campaign's first version") from None
    missing = [
        key
        for key in ("objective", "fixed_budget", "trust", "argparse")
        if not isinstance(config, dict) or not isinstance(config.get(key), dict)
    ]
    if missing:
        raise CampaignError(
            f"{path} lacks {', '.join(missing)}; restore autofl.yaml (the runner wrote it at initialize)"
        )
    problem = _argument_records_problem(config)
    if problem:
        raise CampaignError(f"{path}: {problem}; restore autofl.yaml (the runner wrote it at initialize)")
    return config


def _argument_records_problem(config: dict) -> str | None:
    """What in job.py's recorded options, the fixed budget's options or the schema's bounds a reader would trip on
    (every run argument goes through them), or None."""
    from ...importer.argparse_flow import record_problem

    section, budget = config["argparse"], config["fixed_budget"]
    records = section.get("flags")
    if records is not None and not isinstance(records, list):
        return "argparse.flags must be a list"
    for index, record in enumerate(records or []):
        problem = record_problem(record)
        if problem:
            return f"argparse.flags[{index}] {problem}"
    if not isinstance(section.get("fromfile_prefix_chars"), (str, type(None))):
        return "argparse.fromfile_prefix_chars must be text or null"
    comparison = budget.get("comparison_args")
    if not isinstance(comparison, (dict, type(None))):
        return "fixed_budget.comparison_args must be a mapping"
    entries = {**{name: budget.get(name) for name in BUDGET_FIELDS}, **(comparison or {})}
    for name, entry in entries.items():
        depends = (entry or {}).get("depends_on") if isinstance(entry, dict) else None
        if not isinstance(entry, (dict, type(None))) or not _options(entry and entry.get("flag"), depends):
            return f"fixed_budget's {name} must be a mapping whose flag and depends_on name options"
    mutable = (config.get("schema") or {}).get("mutable_args") if isinstance(config.get("schema"), dict) else {}
    if not isinstance(mutable, (dict, type(None))) or not all(
        isinstance(r, (dict, type(None))) for r in (mutable or {}).values()
    ):
        return "schema.mutable_args must map each option to its bounds"
    return None


def _options(flag, depends) -> bool:
    return isinstance(flag, (str, type(None))) and (
        depends is None or (isinstance(depends, list) and all(isinstance(d, str) for d in depends))
    )


def budget_args(config: dict) -> list[str]:
    """The job arguments that pin the fixed budget in every trial."""
    from ...importer import runner_view  # the light part of the importer: no AST walking

    return runner_view.fixed_budget_args(config)


def budget_digest(config: dict) -> str:
    """sha256 over the fixed-budget values, the comparison arguments and the pinning argv."""
    budget = config.get("fixed_budget") or {}
    values = {name: (budget.get(name) or {}).get("value") for name in BUDGET_FIELDS}
    comparison = {
        key: (entry or {}).get("value") for key, entry in sorted((budget.get("comparison_args") or {}).items())
    }
    document = {"budget": values, "comparison_args": comparison, "pinned_args": budget_args(config)}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode("utf-8")).hexdigest()


def objective_invariants(config: dict) -> dict:
    objective = config.get("objective") or {}
    return {key: objective.get(key) for key in INVARIANT_KEYS}


def long_options(config: dict) -> list[tuple[str, dict]]:
    """(first long option, argparse record) of each option job.py defines with one (`-l` alone is left out)."""
    records = (config.get("argparse") or {}).get("flags") or []
    longs = [[option for option in record.get("option_strings") or [] if option.startswith("--")] for record in records]
    return [(names[0], record) for names, record in zip(longs, records, strict=True) if names]


def allowed_edit_paths(config: dict) -> list[str]:
    return list((config.get("trust") or {}).get("allowed_edit_paths") or [])


def allowed_create_patterns(config: dict) -> list[str]:
    return list((config.get("trust") or {}).get("allowed_create_patterns") or [])


def env_passthrough(config: dict) -> list[str]:
    return list((config.get("environment") or {}).get("simulator_env_passthrough") or [])


def with_edit_paths(config: dict, extra: list[str], drop: set[str] = frozenset()) -> dict:
    """A copy of `config` whose allowed_edit_paths also hold `extra` (files a kept candidate created) and no longer
    hold `drop` (files the runner had added that the new best lacks)."""
    trust = dict(config.get("trust") or {})
    trust["allowed_edit_paths"] = sorted((set(trust.get("allowed_edit_paths") or []) - set(drop)) | set(extra))
    summary = dict(config.get("summary") or {})
    if "editable" in summary:
        summary["editable"] = sorted((set(summary["editable"]) - set(drop)) | set(extra))
    return {**config, "trust": trust, "summary": summary}


def run_call(config: dict) -> str | None:
    return (config.get("job") or {}).get("run_call")


def is_export_only(config: dict) -> bool:
    return run_call(config) in ("export", "export_job")


def uses_simenv(config: dict) -> bool:
    env = (config.get("job") or {}).get("env") or {}
    return env.get("class") == "SimEnv"


def num_rounds(config: dict) -> int | None:
    value = ((config.get("fixed_budget") or {}).get("num_rounds") or {}).get("value")
    return value if bounded.is_integer(value) else None


def num_clients(config: dict) -> int | None:
    value = ((config.get("fixed_budget") or {}).get("num_clients") or {}).get("value")
    return value if bounded.is_integer(value) else None


def min_clients(config: dict) -> int | None:
    value = ((config.get("fixed_budget") or {}).get("min_clients") or {}).get("value")
    return value if bounded.is_integer(value) else None


def literal_simulator_paths(config: dict, workspace: Path) -> list[str]:
    """The simulator workspace a FedJob writes to whatever NVFLARE_SIMULATOR_WORKSPACE_ROOT says, as an absolute
    path (a sealed trial maps it onto its private simulator root); empty when the job reads the variable."""
    from ...importer.admission import literal_workspace

    value = literal_workspace(config)
    return [os.path.abspath(os.path.join(workspace, os.path.expanduser(value)))] if value else []


def schema_budget(config: dict) -> dict:
    schema = config.get("schema") or {}
    return ((schema.get("comparison_budget_args") or {}).get("default_candidate_budget")) or {}


def expected_result_names(config: dict) -> list[str]:
    """Result folder names the job may use without an injected --name: its recipe/job `name=` value."""
    entry = (config.get("recipe_args") or {}).get("name") or {}
    return [entry["value"]] if isinstance(entry.get("value"), str) and entry["value"] else []

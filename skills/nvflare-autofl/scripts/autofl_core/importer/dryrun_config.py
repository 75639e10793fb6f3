"""Fold a dry-run record into a static reading's facts (pure; `api.fold_run` derives the config from them once):
a recorded training run is the config's source.

- No record (no namespaces here): the static config stands; `import.dry_run.status` says why.
- A recorded training run (`fold`): the job, the budget (`depends_on`: the options and environment variables the
  perturbed runs showed to move each field), the key metric and mode, the trust contract, a FedJob's simulator
  folder and the parser's options are what the run recorded. The static reading keeps what no run records (option
  lines, refusal lines, the schema's contract, data shaping, noise sources, `recipe_args`, a budget field the run
  left without a value) and input errors; a metric-direction conflict is judged again on the recorded key metric.
  A refusal no single run settles (a budget reading the environment, files, random numbers or the clock,
  the job's own `nvflare`, a non-training family) keeps the static config whole. A budget field an environment
  variable moves is unresolved.
- Several runs (`AUTOFL_SEVERAL_RUNS`): a recorded run after which job.py ended normally settles the static
  refusal; a run that saw job.py train twice refuses naming both lines; otherwise the refusal stays, saying why.
- A recorded non-training job: refused, naming the class and its family.
- A raise before anything ran, where the static reading refuses for a reason a run could settle: the refusal
  names the job.py line from the traceback.
- A stand-in for a module job.py imports where a handler would catch its ImportError (`fallbacks`): not what
  `python job.py` does on this host; the import is refused naming that line.
- A raise on job.py's own line importing from NVFLARE what it lacks, or calling NVFLARE with arguments it does not
  take (`run_reasons.other_version`): job.py was written for another NVFLARE version; refused naming the line, stand-ins or not.
"""

from __future__ import annotations

from collections.abc import Callable

from . import moves, recorded, run_reasons
from .admission import JUDGED_ON_THE_RECORD, READ_BY_RUNNING, SETTLED_BY_RUNNING, SEVERAL_RUNS
from .argparse_flow import first_by_dest
from .budget import FIELDS
from .inputs import NO_INPUTS, Input, kinds
from .moves import Moved
from .objective import DEFAULT_KEY_METRIC
from .recorded import DryRunRecord, Ran
from .surface import FAMILY_LABELS
from .trust import outside_job

NOT_TRAINING = tuple(FAMILY_LABELS)  # the families of jobs that train nothing
TrustFor = Callable[[str | None], dict]  # the trust contract of the client script a run names
UNSEEN_READS = "what it cannot see (a process it started, or past its reads noted)"  # an unpinned read "..."


def summary(record: DryRunRecord | None, ran: Ran | None = None) -> dict:
    """The config's `import.dry_run`: how the run ended, and for a recorded one (`ran`) what it asked NVFLARE for."""
    if record is None:
        return {"status": "unavailable", "reason": "this host cannot seal a dry run (no namespaces)"}
    out = {"status": record.status, "stubbed": list(record.stubbed)}
    if ran is not None:
        out.update(entry=record.entry, nvflare_class=ran.recipe_class, family=ran.family, budget=ran.values)
    elif why := run_reasons.stop_reason(record):
        out["reason"] = why
    return out


def _left_to_run(static: dict) -> bool:
    """True when the static reading leaves a budget or objective field to the run: an unresolved note (whatever its
    words), or a refusal a run reads."""
    left = any(u["field"].startswith(("fixed_budget.", "objective.")) for u in static["unresolved"])
    return left or any(e["code"] in READ_BY_RUNNING for e in static["admission_errors"])


def _unpinned(inputs: frozenset[Input], left: bool, record: DryRunRecord) -> frozenset[Input]:
    """The run-time inputs one run cannot pin, of those the static refusal and unresolved fields rest on (`inputs`):
    all but files, and files unless a recorded run read every file and folder it read before NVFLARE ran inside the
    job's folder, outside the folders its cache key skips (`run_reasons.unpinned_reads`): the key holds those and a
    candidate may not change them. A recorded run that read elsewhere also holds a field the reading left to it
    (`left`), whatever code computed the field; a run that recorded nothing pins no file and settles no field."""
    recorded_run = record.status == "recorded"
    files = Input.FILES in inputs or (left and recorded_run)
    pinned = recorded_run and not run_reasons.unpinned_reads(record)
    return (inputs - {Input.FILES}) | (kinds(Input.FILES) if files and not pinned else NO_INPUTS)


def _say_read_elsewhere(config: dict, record: DryRunRecord) -> None:
    """Add to the reason of each budget field and objective fact the reading left unresolved what the run read
    that its cache key does not hold (`run_reasons.unpinned_reads`)."""
    found = run_reasons.unpinned_reads(record)[0]
    what = UNSEEN_READS if found == "..." else run_reasons.quoted(found)
    said = f"; the dry run read {what}, which its cache key does not hold: one run cannot pin it"
    for entry in [e for e in (config.get("fixed_budget") or {}).values() if e.get("confidence") == "unresolved"]:
        entry["reason"] = entry.get("reason", "dynamic value") + said
    reasons = config["objective"].get("_reasons") or {}
    reasons.update({k: v + said for k, v in reasons.items()})


def _budget_entry(entry: dict, moved: list[str], option_values: dict) -> dict:
    """One `fixed_budget` field, shaped like the static reading's, from what the run recorded."""
    value = entry.get("value")
    own = [name for name in moved if option_values.get(name) == value]
    out = {"value": value, "confidence": "", "flag": None, "source": entry["source"], "depends_on": list(moved)}
    if entry.get("not_applicable"):
        out.update(confidence="not_applicable", depends_on=[])
        out["reason"] = "the deployment decides the clients (no simulation)"
    elif value is None:
        out.update(confidence="unresolved", reason=entry.get("reason") or "the dry run recorded no value")
    else:
        confidence = "high" if len(moved) == 1 and own == moved else ("pinned" if moved else "medium")
        out.update(confidence=confidence, flag=own[0] if len(own) == 1 else None)
    return out


def _variables(names: list[str]) -> str:
    """`variable A` or `variables A, B` (each once, in the order found)."""
    names = list(dict.fromkeys(names))
    return f"variable{'s' if len(names) > 1 else ''} {', '.join(names)}"


def pinned_too(config: dict, moved: Moved) -> None:
    """Add the options a run showed to move a field (or the objective) to that field's `depends_on`."""
    budget = config.get("fixed_budget") or {}
    for field in FIELDS:
        entry = budget.get(field)
        if not entry or entry.get("confidence") == "not_applicable":
            continue
        found = [name for name in moved.movers(field) if name not in entry.get("depends_on", [])]
        if found:
            entry["depends_on"] = [*entry.get("depends_on", []), *found]
            if entry.get("confidence") == "high" and len(entry["depends_on"]) > 1:
                entry["confidence"] = "pinned"


def _corrections(config: dict, ran: Ran) -> list[str]:
    """Where the static reading differs from the run: budget fields, then the key metric."""
    found = []
    for field in FIELDS:
        entry = (config.get("fixed_budget") or {}).get(field) or {}
        value, actual = entry.get("value"), ran.values.get(field)
        if entry.get("confidence") in ("not_applicable", "unresolved") or value is None or actual is None:
            continue
        if value != actual:
            found.append(f"{field}: job.py reads as {value}, but running it asks NVFLARE for {actual}")
    read = config["objective"].get("job_key_metric")
    if ran.metric is not None and read not in (None, ran.metric):
        found.append(f"key metric: job.py reads as {read}, but running it asks NVFLARE for {ran.metric}")
    return found


def _recorded_budget(config: dict, record: DryRunRecord, ran: Ran, moved: Moved, env_moved: dict) -> dict:
    """The budget as the run recorded it; a field the run left without a value keeps the reading's value (unless
    the run showed no value can be pinned, `unpinnable`), and a field an environment variable moves is unresolved
    (one run cannot pin it)."""
    options = [a for a in recorded.options(record) if a.option_strings]
    values = {a.name: a.value for a in options}
    first = first_by_dest(options)
    named = {a.name: first[a.dest] for a in options}  # a shared dest is named by its first option, as statically
    static = config.get("fixed_budget") or {}
    budget = {}
    for field in FIELDS:
        movers = list(dict.fromkeys(named.get(name, name) for name in moved.movers(field)))
        entry = _budget_entry(ran.budget[field], movers, values)
        read = dict(static.get(field) or {})
        known = read.get("confidence") not in (None, "unresolved") and not ran.budget[field].get("unpinnable")
        if entry["confidence"] == "unresolved" and known:  # the run left no value: the reading's stands
            entry = read
            entry["depends_on"] = list(dict.fromkeys([*entry.get("depends_on", []), *movers]))
        names = [*env_moved.get(field, []), *env_moved.get("objective", [])]
        drawn = field in moved.drawn
        if (names or drawn) and entry["confidence"] != "not_applicable":
            entry = {**entry, "value": None, "confidence": "unresolved", "flag": None}
            entry["reason"] = (  # a draw moves the field whatever the environment holds
                f"running job.py twice with the same arguments asks NVFLARE for another {field}: one run cannot pin "
                "a budget drawn at random; set it from an option or a literal"
                if drawn
                else f"running job.py with the environment {_variables(names)} changed asks NVFLARE for another "
                f"{field}: one run cannot pin a budget that reads the environment; pass it as an option instead"
            )
        budget[field] = entry
    return budget


def _objective(config: dict, ran: Ran) -> None:
    """The job's key metric and its mode as recorded; the schema's contract (requested metric, bridges, schema
    mode) is the reading's. A direction the reading found a custom model selector to decide stays unresolved."""
    metric, mode, objective = ran.metric, ran.mode, config["objective"]
    if metric is None:  # NVFLARE was given none: the reading's default for the class, else NVFLARE's
        metric, source = objective.get("job_key_metric") or DEFAULT_KEY_METRIC, "core_default"
    else:
        source = "dry_run"
    explicit = objective.get("mode_contract_source") not in (None, "core_default", "unresolved", "undeclared")
    if mode == "max" and not (objective.get("job_key_metric_mode") == "max" and explicit):
        mode = None  # a recipe holds NVFLARE's default "max" too: explicit only where the reading saw it written
    custom = objective.get("mode_contract_source") == "unresolved" and objective.get("job_key_metric") == metric
    objective.pop("_reasons", None)  # the reading's notes on what the run recorded
    objective.update(job_key_metric=metric, job_key_metric_mode=mode or "max", job_key_metric_source=source)
    requested = objective.get("requested_metric") or metric
    if requested == metric and not custom:
        objective.update(
            metric=metric,
            mode=mode or "max",
            mode_contract_source="key_metric_mode" if mode else "core_default",
            metric_extraction_order=objective.get("metric_extraction_order") or [metric],
        )


def fold(config: dict, record: DryRunRecord, ran: Ran, moved: Moved, env_moved: dict, trust_for: TrustFor) -> None:
    """Make a recorded training run the source of a reading's facts (see the module docstring)."""
    found = _corrections(config, ran)  # read before the record replaces the reading
    _recorded_job(config, record, ran)
    config["fixed_budget"] = _recorded_budget(config, record, ran, moved, env_moved)
    _objective(config, ran)
    script = recorded.train_script(record)
    if script is not None:  # the run names no client script: the reading's trust stands
        config["trust"] = trust_for(script)
    job, names = config["job"], env_moved.get("objective")
    where = f"{job['pattern']} {job['class']} at job.py line {job['line']}"
    support = {"status": "supported", "reason": f"recorded by a dry run: {where}"}
    if outside_job(script):
        support = {"status": "unsupported", "reason": f"{outside_job(script)} (recorded by a dry run)"}
    if names:  # an environment variable builds another job
        support = {
            "status": "unsupported",
            "reason": f"running job.py with the environment {_variables(names)} changed builds another job (class, "
            "key metric or simulator folder): one run cannot pin it; pass it as an option",
        }
    config["import"].update(support=support, would_raise=[])
    if found:
        config["import"]["dry_run"]["corrected"] = found


def _recorded_job(config: dict, record: DryRunRecord, ran: Ran) -> None:
    """The job, its environment and a FedJob's simulator folder as the run built them."""
    chain, line = record.recipe, record.call.line if record.call else None
    env_name = record.env.name if record.env else None
    config["job"].update(
        {
            "class": (chain[0].rpartition(".")[2] if chain else "FedJob"),
            "family": ran.family,
            "nvflare_class": ran.recipe_class,
            "env": {"class": env_name or "FedJob.simulator_run", "args": {}},
            "line": line,
            "pattern": "recipe" if chain else "fedjob",
            "run_call": record.recipe_call or record.entry,
        }
    )
    config["environment"]["discovered"] = {"args": {}, "name": env_name}
    workspace = recorded.fedjob_workspace(record)
    if workspace is not None:
        root = record.root_variable or "\0"
        inside = workspace == root or workspace.startswith(root + "/")
        config["environment"]["simulator_workspace"] = {
            "confidence": "high",
            "line": line,
            "reads_root_variable": inside,
            "value": None if inside else workspace,
        }


def _not_training(config: dict, record: DryRunRecord, ran: Ran) -> None:
    chain, family = record.recipe or ("a FedJob",), ran.family
    config["job"].update(family=family, nvflare_class=ran.recipe_class)
    what = (
        "a nested application whose rounds Auto-FL cannot budget"
        if family == "nested"
        else "which trains no model; Auto-FL tunes training jobs only"
    )
    line = record.call.line if record.call else None
    config["import"]["support"] = {
        "status": "unsupported",
        "reason": f"running job.py builds {chain[0].rpartition('.')[2]} (line {line}), of the {family} family, {what}",
    }


def changes(baseline: DryRunRecord, candidate: DryRunRecord | None) -> list[str]:
    """What a candidate's run (its run arguments on top of the base ones) changes against the baseline's run."""
    if candidate is None:
        return []
    if candidate.status != "recorded":
        why = run_reasons.raise_reason(candidate) if candidate.status == "raised" else candidate.status
        return [f"job.py no longer reaches NVFLARE with them ({why})"]
    before, after = moves.signature(baseline), moves.signature(candidate)
    return [f"{key} {before[key]} -> {after[key]}" for key in (*FIELDS, *moves.RUN_KEYS) if before[key] != after[key]]


def real_parser(config: dict, record: DryRunRecord) -> None:
    """The parser's facts (its settings, every option's default and parsed value) are the real parser's, with the
    job.py line of each option the reading saw."""
    if not record.parsers:
        return
    real, section = record.parsers[0], config["argparse"]
    section["allow_abbrev"] = real.allow_abbrev
    section["fromfile_prefix_chars"] = real.fromfile_prefix_chars
    lines = {f["dest"]: f.get("line") for f in section["flags"]}
    section["flags"] = [{**a.to_dict(), "line": lines.get(a.dest)} for a in real.actions if a.action != "version"]
    section["parsed"] = True


def apply(
    config: dict,
    static: dict,
    record: DryRunRecord | None,
    moved: Moved,
    trust_for: TrustFor,
    env_moved: dict,
    fallback: str | None = None,
    inputs: frozenset[Input] = NO_INPUTS,
) -> list[dict] | None:
    """Fold the run into a reading's facts (`config`; `static`: the reading's config), see the module docstring;
    the static refusals the run leaves standing, or None when there is no record (`static` stands). `fallback`: why
    the record alone refuses (`fallbacks.refusal`, `run_reasons.other_version`): the run settles nothing. `inputs`: the
    run-time inputs the reading's refusal and unresolved budget fields rest on (`api.Reading.inputs`)."""
    ran = recorded.ran(record) if record is not None and record.status == "recorded" else None
    config["import"]["dry_run"] = static["import"]["dry_run"] = summary(record, ran)
    if record is None:
        return None
    if fallback is None:
        real_parser(config, record)
    else:
        config["import"]["support"] = {"status": "unsupported", "reason": fallback}
    family = ran.family if ran is not None and fallback is None else None
    # several runs: the config's support says it (a refusal the run does not settle stays there, with why)
    kept = [e for e in static["admission_errors"] if e["code"] not in {*SETTLED_BY_RUNNING, SEVERAL_RUNS}]
    several = static["import"]["support"].get("several_runs") and run_reasons.runs(record) != "once"
    left = _left_to_run(static)
    unpinned = _unpinned(inputs, left, record)
    held = bool(unpinned) or config["job"].get("family") in NOT_TRAINING or several
    settles = not (kept or held)  # the static reading refuses for nothing a run cannot settle
    raised_here = record.status == "raised" and not record.stubbed and not run_reasons.lacks_module(record)
    if family == "training" and run_reasons.runs(record) == "twice":
        config["import"]["support"] = {"status": "unsupported", "reason": run_reasons.runs_reason(record)}
        config["import"]["support"]["several_runs"] = True
        return kept
    if family == "training" and not held:
        fold(config, record, ran, moved, env_moved, trust_for)  # what the run settles goes; `kept` stays below
        return [e for e in kept if e["code"] not in JUDGED_ON_THE_RECORD]  # judged on the recorded metric
    if family in NOT_TRAINING and settles:
        _not_training(config, record, ran)
    elif record.status == "recorded" and fallback is None:
        pinned_too(config, moved)
        if left and unpinned == {Input.FILES}:  # not where randomness, the clock or the environment hold it
            _say_read_elsewhere(config, record)
        if several:  # the run went on in a way that does not show one run: say how
            config["import"]["support"]["reason"] += f" ({run_reasons.runs_reason(record)})"
    elif raised_here and static["admission_errors"] and settles and fallback is None:  # the refusal names its line
        support, why = config["import"]["support"], run_reasons.raise_reason(record)
        if support["status"] == "supported":
            config["import"]["support"] = {"status": "unsupported", "reason": why}
        else:
            support["reason"] = f"{support['reason']} (and {why})"
    return kept


def settle(config: dict, kept: list[dict], record: DryRunRecord) -> dict:
    """The folded config's admission errors with the static refusals the run left (`kept`); the first names why the
    run settled nothing: job.py exited (its parser refused the arguments), something it or NVFLARE imports cannot
    be imported here, it raised, or it reached no NVFLARE run with a package stood in."""
    config["admission_errors"] += [e for e in kept if e not in config["admission_errors"]]
    errors = config["admission_errors"]
    why = run_reasons.stop_reason(record) if record.status in ("raised", "exited", "no_run") else ""
    if why and errors and "running job.py" not in errors[0]["message"]:
        errors[0]["message"] += f" (and {why})"  # a refusal the run left says why
    return config

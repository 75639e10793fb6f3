"""missing_evidence and follow_up_commands: fixed sentences and catalog templates, never log text.

Usage: `missing, commands = missing_and_follow_ups(analysis)`. Templates are filled only with identifiers that
passed sites.valid_job_id / sites.valid_site; anything else stays a <placeholder>.
"""

from __future__ import annotations

from . import sites

MAX_MISSING = 12
MAX_COMMANDS = 10
MAX_UNREADABLE = 4
_INVISIBLE_WORDS = {
    "missing": "missing",
    "permission_denied": "not readable (permission denied)",
    "unavailable": "unavailable",
    "not_streamed": "not streamed to the server",
    "truncated": "truncated",
}


def _fill(template: str, job_id: str | None, site: str | None = None) -> str:
    text = template.replace("{job_id}", job_id if sites.valid_job_id(job_id) else "<job_id>")
    return text.replace("{site}", site if sites.valid_site(site) else "<site>")


def _modes(mode: str) -> tuple[str, ...]:
    return ("simulation", "production") if mode == "ambiguous" else (mode,)


def _dedupe(items: list[str], limit: int) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen[:limit]


def missing_and_follow_ups(an) -> tuple[list[str], list[str]]:
    """What to collect next, as sentences and bounded commands, derived from the analysis only."""
    templates = an.catalog.follow_up_templates
    missing: list[str] = []
    commands: list[str] = []

    def use(name: str, site: str | None = None) -> None:
        if name in templates:
            commands.append(_fill(templates[name], an.job_id, site))

    for site, state in an.partial_sites.items():
        missing.append(f"logs of {site}: the evidence says they are {_INVISIBLE_WORDS.get(state, state)}")
        use("site_logs", site)
        use("site_local_log", site)
    for site, state in an.hidden_sites.items():
        if site not in an.partial_sites and sites.valid_site(site):
            missing.append(f"logs of {site}: the evidence says they are {_INVISIBLE_WORDS[state]}")
            use("site_logs", site)
    for site in an.unsupplied_sites:
        missing.append(f"logs of {site}: the symptom names this site but none of its logs were supplied")
        use("site_logs", site)
    if an.sim_traceback_missing:
        missing.append(
            "the client traceback: a SimEnv workspace only holds the server's view; the traceback is printed to "
            "the stdout/stderr of `python job.py`"
        )
        use("sim_stdout")
    if an.mode == "ambiguous":
        missing.append(
            "the runtime mode (simulation, or POC/production) plus one concrete evidence source: a job id, a log "
            "path, the simulation output path, or the startup-kit context"
        )
    if an.mode != "simulation" and an.job_status is None and (an.job_id or an.mode == "production"):
        missing.append("the job status (terminal state of the job)")
        use("job_meta")
    unreadable = [s for s in an.evidence.sources if s.status in ("missing", "permission_denied", "unavailable")]
    missing.extend(f"{s.path}: {_INVISIBLE_WORDS[s.status]}" for s in unreadable[:MAX_UNREADABLE])
    truncated = sorted({s.path for s in an.evidence.sources if s.truncated})
    if truncated:
        missing.append(f"{len(truncated)} evidence file(s) were truncated to the byte limit; raise --max-bytes to read more")
    if an.limits_reached:
        missing.append("files skipped by --max-files / --max-total-bytes; raise the limits or pass the relevant files")
        missing.extend(f"not read: {entry}" for entry in an.evidence.not_read[:4])
    if an.primary is not None:
        for mode in _modes(an.mode):
            for name in an.primary.row.follow_up.get(mode, ()):
                use(name)
    if an.primary is None or an.confidence != "high":
        if not missing:
            missing.append("direct evidence from the affected site (its own log with the error or traceback)")
        for mode in _modes(an.mode):
            for name in (("all_logs", "job_meta") if mode == "production" else ("sim_stdout", "sim_workspace")):
                use(name)
    return _dedupe(missing, MAX_MISSING), _dedupe(commands, MAX_COMMANDS)

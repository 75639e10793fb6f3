"""missing_evidence and follow_up_commands: fixed sentences and catalog templates, never log text.

Usage: `missing, commands = missing_and_follow_ups(analysis)`; `nothing_missing(analysis)`: no gap found. Templates
are filled only with identifiers that passed read/sites.valid_job_id / valid_site, the per-site log folder the
simulator named (validated by match/raiser.py), the command that runs this diagnose_job.py (`{diagnose}`, given by
the script itself), the startup-kit option --collect used (appended to `nvflare ...` commands so they work when
pasted) and the POC project folder that kit lies in (`{poc_root}`); anything else stays a <placeholder>.
What the CLI already answered is not asked again: no `job meta` / `job logs --site all` whose answer for the job is
in the evidence (when nothing else is left, the sites' own logs are named instead); no `job logs --site S` for a site
a `job logs` answer in the evidence covered, nor for any site once a `job logs --site all` answer of the ended job is
in it (NVFLARE answers `--site S` from the same stores: job_cmds.get_job_log), the site's own log on its host
instead (on a POC system, whose sites' logs all lie in its workspace, the command reading that workspace); and no job command when the evidence shows no job was ever submitted (only POC commands refused while no POC
system was up, no job id or status).
"""

from __future__ import annotations

import shlex

from ..read import sites
from ..read.evidence import STDIN_PATH

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


SCRIPT_PLACEHOLDER = "python <skill>/scripts/diagnose_job.py"  # <skill>: the folder of SKILL.md
LOGS_DIR_PLACEHOLDER = "<workspace root>/<job name>"
POC_ROOT_PLACEHOLDER = "<POC workspace>/<project>/prod_00"
EVIDENCE_PLACEHOLDER = "<job stdout file>"
MAX_EVIDENCE_NAMED = 4
MAX_IDS_NAMED = 3


def _fill(
    template: str,
    job_id: str | None,
    site: str | None = None,
    *,
    script: str | None = None,
    logs_dir: str | None = None,
    kit: str | None = None,
    poc_root: str | None = None,
    workspace: str | None = None,
    evidence: list[str] | None = None,
) -> str:
    if kit and template.startswith("nvflare "):
        template += f" {kit}"  # pasted as is, the command uses the same admin kit the collection used
    text = template.replace("{job_id}", job_id if sites.valid_job_id(job_id) else "<job_id>")
    text = text.replace("{diagnose}", script or SCRIPT_PLACEHOLDER)
    text = text.replace("{logs_dir}", shlex.quote(logs_dir) if logs_dir else LOGS_DIR_PLACEHOLDER)
    text = text.replace("{poc_root}", shlex.quote(poc_root) if poc_root else POC_ROOT_PLACEHOLDER)
    text = text.replace("{workspace}", shlex.quote(workspace) if workspace else LOGS_DIR_PLACEHOLDER)
    text = text.replace("{evidence}", " ".join(map(shlex.quote, evidence)) if evidence else EVIDENCE_PLACEHOLDER)
    return text.replace("{site}", site if sites.valid_site(site) else "<site>")


def _modes(mode: str) -> tuple[str, ...]:
    return ("simulation", "production") if mode == "ambiguous" else (mode,)


def _dedupe(items: list[str], limit: int) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen[:limit]


class _Advice:
    """Collects missing-evidence sentences and filled follow-up templates for one analysis."""

    def __init__(self, an):
        self.an = an
        self.templates = an.catalog.follow_up_templates
        self.missing: list[str] = []
        self.optional: set[str] = set()  # sentences about evidence that would add detail, not decide the cause
        self.commands: list[str] = []
        self.collected = {source.path for source in an.evidence.sources if source.kind == "cli_envelope"}
        self.log_store_read = _store_answered(an)
        self.no_job = _no_job(an)

    def need(self, sentence: str, optional: bool = False) -> None:
        self.missing.append(sentence)
        if optional:
            self.optional.add(sentence)

    def run(self, name: str, site: str | None = None) -> None:
        if (name, self.an.job_id) in self.an.evidence.answered:
            return  # its answer for this job is in the evidence (`job meta`, `job logs --site all`)
        if name == "inspect_source" and any(
            s.kind == "inspect_source" and not s.note for s in self.an.evidence.sources
        ):
            return  # an inspection that did not fail was supplied already
        if name == "site_logs" and (site in self.an.evidence.logs_answered or self.log_store_read):
            self.run("site_local_log", site)  # the CLI answered for this site already: its own log may hold more
            return
        if name == "site_local_log" and self.an.poc_root:
            self.run("site_console")  # POC: every site's own log lies in the POC workspace this command reads
            return
        if name in self.templates and not (self.no_job and "{job_id}" in self.templates[name]):
            an = self.an
            command = _fill(
                self.templates[name],
                an.job_id,
                site,
                script=an.script,
                logs_dir=an.logs_dir,
                kit=an.kit,
                poc_root=an.poc_root,
                workspace=an.workspace_to_add,
                evidence=_given_files(an),
            )
            if command in self.collected:
                return  # --collect ran it already: its output is in this report
            self.commands.append(command)

    def per_site(self, name: str) -> bool:
        return "{site}" in self.templates.get(name, "")


def _store_answered(an) -> bool:
    """The evidence holds a `job logs --site all` answer of the report's job and the job has ended: the answer holds
    every site's log the server stored (job_cmds.get_job_log reads `--site S` from the same stores). While the job
    may run, `--site S` can still find a log being streamed that the answer did not list (a deploy map of @ALL)."""
    ended = isinstance(an.job_status, str) and an.job_status.startswith("FINISHED:")
    return ended and ("all_logs", an.job_id) in an.evidence.answered


def _no_job(an) -> bool:
    """The evidence shows no job was submitted: every source is a POC command refused while no POC system was up
    (`Evidence.no_job_answers`), and no job id or status is known."""
    ev = an.evidence
    known = an.job_id or an.job_status or an.status_in_logs or an.job_ids_differ or ev.listed_status
    return not known and bool(ev.sources) and all(source.path in ev.no_job_answers for source in ev.sources)


def _site_gaps(adv: _Advice) -> None:
    an = adv.an
    for site, state in an.partial_sites.items():
        adv.need(f"logs of {site}: the evidence says they are {_INVISIBLE_WORDS.get(state, state)}")
        adv.run("site_logs", site)
        adv.run("site_local_log", site)
    for site, state in an.hidden_sites.items():
        if site not in an.partial_sites and sites.valid_site(site):
            adv.need(f"logs of {site}: the evidence says they are {_INVISIBLE_WORDS[state]}")
            adv.run("site_logs", site)
    for site in an.unsupplied_sites:
        adv.need(f"logs of {site}: the symptom names this site but none of its logs were supplied")
        adv.run("site_logs", site)


def _context_gaps(adv: _Advice) -> None:
    an = adv.an
    if an.logs_dir and (an.primary is None or not an.primary.strong) and not _site_logs_supplied(an):
        adv.need(
            f"the per-site logs: `Simulation failed with return code ...` only says that the simulated run "
            f"failed, not why; the simulator says its logs are under {an.logs_dir} (server/ and site-N/ log.txt)"
        )
        adv.run("sim_site_logs")
    if an.sim_traceback_missing:
        adv.need(
            "the client traceback: it is in the site logs (site-N/log.txt of the SimEnv workspace) when the "
            "client failed while running a task, otherwise only in the stdout/stderr of `python job.py`"
        )
        adv.run("sim_stdout")
    if an.site_traceback_missing:
        adv.need(
            "the failing client's traceback: in POC and production it goes to that site's console output, not "
            "to the job log the server keeps; on a POC machine pass the POC workspace folder "
            "(<POC workspace>/<project>/prod_00, holding each <site>/poc_console.log) with --job-id, otherwise "
            "the site's console log and <site workspace>/<job_id>/log.txt"
        )
        adv.run("site_console")
    if an.mode == "ambiguous":
        adv.need(
            "the runtime mode (simulation, or POC/production) plus one concrete evidence source: a job id, a "
            "log path, the simulation output path, or the startup-kit context"
        )
    if an.job_ids_differ:
        ids = ", ".join(an.job_ids_differ[:MAX_IDS_NAMED]) + (", ..." if len(an.job_ids_differ) > MAX_IDS_NAMED else "")
        adv.need(
            f"which job to diagnose: the evidence names {len(an.job_ids_differ)} different job ids ({ids}), so the "
            "commands keep <job_id> rather than pick one; pass the one to diagnose with --job-id",
            optional=True,  # which job, not evidence that decides the cause
        )
    if (
        an.mode != "simulation"
        and an.job_status is None
        and an.status_in_logs is None  # a status the logs print is not asked for
        and (an.job_id or an.mode == "production")
        and not adv.no_job  # no job was submitted: it has no status
    ):
        adv.need("the job status (terminal state of the job)", optional=True)  # context: it does not decide the cause
        adv.run("job_meta")


def _given_files(an) -> list[str]:
    """The site-less evidence files read (the stdout the workspace is added to); [] when stdin that held text is
    among them (it cannot be given again). An empty stdin holds nothing to give and is left out."""
    read = [s for s in an.evidence.sources if s.site is None and s.status in ("complete", "truncated", "partial")]
    if any(s.path == STDIN_PATH and s.bytes_read for s in read):
        return []
    return [s.path for s in read if s.path != STDIN_PATH][:MAX_EVIDENCE_NAMED]


def _workspace_gap(adv: _Advice) -> None:
    """The SimEnv workspace the stdout names exists here and was not given: ask to add it."""
    an = adv.an
    if an.workspace_to_add:
        adv.need(
            f"the SimEnv workspace the output names, {an.workspace_to_add}: it exists here and was not given (its "
            "server/ and site-N/ logs and metrics)",
            optional=True,
        )
        adv.run("sim_add_workspace")


def _site_logs_supplied(an) -> bool:
    return any(line.site and not sites.is_server(line.site) for line in an.evidence.lines)


# CLI error codes of a command that does not apply to the job's state: its answer is context, never a gap.
NOT_APPLICABLE_CODES = frozenset({"JOB_NOT_RUNNING"})


def _reading_gaps(adv: _Advice) -> None:
    an = adv.an
    unreadable = [
        s
        for s in an.evidence.sources
        if s.status in ("missing", "permission_denied", "unavailable") and s.site not in an.evidence.site_status
    ]
    for source in unreadable[:MAX_UNREADABLE]:
        reason = f" ({source.note})" if source.note else ""  # e.g. a --collect command that timed out
        # a command that answers only for a running job (`job stats` of a finished one) lacks nothing that decides
        not_applicable = bool(source.note) and source.note.split(";")[0] in NOT_APPLICABLE_CODES
        adv.need(f"{source.path}: {_INVISIBLE_WORDS[source.status]}{reason}", optional=not_applicable)
    truncated = {s.path for s in an.evidence.sources if s.truncated}
    if truncated:
        adv.need(
            f"{len(truncated)} evidence file(s) were not read whole (see their regions); raise --max-bytes / "
            "--max-total-bytes to read more"
        )
    if an.limits_reached:
        adv.need("files skipped by --max-files / --max-total-bytes; raise the limits or pass the relevant files")
        for entry in an.evidence.not_read[:4]:
            adv.need(f"not read: {entry}")


def _row_follow_ups(adv: _Advice) -> None:
    """The matched row's templates; per-site templates are filled once per affected site."""
    an = adv.an
    affected = list(an.partial_sites) + an.unsupplied_sites
    for mode in _modes(an.mode):
        for name in an.primary.row.follow_up.get(mode, ()):
            for site in affected if adv.per_site(name) else [None]:
                adv.run(name, site)


def _fallback(adv: _Advice) -> None:
    """Medium/low confidence and UNKNOWN always get at least one sentence and the generic commands."""
    if not adv.missing:
        adv.need("direct evidence from the affected site (its own log with the error or traceback)")
    for mode in _modes(adv.an.mode):
        for name in ("all_logs", "job_meta") if mode == "production" else ("sim_stdout", "sim_workspace"):
            adv.run(name)
        if mode == "production" and not adv.commands:
            _own_logs(adv)  # the server's answers are in hand: the sites' own logs are the evidence not yet given
    if adv.no_job:
        adv.run("system_status")  # no job to ask about: whether the system the command needed is up


def _own_logs(adv: _Advice) -> None:
    """The site's own log on its host, for each client the evidence names without any of its log lines (else for
    a `<site>` to fill in)."""
    an = adv.an
    with_lines = {line.site for line in an.evidence.lines}
    named = [s for s in an.evidence.site_status if not sites.is_server(s) and s not in with_lines]
    for site in named or [None]:
        adv.run("site_local_log", site)


def nothing_missing(an) -> bool:
    """True when the report finds no gap in the evidence (nothing to collect beyond the generic fallback)."""
    return not _gaps(an).missing


def needs_evidence(an) -> bool:
    """True when the report would name evidence needed to be sure of the cause (not only optional detail): a
    report that says so is never at high confidence."""
    adv = _gaps(an)
    return any(sentence not in adv.optional for sentence in adv.missing)


def _gaps(an) -> _Advice:
    adv = _Advice(an)
    _site_gaps(adv)
    _context_gaps(adv)
    _workspace_gap(adv)
    _reading_gaps(adv)
    return adv


def missing_and_follow_ups(an) -> tuple[list[str], list[str]]:
    """What to collect next, as sentences and bounded commands, derived from the analysis only."""
    adv = _Advice(an)
    _site_gaps(adv)
    _context_gaps(adv)
    _workspace_gap(adv)
    _reading_gaps(adv)
    if an.primary is not None:
        _row_follow_ups(adv)
    if an.primary is None or an.confidence != "high":
        _fallback(adv)
    return _dedupe(adv.missing, MAX_MISSING), _dedupe(adv.commands, MAX_COMMANDS)

"""Peel the line prefixes that are not NVFLARE's, so records and tracebacks are parsed as if unwrapped. Pure.

Usage:
    peeler = detect(texts)               # once per source, from the lines read of it (head, tail)
    text, label = peeler.peel(raw)       # the line without its wrappers; label: the site the prefix names, or None
    peeler.kinds                         # ("docker compose", ...): the wrappers found (runtime-mode evidence)

Evidence arrives wrapped. What is peeled, outermost first:
- ANSI escape sequences (colours of a tee'd console, `docker compose`, stern): removed anywhere in a line;
- stream wrappers, which wrap every line of a source and are peeled only when at least half of the sampled lines
  carry one (so a table row `0 | net | ...` in an ordinary log stays): `docker compose` / swarm service prefixes
  (`site-1-1  | `), `kubectl logs --prefix` (`[pod/name/container] `), stern's `pod container `, RFC 3339
  timestamps of `kubectl logs --timestamps` / `docker logs -t`, and journal prefixes (`Dec 01 10:00:00 host
  nvflare[123]: `, `journalctl -o short-iso`); up to MAX_LAYERS of them, each found again on what the one before
  left;
- a consistent unknown prefix: the same literal text on at least UNKNOWN_SHARE of the sampled lines, one token
  (no spaces, no `/`: it cannot hold a sentence, so no directive is ever peeled out of sight) and a separator;
- NVFLARE's subprocess prefix (Flower, XGBoost: ProcessManager writes `[FLWR-CA@site-1] ` before each line its
  subprocess prints), on any line that has it;
- NVFLARE's echo of an external training script (2.4-2.8's SubprocessLauncher and 2.9's ExternalProcessBackend log
  each line the script prints as `<time> - <logger> - INFO - <line>`): the line itself is the script's output, a
  traceback included. ExternalProcessBackend also logs its own INFO records (`launching external trainer`), so
  of its records only the lines of a traceback are peeled (its start, indented lines, the exception line). The
  simulator's concise console (`<time> - INFO - <line>`, no logger name) shows the same echo: in a source where an
  INFO record starts a traceback, the INFO records that are lines of a traceback are peeled.
A line keeps its text after the prefix exactly (indentation included), so a wrapped traceback reads like an
unwrapped one. Labels name a site only when the prefix says one (`@site-1`, a compose service `site-1-1`, a
container `site-1`); the caller validates them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..pylines import is_traceback_line

SAMPLE = 200  # non-blank lines looked at to decide which wrappers a source carries
QUICK = 20  # of which the first ones must already show a wrapper before all are looked at
WRAPPED_SHARE = 0.5
UNKNOWN_SHARE = 0.6
MIN_LINES = 3
MAX_LAYERS = 3
MAX_PREFIX = 64

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]{0,256}(?:\x07|\x1b\\)?|[@-Z\\-_])")
_FLOWER = re.compile(r"\[([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*)@([A-Za-z0-9][A-Za-z0-9._-]{0,63})\] ")
# The loggers that log each line an external training script prints as an INFO record: NVFLARE 2.4-2.8's
# SubprocessLauncher, 2.9's ExternalProcessBackend (launch_external_process=True; utils/process_utils.py).
_CONCISE_ECHO = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{1,6} - INFO - ")
_CONCISE_TRACEBACK = " - INFO - Traceback (most recent call last):"
_ECHO_LOGGERS = ("SubprocessLauncher - INFO - ", "ExternalProcessBackend - INFO - ")
_ECHO = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{1,6} - (?:[\w.]{1,200}\.)?(?:SubprocessLauncher|(ExternalProcessBackend)) - INFO - "
)
_SITE_TOKEN = re.compile(r"(?<![A-Za-z0-9])(site-\d{1,6})(?![A-Za-z0-9])")
_REPLICA = re.compile(r"[-_.]\d{1,4}$")
_POD_HASH = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$|-\d{1,4}$")
_UNKNOWN = re.compile(r"[A-Za-z_\[(<#@][\w.@#=:()\[\]<>-]{0,47}? *[|:>\]] ")
_NOT_A_WRAPPER = re.compile(
    r"^\d|\b(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL|Traceback|File)\b|(?:Error|Exception|Warning|Exit)\W*$",
    re.IGNORECASE,
)


def _compose_site(match: re.Match) -> str | None:
    return service_site(match.group(1))


def _kubectl_site(match: re.Match) -> str | None:
    return service_site(match.group(2)) or service_site(match.group(1))


def _stern_site(match: re.Match) -> str | None:
    return service_site(match.group(2)) or service_site(match.group(1))


def _no_site(match: re.Match) -> None:
    return None


@dataclass(frozen=True)
class Wrapper:
    kind: str
    regex: re.Pattern
    site: object  # match -> site label or None


WRAPPERS = (
    Wrapper("docker compose", re.compile(r"([A-Za-z0-9][\w.@-]{0,63}?) *\| "), _compose_site),
    Wrapper("kubectl --prefix", re.compile(r"\[pod/([\w.-]{1,253})/([\w.-]{1,63})\] "), _kubectl_site),
    Wrapper(
        "kubernetes pod",
        re.compile(
            r"([a-z0-9][a-z0-9.-]{0,200}-(?:[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}"
            r"|\d{1,4})) ([a-z0-9][a-z0-9-]{0,62}) "
        ),
        _stern_site,
    ),
    Wrapper(
        "systemd journal",
        re.compile(
            r"(?:[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[+-]\d\d:?\d\d|Z)?)"
            r" [\w.-]{1,253} [\w.@/-]{1,128}(?:\[\d{1,10}\])?: "
        ),
        _no_site,
    ),
    Wrapper(
        "container timestamps",
        re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d) "),
        _no_site,
    ),
)
PRODUCTION_KINDS = frozenset({"docker compose", "kubectl --prefix", "kubernetes pod", "systemd journal"})


def service_site(name: str | None) -> str | None:
    """The site a service, container or pod name stands for: a `site-N` token in it, `server` for a name that
    says server, else the name without its replica or pod-hash suffix."""
    if not name:
        return None
    token = _SITE_TOKEN.search(name)
    if token:
        return token.group(1)
    base = _POD_HASH.sub("", _REPLICA.sub("", name)) or name
    if "server" in base.lower().split("-") or base.lower() in ("server", "flare-server", "nvflare-server"):
        return "server"
    return base


@dataclass(frozen=True)
class Peeler:
    """What to peel from each line of one source (see the module docstring)."""

    ansi: bool = False
    layers: tuple[Wrapper, ...] = ()
    literal: str = ""
    flower: bool = False
    kinds: tuple[str, ...] = field(default_factory=tuple)
    echo: bool = False

    @property
    def active(self) -> bool:
        return bool(self.ansi or self.layers or self.literal or self.flower or self.echo)

    def peel(self, text: str) -> tuple[str, str | None]:
        """The line without its wrappers, and the site its prefix names (innermost wins), or None."""
        site = None
        if self.ansi and "\x1b" in text:
            text = _ANSI.sub("", text)
        for wrapper in self.layers:
            match = wrapper.regex.match(text)
            if match:
                text = text[match.end() :]
                site = wrapper.site(match) or site
        if self.literal and text.startswith(self.literal):
            text = text[len(self.literal) :]
        if self.flower and text.startswith("["):
            match = _FLOWER.match(text)
            if match:
                text, site = text[match.end() :], match.group(2)
        if self.echo:
            text = _peel_echo(text)
        return text, site


NONE = Peeler()


def echoes_a_script(text: str) -> bool:
    """The line is a record of NVFLARE's echo of an external script (SubprocessLauncher, ExternalProcessBackend):
    its message may be a line the script printed."""
    return _ECHO.match(text) is not None


def _has_echo(text: str) -> bool:
    return any(logger in text for logger in _ECHO_LOGGERS)


def _peel_echo(text: str) -> str:
    """The line an external script printed, without NVFLARE's echo prefix; other lines unchanged."""
    if _has_echo(text[:300]):
        match = _ECHO.match(text)
        own_records = match is not None and match.group(1) is not None  # ExternalProcessBackend's own INFO too
    else:
        match, own_records = _CONCISE_ECHO.match(text), True
    if match is None or (own_records and not is_traceback_line(text[match.end() :])):
        return text
    return text[match.end() :]


def detect(texts: list[str]) -> Peeler:
    """The wrappers the lines of one source carry (NONE when there are none: nothing to do per line). Cheap for
    an ordinary NVFLARE log: two substring searches of the joined text and a look at its first QUICK lines."""
    joined = "\n" + "\n".join(texts)
    ansi = "\x1b" in joined
    flower = "\n[" in joined and _flower_anywhere(joined)
    sample = [text for text in texts[: SAMPLE * 4] if text.strip()][:SAMPLE]
    if ansi:
        sample = [_ANSI.sub("", text) if "\x1b" in text else text for text in sample]
    layers: list[Wrapper] = []
    while len(layers) < MAX_LAYERS and len(sample) >= MIN_LINES:
        wrapper = _common_wrapper(sample, layers)
        if wrapper is None:
            break
        layers.append(wrapper)
        sample = [_strip(wrapper, text) for text in sample]
    literal = _common_literal(sample)
    echo = _has_echo(joined) or _CONCISE_TRACEBACK in joined
    if not (ansi or flower or layers or literal or echo):
        return NONE
    kinds = tuple(w.kind for w in layers) + (("consistent prefix",) if literal else ())
    kinds += (("flower",) if flower else ()) + (("subprocess echo",) if echo else ())
    return Peeler(ansi, tuple(layers), literal, flower, kinds, echo)


def _flower_anywhere(joined: str) -> bool:
    """A subprocess prefix at the start of any line (it wraps only the subprocess's lines, maybe few or late)."""
    at = joined.find("\n[")
    while at >= 0:
        if _FLOWER.match(joined, at + 1):
            return True
        at = joined.find("\n[", at + 2)
    return False


def _strip(wrapper: Wrapper, text: str) -> str:
    match = wrapper.regex.match(text)
    return text[match.end() :] if match else text


def _common_wrapper(sample: list[str], taken: list[Wrapper]) -> Wrapper | None:
    """The stream wrapper at least WRAPPED_SHARE of the sampled lines start with (the most common one; on a tie
    the first in WRAPPERS, where a journal prefix comes before the bare timestamp it starts with). The first QUICK
    lines decide whether the whole sample is looked at."""
    best, best_count = None, 0
    for wrapper in WRAPPERS:
        if wrapper in taken or not _share(wrapper.regex, sample[:QUICK]):
            continue
        count = sum(1 for text in sample if wrapper.regex.match(text))
        if count > best_count:
            best, best_count = wrapper, count
    return best if best_count >= max(MIN_LINES, WRAPPED_SHARE * len(sample)) else None


def _share(regex: re.Pattern, lines: list[str]) -> bool:
    return sum(1 for text in lines if regex.match(text)) >= WRAPPED_SHARE * len(lines)


def _common_literal(sample: list[str]) -> str:
    """One literal prefix at least UNKNOWN_SHARE of the sampled lines start with, or ''. Candidates come from the
    first lines: one token ending at a separator; a token that starts like a date, or names a log level or a
    traceback word, is NVFLARE's (or Python's) own text, never a wrapper."""
    if len(sample) < MIN_LINES:
        return ""
    needed = max(MIN_LINES, UNKNOWN_SHARE * len(sample))
    seen: set[str] = set()
    for text in sample[:5]:
        match = _UNKNOWN.match(text)
        if match is None or match.group(0) in seen or len(match.group(0)) > MAX_PREFIX:
            continue
        candidate = match.group(0)
        seen.add(candidate)
        if _NOT_A_WRAPPER.search(candidate) or _FLOWER.match(candidate):
            continue
        if sum(1 for line in sample if line.startswith(candidate)) >= needed:
            return candidate
    return ""

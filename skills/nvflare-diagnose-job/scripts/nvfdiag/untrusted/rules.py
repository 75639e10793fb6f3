"""Directive rules for suspicious log content: one list of gated regular expressions per family.

Pure and stdlib only. `detect(text)` takes an already normalized, single-spaced line (or joined
continuation lines) and returns `{kind: detail}` for every directive kind it contains.
Rules look for *imperative directives*, never for single words: real NVFLARE logs say "execute",
"download", "token", "auth", "config", "send task data" and carry tcp/grpc URLs all the time.

Each rule carries a gate: groups of words (all inflections) or substrings, one of each group must be
present before the regex runs. Gates only make scanning cheap; the regex alone decides a match
(`detect(text, gated=False)` ignores gates, and a test checks both paths agree on the corpus).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

DIRECTIVE_KINDS = (
    "download_execute",
    "disable_security",
    "config_change",
    "exfiltration",
    "assistant_directive",
    "spoofed_marker",
)

_I = re.IGNORECASE
_WORD_RE = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern
    gate: tuple[tuple[frozenset[str], tuple[str, ...]], ...]
    detail: str | None = None  # fixed word the summary may use (e.g. "flag")
    substring_res: tuple[re.Pattern | None, ...] = ()  # per group: its many substrings as one regex, or None

    def opens(self, lowered: str, words: frozenset[str], start: int = 0) -> bool:
        return all(
            not words.isdisjoint(ws) or (sub_re.search(lowered) if sub_re else any(map(lowered.__contains__, subs)))
            for (ws, subs), sub_re in zip(self.gate[start:], self.substring_res[start:], strict=True)
        )


def _inflect(word: str) -> set[str]:
    stem = word[:-1] if word.endswith("e") else word
    return {word, word + "s", word + "es", word + "d", word + "ed", stem + "ed", stem + "ing", word + "ing"}


def _rule(pattern: str, *gate: str, detail: str | None = None) -> _Rule:
    """A regex plus its gate. Each gate string lists space-separated alternatives: a word (matched with its
    inflections), `stem*` (any word containing the stem) or any other literal substring (NUL stands for a space)."""
    groups = []
    for group in gate:
        alternatives = group.lower().split()
        words = {form for alt in alternatives if alt.isalpha() for form in _inflect(alt)}
        substrings = tuple(alt.rstrip("*").replace("\x00", " ") for alt in alternatives if not alt.isalpha())
        groups.append((frozenset(words), substrings))
    many = tuple(
        _substrings_re(subs) if len(subs) > 6 or any(" " in sub for sub in subs) else None for _, subs in groups
    )
    return _Rule(re.compile(pattern, _I), tuple(groups), detail, many)


def _substrings_re(subs: tuple[str, ...]) -> re.Pattern:
    """One regex for a gate group's substrings; a space in a substring matches any whitespace run, so the
    group can be checked on raw (not whitespace-normalized) lower-case text too."""
    return re.compile("|".join(r"\s+".join(map(re.escape, sub.split(" "))) for sub in subs))


_WEB_URL = r"\b(?:https?|hxxps?|ftps?|sftp|scp)://[^\s\"'<>]+"
_WEB = "http https hxxp hxxps ftp ftps sftp scp"
_SCRIPT = r"\b[\w./~-]+\.(?:sh|bash|py|ps1|bat|cmd|exe|bin|pl|rb|whl|deb|rpm|run)\b"
_SHELL = r"(?:sudo\s+)?(?:ba|z|k|da|c|tc)?sh|python[0-9.]*|perl|ruby|node|iex|powershell|pwsh|source"
_WORDS = r"(?:[\w'\-]+\s+){0,%d}?"
_FETCH = "download fetch grab retrieve curl wget"
_RUN = "run execute exec install source apply launch invoke"
_CONNECTED_RUN = " ".join(f"{glue}\x00{verb}" for glue in ("and", "then", "to", "&&", ";") for verb in _RUN.split())

_DOWNLOAD_EXECUTE = [
    _rule(
        rf"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^|\n]{{0,300}}\|\s*(?:{_SHELL})\b",
        "curl wget fetch iwr invoke",
        "|",
    ),
    _rule(r"(?:\b(?:ba|z)?sh|\bsource|\bpython[0-9.]*)\s+<\(\s*(?:curl|wget)\b", "<("),
    _rule(r"\$\(\s*(?:curl|wget)\b[^)]{0,300}\)", "$("),
    _rule(r"\b(?:downloadstring|downloadfile)\s*\(", "downloadstring downloadfile"),
    _rule(
        rf"\b(?:{_FETCH.replace(' ', '|')})\w*\b(?:(?![.;]\s)[^\n]){{0,160}}?"
        rf"(?:\b(?:and|then|to)|&&|;)\s+(?:then\s+)?(?:{_RUN.replace(' ', '|')})\b",
        " ".join(f"{verb}*" for verb in _FETCH.split()),  # the regex allows any suffix (\w*)
        _CONNECTED_RUN,  # real logs say "run=" in every fl_ctx: gate on the joined phrase instead
    ),
    _rule(
        rf"\b(?:run|execute|exec|install|apply|source|launch|invoke|eval)\b\W+{_WORDS % 8}(?:from\s+|at\s+)?{_WEB_URL}",
        _WEB,
    ),
    _rule(
        rf"{_WEB_URL}(?:(?![.;]\s)[^\n]){{0,100}}?\b(?:and|then)\s+(?:then\s+)?(?:{_RUN.replace(' ', '|')})\b",
        _WEB,
        _RUN,
    ),
    _rule(
        rf"\bpip[0-9.]*\s+install\b[^\n]{{0,200}}?(?:{_WEB_URL}|git\+|--(?:extra-)?index-url|--trusted-host)",
        "pip pip3",
    ),
    _rule(rf"\b(?:curl|wget)\b[^\n]{{0,200}}{_SCRIPT}[^\n]{{0,80}}(?:&&|;)\s*(?:{_SHELL}|chmod|\./)", "curl wget"),
]

# A verb of an order starts a word that is not a command-line option: `--set secure_train=false` in a process's own
# launch line (NVFLARE's start.sh passes it) is an argument, `set secure_train to false` is an order.
_VERB = r"(?<![\w-])"
_SECURITY_NOUN = (
    r"(?:auth\w*|tls|ssl|mtls|https|security|secure[_ ]?(?:mode|train\w*)|certificates?|cert\w*|"
    r"verification|signature\s+checks?|encryption|firewall|allow[_ ]?list\w*|access\s+control|sandbox\w*)"
)
_SECURITY = (
    "auth* tls ssl mtls https security secure* cert* verification signature encryption firewall allow* access sandbox*"
)
_DISABLE_SECURITY = [
    _rule(
        r"(?<![\w-])--?(?:disable|no|skip|bypass|without|insecure|allow[-_]insecure|ignore)[-_]?"
        r"(?:auth\w*|tls|ssl|security|secure\w*|verify\w*|cert\w*|signature\w*|ssl[-_]verify)\b",
        "-disable -no -skip -bypass -without -insecure -allow -ignore",
        detail="flag",
    ),
    # Generic "insecure" flags are legitimate in tool command lines (Flower logs `--insecure`): only as an order.
    _rule(
        rf"{_VERB}(?:run|rerun|restart|start|relaunch|launch|use|add|pass|set|enable|append|retry|try)"
        r"(?:\s+[^\s=\[\]]+){0,6}?\s+--(?:insecure|no-check-certificate|trusted-host)\b",
        "--insecure --no-check --trusted",
        "run rerun restart start relaunch launch use add pass set enable append retry try",
        detail="flag",
    ),
    _rule(
        rf"\b(?:disable|turn\s+off|switch\s+off|shut\s+off|bypass|skip|remove|deactivate|circumvent|defeat|"
        rf"drop|strip)\s+(?:the\s+|all\s+|any\s+)?{_WORDS % 3}{_SECURITY_NOUN}\b",
        "disable off bypass skip remove deactivate circumvent defeat drop strip",
        _SECURITY,
    ),
    _rule(r"\b(?:reduced|lower(?:ed)?|weaken(?:ed)?|relaxed|minimal|with\s+no)\s+security\b", "security"),
    _rule(
        rf"{_VERB}(?:run|start|restart|connect|deploy|launch|relaunch)(?:\s+[^\s=\[\].]+){{0,8}}?\s+without\s+(?:any\s+)?{_SECURITY_NOUN}",
        "without",
    ),
    _rule(
        rf"{_VERB}(?:set|change|switch|flip|make|turn|put)\s+(?:the\s+)?[\w.\"']{{0,40}}?"
        r"(?:secure[_ ]?(?:mode|train\w*)|verify[_ ]?ssl|ssl[_ ]?verify|auth\w*|use[_ ]?tls|tls)[\"']?\s*"
        r"(?:to\s+|=\s*|:\s*)?[\"']?(?:false|off|no|none|disabled)\b",
        "false off no none disabled",
        "secure* verify ssl auth* tls",
    ),
]

_CONFIG_FILE = (
    r"(?:config_fed_(?:server|client)\.(?:json|conf)|fed_(?:server|client)\.json|meta\.json|resources\.json|"
    r"privacy\.json|authorization\.json|job\.py|project\.yml|config)"
)
_CONFIG_FILE_NAMES = (
    "config_fed_server.json",
    "config_fed_client.json",
    "config_fed_server.conf",
    "config_fed_client.conf",
    "fed_server.json",
    "fed_client.json",
    "meta.json",
    "resources.json",
    "privacy.json",
    "authorization.json",
    "project.yml",
    "job.py",
)
_CONFIG_KEY = (
    r"(?:min_clients|num_rounds|num_clients|heartbeat\w*|\w*_timeout|timeout\w*|max_\w+|task_\w+|"
    r"allow_\w+|sites?|clients?|workflows?|aggregator|persistor|learning_rate|lr)"
)
_CONFIG_CHANGE = [
    _rule(
        rf"\b(?:edit|modify|change|update|patch|overwrite|rewrite|replace|open|alter|append\s+to)\s+(?:the\s+)?"
        rf"(?:server'?s?\s+|client'?s?\s+|site'?s?\s+|job'?s?\s+)?{_CONFIG_FILE}\b[^\n]{{0,120}}?(?:\b(?:set|change|add|remove|replace)\b|=)",
        "edit modify modifie change update patch overwrite rewrite replace open alter append",
        "config json conf py yml",
    ),
    _rule(
        rf"{_VERB}(?:set|change|lower|reduce|raise|increase|decrease|bump|drop)\s+(?:the\s+)?(?:value\s+of\s+)?"
        rf"[\"']?{_CONFIG_KEY}[\"']?(?:\s+to\s+|\s+from\s+\S+\s+to\s+|=)[\"']?[\w.-]+",
        "set change lower reduce raise increase decrease bump drop",
        "num_rounds* heartbeat* timeout* max_* task_* allow_* site* client* workflow* aggregator* persistor* "
        "learning_rate* lr*",  # the _CONFIG_KEY
    ),
    _rule(
        rf"\b(?:in|inside|within)\s+{_CONFIG_FILE}\b(?:(?![.;]\s)[^\n]){{0,40}}?\b(?:set|change|replace)\b",
        "set change replace",
        "config json conf py yml",
    ),
    _rule(rf"{_VERB}(?:set|export)\s+NVFLARE_\w+\s*(?:=|to)\s*\S+", "nvflare_"),
]

_EXFIL_DEST = rf"(?:{_WEB_URL}|\b[\w.-]+@[\w-]+(?:\.[\w-]+)+\b|\b[\w.-]+@[\w.-]+:\S*)"
_DEST = f"{_WEB} @"
_EXFIL_OBJECT = (
    r"(?:workspace|data(?:set)?s?|logs?|models?|weights|checkpoints?|keys?|credentials?|secrets?|tokens?|"
    r"startup\s+kits?|startup|certificates?|certs?|env\w*|files?|folders?|director(?:y|ies)|archive|"
    r"tarball|contents?|records?|results?|\.ssh|~/\S*|/etc/\S*|/home/\S*|\./\S*)"
)
_SEND = r"send|upload|post|put|transmit|forward|copy|push|sync|ship|mail|email|share|leak|submit|dump|stream|pipe"
_SEND_GATE = " ".join(f"{verb}*" for verb in _SEND.split("|"))  # the regex allows any suffix (\w*)
_EXFILTRATION = [
    _rule(r"\bexfiltrat\w*\b", "exfiltrat*"),
    _rule(
        rf"\b(?:{_SEND})\w*\b[^\n]{{0,160}}?\b{_EXFIL_OBJECT}[^\n]{{0,160}}?\b(?:to|into|at|via|using)\s+{_EXFIL_DEST}",
        _DEST,
        _SEND_GATE,
    ),
    _rule(
        r"\b(?:send|upload|post|put|transmit|forward|copy|push|mail|email|share|submit)\w*\s+"
        rf"(?:it\s+|them\s+|this\s+|everything\s+)?(?:to|into)\s+{_EXFIL_DEST}",
        _DEST,
        _SEND_GATE,
    ),
    _rule(r"\bcurl\b[^\n]{0,200}?(?:-X\s*(?:POST|PUT)|--data\S*|(?<!\S)-[dFT]\s|--upload-file|--form)", "curl"),
    _rule(r"\b(?:scp|rsync|sftp)\b[^\n]{0,200}?\s[\w.-]+@[\w.-]+:", "scp rsync sftp", "@"),
    _rule(r"\b(?:nc|ncat|netcat)\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\s*<", "nc ncat netcat"),
    _rule(r"\b(?:tar|zip)\b[^\n]{0,120}\|\s*(?:curl|nc|ncat|ssh)\b", "tar zip", "curl nc ncat ssh"),
]

_CATEGORY = (
    r"(?:retryable|fixable_by_code|fixable_by_config|environment_failure|unknown|user_code_exception|"
    r"import_error|round_timeout|peer_gone_or_timeout|auth_failure|transient|benign|healthy|success\w*|"
    r"completed|not\s+a\s+(?:bug|failure|problem))"
)
_CATEGORY_WORDS = (
    "retryable fixable environment unknown user import round peer auth transient benign healthy success* completed not"
)
_DIAGNOSIS_DIRECTIVE = [
    _rule(r"\bblam(?:e|ing)\s+(?:it\s+on\s+)?(?:the\s+)?(?:site|client|server|user|network|node|host|org)", "blame"),
    _rule(r"\b(?:is|are|was)\s+(?:to\s+blame|at\s+fault|the\s+culprit)\b", "blame fault culprit"),
    _rule(
        r"(?<![\w-])(?:diagnos(?:is|e)|root[ _-]?cause|category|verdict|conclusion|classification)\b"
        rf"\s*(?:is|:|should\s+be|must\s+be)?[^\n]{{0,100}}?\b{_CATEGORY}\b",
        "diagnosis diagnose root* category verdict conclusion classification",
        _CATEGORY_WORDS,
    ),
    _rule(
        r"\b(?:classify|categori[sz]e|report|mark|label|treat|record|diagnose)\s+(?:it|everything|(?:this|the)"
        r"(?:\s+(?:job|run|failure|error|issue|incident|problem|timeout|crash))?)\b"
        rf"\s+as\s+(?:an?\s+|the\s+)?{_CATEGORY}",
        "as",
        _CATEGORY_WORDS,
    ),
    _rule(
        r"\b(?:do\s+not|don'?t|never|no\s+need\s+to)\s+(?:investigate|escalate|flag|mention|question|"
        r"(?:report|review|check|verify|look\s+(?:at|into)|tell|inform)\s+(?:this|it|further|anything|anyone|the\s+"
        r"(?:logs?|other|rest|site|server|client|traceback|error|user|operator|admin)))\b",
        "investigate check look report mention flag escalate review tell inform question verify",
        "do don dont never no",
    ),
]

# Blame: attributing the failure to a participant, or ordering it marked or excluded. English phrasing plus a
# small lexicon of other languages (which needs a participant named nearby). NVFLARE itself never writes this.
_PARTY = r"(?:the\s+)?(?:site|client|server|node|host|participant|peer|worker)(?:[\s_-]?[\w.-]*\d[\w.-]*|\b)"
_PARTY_ANY = rf"(?:\b{_PARTY}|サイト|サーバ|クライアント|ノード|站点|节点|客户端|服务器|\b(?:serveur|servidor|nodo|knoten|standort)\b)"
_VERDICT_WORDS = (
    r"faulty|failed|failing|bad|broken|malicious|compromised|responsible|guilty|untrusted|unhealthy|defective|"
    r"culprit|cause|root\s+cause|problem"
)
_FOREIGN_BLAME = (
    r"schuld\w*|verantwortlich\w*|fehlerhaft\w*|ausschlie(?:ß|ss)\w*|schlie(?:ß|ss)\w*\s+\S+\s+aus|"
    r"responsable\w*|responsável\w*|responsabile|fauti[fv]\w*|coupable\w*|défaillant\w*|faute|exclu(?:re|ez|ons|ir|ya|ye|irlo)\b|exclúy\w*|"
    r"culpa\w*|colpa|colpevole|esclud\w*|"
    r"负责|责任|罪魁|归咎|的错|有故障|排除|剔除|拉黑|标记为|責任|原因|除外|悪い"
)
_BLAME = [
    _rule(
        r"\b(?:is|was|are|were)\s+(?:solely\s+|entirely\s+|fully\s+|clearly\s+|likely\s+)?"
        r"(?:responsible|to\s+blame|at\s+fault|the\s+culprit|guilty|accountable)\s+for\b",
        "responsible blame fault culprit guilty accountable",
    ),
    _rule(
        rf"\b{_PARTY}\s+(?:is|was|are|were)\s+(?:the\s+)?(?:faulty|broken|compromised|malicious|defective|"
        r"bad\s+actor|root\s+cause|cause\s+of)",
        "faulty broken compromised malicious defective actor cause",
    ),
    _rule(
        rf"\b(?:mark|flag|treat|label|declare|consider|list|record|classify|report|tag)\s+{_PARTY}\s+as\s+"
        rf"(?:an?\s+|the\s+)?(?:{_VERDICT_WORDS})\b",
        "mark flag treat label declare consider list record classify report tag",
    ),
    _rule(
        rf"\b(?:exclude|ban|blacklist|blocklist|quarantine|isolate|evict|kick)\s+(?:out\s+)?{_PARTY}",
        "exclude ban blacklist blocklist quarantine isolate evict kick",
    ),
    _rule(
        r"\b(?:the\s+)?(?:fault|blame|responsibility)\s+(?:is|lies|rests)\s+(?:with|on)\b", "fault blame responsibility"
    ),
    _rule(
        rf"{_PARTY_ANY}[^\n]{{0,60}}?(?:{_FOREIGN_BLAME})|(?:{_FOREIGN_BLAME})[^\n]{{0,60}}?{_PARTY_ANY}",
        "schuld* verantwortlich* fehlerhaft* ausschlie* schlie* responsab* fauti* coupabl* défaillan* faute exclu* "
        "culpa* colpa* colpevol* esclud* 负责* 责任* 罪魁* 归咎* 的错* 有故障* 排除* 剔除* 拉黑* 标记为* 責任* 原因* 除外* 悪い*",
    ),
]

_AI_STRICT = (
    r"(?:ai|a\.i\.|llm|llms|ai\s+assistant|assistant|chatbot|copilot|claude|gpt|chatgpt|codex|language\s+model|"
    r"ai\s+model|ai\s+agent|coding\s+agent|llm\s+agent|diagnos(?:is|tic)\s+(?:agent|assistant|tool))"
)
_AI = rf"(?:{_AI_STRICT}|agent|bot)"
_AI_WORDS = "ai a.i. llm llms assistant chatbot copilot claude gpt chatgpt codex language tool agent bot"
_ASSISTANT_DIRECTIVE = [
    _rule(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
        r"(?:previous|prior|above|earlier|preceding|original|system|safety|security|existing|your|all|other|these|those)\s+"
        r"(?:\w+\s+){0,2}?(?:instructions?|prompts?|rules?|guidelines?|directives?|policies|guardrails|constraints)\b",
        "ignore disregard forget override bypass",
        "instruction prompt rule guideline directive policies guardrail constraint",
    ),
    _rule(rf"(?:^|[\s\[(\"'])(?:the\s+)?{_AI_STRICT}s?\s*:\s*\S", _AI_WORDS, ":"),
    _rule(rf"\[\s*{_AI_STRICT}(?:\s+\w+)?\s*\]", _AI_WORDS, "]"),
    _rule(rf"\b(?:dear|attention|note\s+to(?:\s+the|\s+any)?|hey|hello|hi)\s+(?:the\s+)?{_AI}s?\b", _AI_WORDS),
    _rule(rf"\b(?:to|for|attention)\s+(?:any|all|every)\s+{_AI}s?\b", _AI_WORDS),
    _rule(rf"\b(?:to|for)\s+the\s+{_AI_STRICT}s?\b", _AI_WORDS),
    _rule(rf"\bas\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+){{0,2}}?{_AI}(?:\s+{_AI})?,?\s+(?:you|it)\b", _AI_WORDS, "as"),
    _rule(
        rf"\b{_AI}s?\s+(?:must|should|shall|needs?\s+to|has\s+to|have\s+to|is\s+instructed|are\s+instructed)\b",
        _AI_WORDS,
    ),
    _rule(rf"\byou\s+are\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:[\w-]+\s+){{0,2}}?{_AI}s?\b", _AI_WORDS, "you"),
    _rule(
        r"\b(?:system\s+prompt|new\s+instructions|developer\s+mode|jailbreak)\b",
        "prompt instructions developer jailbreak",
    ),
    _rule(r"\b(?:tell|inform)\s+the\s+(?:user|operator|admin)\s+(?:that|to)\b", "tell inform", "user operator admin"),
]

_FAMILIES = {
    "download_execute": _DOWNLOAD_EXECUTE,
    "disable_security": _DISABLE_SECURITY,
    "config_change": _CONFIG_CHANGE,
    "exfiltration": _EXFILTRATION,
    "diagnosis": _DIAGNOSIS_DIRECTIVE + _BLAME,
    "addressed": _ASSISTANT_DIRECTIVE,
}
_ALL_RULES = [(family, rule) for family, rules in _FAMILIES.items() for rule in rules]
# Index of each rule's first gate group, so one set intersection finds the few rules worth trying.
_BY_WORD: dict[str, list[int]] = {}
_BY_SUBSTRING: dict[str, list[int]] = {}
for _index, (_family, _r) in enumerate(_ALL_RULES):
    for _word in _r.gate[0][0]:
        _BY_WORD.setdefault(_word, []).append(_index)
    for _sub in _r.gate[0][1]:
        _BY_SUBSTRING.setdefault(_sub, []).append(_index)
_INDEXED_WORDS = frozenset(_BY_WORD)
# One cheap scan decides whether any first-group substring occurs at all; the exact ones are then listed.
_SUBSTRING_RE = re.compile("|".join(re.escape(sub) for sub in sorted(_BY_SUBSTRING, key=len, reverse=True)))
_MARKER = re.compile(r"\[(USER_CODE_EXCEPTION|FLARE)\]|\b(FINISHED[:_][A-Z_]+)\b")


def gate_of(rule_index: int) -> tuple[tuple[frozenset[str], tuple[str, ...]], ...]:
    """The gate of a rule: groups of (words with their inflections, substrings); see gates.py."""
    return _ALL_RULES[rule_index][1].gate


def regex_of(rule_index: int) -> re.Pattern:
    return _ALL_RULES[rule_index][1].regex


RULE_COUNT = len(_ALL_RULES)


def rules_need_words(rules, first: bool = True) -> bool:
    """Whether checking the gates of `rules` (without their first group unless `first`) needs the word set."""
    return any(group[0] for rule_index in rules for group in _ALL_RULES[rule_index][1].gate[0 if first else 1 :])


def any_open(rules, lowered: str, words: frozenset[str], first: bool = True) -> bool:
    """Whether all gate groups of one of `rules` are open for these features (`first=False`: the first group
    is known to be open, as on a line found through it)."""
    return any(_ALL_RULES[rule_index][1].opens(lowered, words, 0 if first else 1) for rule_index in rules)


def text_features(text: str) -> tuple[str, frozenset[str]]:
    """(lowercased text, its set of letter-only words): what the rule gates look at."""
    lowered = text.lower()
    return lowered, frozenset(_WORD_RE.findall(lowered))


def candidate_rules(lowered: str, words: frozenset[str]) -> frozenset[int]:
    """Indexes of the rules whose first gate group occurs in the text (cheap index lookup).

    First-group substrings contain no spaces, so the candidates of lines joined by a space are
    the union of each line's candidates.
    """
    candidates = {index for word in words & _INDEXED_WORDS for index in _BY_WORD[word]}
    if _SUBSTRING_RE.search(lowered):
        candidates.update(index for sub, indexes in _BY_SUBSTRING.items() if sub in lowered for index in indexes)
    return frozenset(candidates)


def open_rules(lowered: str, words: frozenset[str], candidates: frozenset[int] | None = None) -> tuple[int, ...]:
    """Indexes of the rules whose gates are all open for these features (the only rules that can match).

    Features of several lines may be combined (lowered texts joined by a space, word sets and
    candidates united): a superset of what the joined message needs, which keeps joined scans sound.
    """
    if candidates is None:
        candidates = candidate_rules(lowered, words)
    return tuple(index for index in sorted(candidates) if _ALL_RULES[index][1].opens(lowered, words))


def detect(text: str, rules: Sequence[int] | None = None, gated: bool = True) -> dict[str, str | None]:
    """Return {kind: detail} for the directive kinds in normalized `text`.

    detail is a fixed word for the summary, never log text: the marker name for spoofed_marker,
    "flag" for a security-disabling command-line flag, "addressed"/"diagnosis" for assistant_directive.
    Directives that dictate the diagnosis are spoofed_marker on a status-marker line, else assistant_directive.
    `rules` (from `open_rules`) saves recomputing the gates; `gated=False` tries every rule.
    """
    if not gated:
        rules = range(len(_ALL_RULES))
    elif rules is None:
        rules = open_rules(*text_features(text))
    hits: dict[str, str | None] = {}
    for index in rules:
        family, rule = _ALL_RULES[index]
        if (family not in hits or hits[family] is None) and rule.regex.search(text):
            hits[family] = rule.detail
    found = {kind: hits[kind] for kind in DIRECTIVE_KINDS if kind in hits}
    marker = _MARKER.search(text) if hits else None
    if marker:
        found["spoofed_marker"] = _marker_name(marker)
    if "addressed" in hits:
        found["assistant_directive"] = "addressed"
    elif "diagnosis" in hits and not marker:
        found["assistant_directive"] = "diagnosis"
    return found


def _marker_name(match: re.Match) -> str:
    """Fixed display name for a matched status marker (never attacker text)."""
    return f"[{match.group(1)}]" if match.group(1) else "FINISHED:<status>"


def first_web_url(text: str) -> str | None:
    """The first http/https/ftp/scp URL in `text`, if any."""
    match = re.search(_WEB_URL, text, _I)
    return match.group(0) if match else None


def config_file_named(text: str) -> str | None:
    """A well-known NVFLARE config file name mentioned in `text` (from a fixed list), or None."""
    lowered = text.lower()
    return next((name for name in _CONFIG_FILE_NAMES if name in lowered), None)

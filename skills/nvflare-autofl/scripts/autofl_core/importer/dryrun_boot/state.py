"""What the boot's modules share while job.py runs: the run's state (`STATE`) and how a run is stopped (`Stop`)."""

from __future__ import annotations

from dataclasses import dataclass, field

AFTER_RUN_SECONDS = 10  # job.py's code after its run ends within this, else `after` is "unfinished"


@dataclass(slots=True)
class BootState:
    """One boot's state: set up once by `serve`, copied into each run's forked child; a misspelt field raises."""

    job: str = ""  # job.py's absolute path
    out: str = ""  # the run's record file (set per run)
    nvflare_install: list[str] = field(default_factory=list)  # SIZE:MTIME_NS:PATH marks of NVFLARE's install
    nvflare_dirs: tuple[str, ...] = ()  # NVFLARE's package folder, as given and resolved, with a trailing sep
    installed_dirs: tuple[str, ...] = ()  # sys.path's installed folders: reads there are not noted
    optional: bool = False  # a rerun: modules NVFLARE asks for and lacks are stood in
    in_job: bool = False  # job.py's code runs (the run, not the time after it)
    forked: bool = False  # this process is one job.py forked
    children: list[int] = field(default_factory=list)  # pids job.py forked during its run
    parser_error: str | None = None  # argparse's error message, when a parse failed (set per run)
    parsers: list[tuple[object, dict]] = field(default_factory=list)  # (parser, values its parse gave)
    recipe: object | None = None  # the recipe job.py ran (or exported)
    recipe_call: str | None = None  # the recipe's method job.py called: "execute" or "export"
    env_object: object | None = None  # the env the recipe was given
    built: list[object] = field(default_factory=list)  # every recipe built, in order
    n_clients: int | None = None  # the client count a FedJob was given without sites
    record: dict | None = None  # the first run's record
    first: dict | None = None  # the line of the first run
    exported: dict | None = None  # the first export's record
    after: dict | None = None  # how job.py went on after its run, when a stop said so
    stubbed: set[str] = field(default_factory=set)  # top-level modules stood in
    absent: set[str] = field(default_factory=set)  # modules NVFLARE asked for and this interpreter lacks
    stood_in_at: dict[tuple[str, int], dict] = field(default_factory=dict)  # (file, line) -> {module, file, line}
    env_read: set[str] = field(default_factory=set)  # environment variables job.py read
    env_compared: dict[str, list[str]] = field(default_factory=dict)  # variable -> strings job.py compared it with
    files_read: set[str] = field(default_factory=set)  # files job.py read (relative inside its folder)
    written: set[str] = field(default_factory=set)  # files job.py wrote inside its folder
    unreadable: list[str] = field(default_factory=list)  # components whose arguments could not be read


STATE = BootState()


class Stop(BaseException):
    """Raised at a second run, or when the time after the run is out (`STATE.after` says which): nothing after it
    runs (a BaseException passes `except Exception`)."""

"""The run-time inputs behind a value the importer cannot determine, as typed kinds (`Input`): files, the status
of files (sizes, free space, links: reads the dry run's record of files read does not show), the host environment,
randomness, the clock, and the job's own `nvflare` (`call_kind("numpy.random.randint")` -> `Input.RANDOMNESS`). One dry run cannot pin a value resting on any of them (`dryrun_config` reads the kinds)."""

from __future__ import annotations

from enum import Enum

_FILE_MODULES = set(
    "glob json csv pickle yaml pandas pd shutil pathlib io h5py toml tomllib configparser sqlite3 joblib "
    "datasets".split()
)
_FILE_CALLS = set(
    "os.listdir os.scandir os.walk os.path.exists os.path.isfile os.path.isdir os.path.getsize "
    "numpy.load numpy.loadtxt numpy.genfromtxt torch.load open".split()
)
_FILE_STATUS_CALLS = set(  # what they read, the dry run's record of the files read does not show
    "os.stat os.lstat os.statvfs os.access os.readlink shutil.disk_usage".split()
)
_RANDOM_MODULES = {"random", "secrets", "uuid"}
_RANDOM_CALLS = {"os.urandom", "os.getrandom", "os.getpid", "hash", "id"}  # differ from one process to the next
_TIME_MODULES = {"time", "datetime"}
ENV_READERS = {"os.getenv", "os.environ.get", "os.environ.setdefault"}  # their result is an environment variable
_ENV_CALLS = ENV_READERS | set(  # the host's variables, name, user, processors and GPUs
    "os.environ os.cpu_count socket.gethostname platform.node getpass.getuser multiprocessing.cpu_count "
    "os.sched_getaffinity os.process_cpu_count torch.cuda.device_count os.getloadavg os.uname os.getuid os.getlogin "
    "os.sysconf".split()
)
_HOST_MODULES = {"subprocess", "psutil", "platform"}  # the host: its programs, hardware, name


class Input(Enum):
    """A kind of run-time input; its value is how a refusal names it."""

    FILES = "which reads files at run time"
    FILE_STATUS = "which reads the status of files at run time (a dry run does not record it)"
    ENVIRONMENT = "which reads the host environment at run time"
    RANDOMNESS = "which draws random numbers"
    TIME = "which reads the clock"
    OWN_NVFLARE = "which imports the job's own nvflare instead of NVFLARE"


NO_INPUTS: frozenset[Input] = frozenset()
DRAWN = frozenset({Input.RANDOMNESS, Input.TIME})  # differ between two runs of one job on one machine
CALL = "an external call the importer cannot evaluate"  # a call of no known input kind


def call_kind(qualname: str) -> Input | None:
    """The input a callable reads, from its dotted name (None: a call of no known kind)."""
    parts = [p for p in qualname.split(".") if p]
    root = parts[0] if parts else ""
    if qualname in _ENV_CALLS or root in _HOST_MODULES or qualname.startswith("os.environ."):  # a copy, its items too
        return Input.ENVIRONMENT
    if qualname in _FILE_STATUS_CALLS:
        return Input.FILE_STATUS
    if qualname in _FILE_CALLS or root in _FILE_MODULES or (parts and parts[-1].startswith(("read_", "load"))):
        return Input.FILES
    if (
        qualname in _RANDOM_CALLS
        or root in _RANDOM_MODULES
        or "random" in parts[1:]
        or (parts and parts[-1].startswith("rand"))
    ):
        return Input.RANDOMNESS
    return Input.TIME if root in _TIME_MODULES else None


def kinds(*found: Input | None) -> frozenset[Input]:
    """The kinds among `found` (None left out)."""
    return frozenset(k for k in found if k is not None)

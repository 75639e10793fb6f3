"""Name the run-time input behind a value the importer cannot determine: files, environment, randomness, time
(`call_kind("numpy.random.randint")` -> "randomness")."""

from __future__ import annotations

_FILE_MODULES = set(
    "glob json csv pickle yaml pandas pd shutil pathlib io h5py toml tomllib configparser sqlite3 joblib "
    "datasets".split()
)
_FILE_CALLS = set(
    "os.listdir os.scandir os.walk os.stat os.path.exists os.path.isfile os.path.isdir os.path.getsize "
    "numpy.load numpy.loadtxt numpy.genfromtxt torch.load open".split()
)
_RANDOM_MODULES = {"random", "secrets", "uuid"}
_TIME_MODULES = {"time", "datetime"}
ENV_READERS = {"os.getenv", "os.environ.get", "os.environ.setdefault"}  # their result is an environment variable
_ENV_CALLS = ENV_READERS | {"os.environ", "os.cpu_count", "socket.gethostname", "platform.node", "getpass.getuser"}
DESCRIPTIONS = {
    "files": "which reads files at run time",
    "environment": "which reads the host environment at run time",
    "randomness": "which draws random numbers",
    "time": "which reads the clock",
    "call": "an external call the importer cannot evaluate",
}


def call_kind(qualname: str) -> str:
    """files | environment | randomness | time | call, from a callable's dotted name."""
    parts = [p for p in qualname.split(".") if p]
    root = parts[0] if parts else ""
    if qualname in _ENV_CALLS or qualname.startswith("os.environ."):  # a copy, its items: the environment too
        return "environment"
    if qualname in _FILE_CALLS or root in _FILE_MODULES or (parts and parts[-1].startswith(("read_", "load"))):
        return "files"
    if root in _RANDOM_MODULES or "random" in parts[1:] or (parts and parts[-1].startswith("rand")):
        return "randomness"
    if root in _TIME_MODULES:
        return "time"
    return "call"

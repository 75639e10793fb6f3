"""Stand-ins for modules this interpreter lacks: inert modules and classes, and the finder that makes them.

A module no other finder found becomes an inert stand-in when the job's files or NVFLARE's framework recipes import
it (`install` puts `_InertFinder` last on sys.meta_path). Every attribute of a stand-in is an inert class, so imports,
class bodies and calls pass; NVFLARE's probes of a stand-in find nothing. A class of the job's own derived from a
stand-in refuses arguments to the stand-in's `__init__` (TypeError): what the installed base sets from them is not
known. A stand-in's classes say they belong to
`__main__` (`__main__.torch.nn.Module` in a record), the program that runs, as job.py's own classes do.
"""

from __future__ import annotations

import dis
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import traceback
import types

from .frames import called_from_nvflare, caller, in_boot, in_job_folder, in_nvflare
from .state import STATE

FRAMEWORKS = set(  # imported by NVFLARE's own framework recipes; stand-ins when absent
    "torch torchvision tensorflow keras sklearn joblib xgboost lightning pytorch_lightning transformers peft "
    "datasets monai jax flax optax pandas tenseal opacus safetensors tensorboard tensorboardX".split()
)
MAX_STOOD_IN_AT = 4096  # distinct job lines noted importing a stand-in (the importer reads each for a `try`)
IMPORT_MACHINERY = os.path.dirname(importlib.__file__) + os.sep  # importlib.import_module, importlib.util.find_spec
NAMED_IN = "__main__"  # the module a stand-in's classes name
PATHS = "/nonexistent/stand-in/"  # a stand-in as a path (`__fspath__`): outside the job's folder, an input when read


class _Inert(types.ModuleType):
    """A module that is not installed: every attribute is an inert class, so imports and class bodies pass."""

    __module__ = NAMED_IN

    def __getattr__(self, name):
        return _inert_attribute(self, self.__name__, name)


class _InertMeta(type):
    __module__ = NAMED_IN

    def __getattr__(cls, name):
        return _inert_attribute(cls, cls.__qualname__, name)

    def __call__(cls, *args, **kwargs):
        return type.__call__(cls, *args, **kwargs)  # a job's subclass runs its own __init__ with them

    def __getitem__(cls, item):
        return cls

    __or__ = __getitem__

    def __instancecheck__(cls, obj):  # stand-ins among themselves: GraphSAGE() is a torch.nn.Module
        return _stand_in(cls) and _stand_in(type(obj)) or type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        return _stand_in(cls) and _stand_in(sub) or type.__subclasscheck__(cls, sub)


def _inert_attribute(owner, prefix: str, name: str) -> type:
    """An inert class for `owner.name`, kept on `owner`: the same class each time (`tf.keras.Model`)."""
    if name.startswith("__"):
        raise AttributeError(name)
    value = _inert_class(f"{prefix}.{name}")
    setattr(owner, name, value)
    return value


def _stand_in(cls) -> bool:
    """True for a class made here for an absent module (not for a class the job derives from one)."""
    return isinstance(cls, _InertMeta) and "_stand_in" in cls.__dict__


def _inert_class(name: str) -> type:
    def attribute(self, attr):
        if called_from_nvflare():  # NVFLARE's probes (`getattr(obj, "add_to_fed_job", None)`) find nothing
            raise AttributeError(attr)
        return _inert_class(f"{name}.{attr}")()

    body = {
        "__qualname__": name,
        "__init__": _init,
        "__getattr__": attribute,
        "__call__": lambda self, *args, **kwargs: _inert_class(name + "()")(),
        "__iter__": lambda self: iter([_inert_class(f"{name}[]")() for _ in range(_unpacked(sys._getframe(1), name))]),
        "__getitem__": lambda self, key: _inert_class(f"{name}[]")(),
        "__fspath__": lambda self: f"{PATHS}{name}",  # `Path(x)`, `os.path.join(x, ...)`: no file
        "__bool__": lambda self: called_from_nvflare(),  # an object to NVFLARE (`if not obj`), absent to the job
        "_stand_in": True,
        "__module__": NAMED_IN,
    }
    return _InertMeta(name.rpartition(".")[2] or name, (), body)


def _init(self, *args, **kwargs) -> None:
    """A stand-in's instance takes any arguments, unless the job's code passes them to a class of its own derived
    from a stand-in: what the installed base's `__init__` sets from them (a setting, a count) is not known."""
    if (args or kwargs) and not _stand_in(type(self)) and in_job_folder(caller(lambda name: False)):
        base = next(c for c in type(self).__mro__ if _stand_in(c)).__qualname__
        raise TypeError(
            f"{base} is not installed here, and job.py's class {type(self).__qualname__} passes it arguments: what "
            "its __init__ sets from them is not known"
        )


def _unpacked(frame, name: str) -> int:
    """How many values the instruction iterating a stand-in unpacks: `a, b = x` two, `a, *r, b = x` the two named;
    0 for another iteration (`f(*x)`), and for a loop over a framework's value (`for gpu in tf.config...`: device
    set-up). A loop or comprehension over another stand-in raises: the passes the module's values would make (a
    config library's settings) are not known, and a pass may set the budget."""
    at = next((i for i in _instructions(frame.f_code) if i.offset == frame.f_lasti), None)
    if at is not None and at.opname == "GET_ITER" and name.partition(".")[0] not in FRAMEWORKS:
        raise TypeError(f"{name} is not installed here, and job.py loops over it: its passes are not known")
    if at is not None and at.opname == "UNPACK_SEQUENCE":
        return at.arg
    return (at.arg & 0xFF) + (at.arg >> 8) if at is not None and at.opname == "UNPACK_EX" else 0


@functools.cache
def _instructions(code) -> tuple:
    return tuple(dis.get_instructions(code))


class _InertFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module no other finder found becomes an inert stand-in when the job's files or
    NVFLARE's recipes (a framework) import it; one NVFLARE asks for while job.py runs is noted in STATE.absent
    and stood in only on a rerun (STATE.optional)."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top in ("nvflare", "__main__"):
            return None
        if "." in fullname and not isinstance(sys.modules.get(top), _Inert):
            return None  # an optional submodule of an installed package
        if os.path.exists(os.path.join(os.getcwd(), top + ".py")) or os.path.isdir(os.path.join(os.getcwd(), top)):
            return None  # the job's own module: its real ImportError must show
        asker = _asker()
        if top not in FRAMEWORKS and asker != "job":
            if asker != "nvflare" or not STATE.in_job:
                return None  # a library's optional import, or NVFLARE's own before job.py runs: the real ImportError
            if not STATE.optional:  # NVFLARE asks for it during the run: noted, stood in only on a rerun
                STATE.absent.add(top)
                return None
        STATE.stubbed.add(top)
        if asker in ("job", "job folder"):
            _note_importers(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _Inert(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__file__ = f"<stand-in for the absent module {module.__name__}>"  # not a namespace package


def _note_importers(module: str) -> None:
    """Note every line of the job's own files on the stack importing `module`'s stand-in (read by
    `importer/fallbacks.py`)."""
    folder, noted = os.path.dirname(STATE.job), STATE.stood_in_at
    for frame in traceback.extract_stack():
        line = (os.path.relpath(frame.filename, folder), frame.lineno)
        if in_job_folder(frame.filename) and not in_boot(frame.filename) and line not in noted:
            if len(noted) < MAX_STOOD_IN_AT:  # each line once: a loop importing many stand-ins fills no list
                noted[line] = {"module": module, "file": line[0], "line": line[1]}


def _asker() -> str | None:
    """Who runs the import being resolved: "job" (a file in the job's folder), "job folder" (one of the job's own
    files in a folder below it), "nvflare" (NVFLARE's package), or None (another library, or the boot)."""
    name = caller(lambda name: name.startswith(("<frozen", IMPORT_MACHINERY)))
    if os.path.dirname(name) == os.path.dirname(STATE.job):
        return "job"
    if in_job_folder(name):
        return "job folder"
    return "nvflare" if in_nvflare(name) else None


def install() -> None:
    """Put the finder of stand-ins last on sys.meta_path."""
    sys.meta_path.append(_InertFinder())


def stand_in_module(module) -> bool:
    """True for a module made here for an absent one."""
    return isinstance(module, _Inert)

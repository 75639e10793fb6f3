"""What the walker records: functions, constructed objects, method calls and the branches it met; and `PathEnd`,
how a walked path ends early (a `return` or a `raise`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from . import argparse_flow as ap
from .inputs import CALL, Input, call_kind, kinds
from .values import ClassRef, drawn


@dataclass(eq=False)
class PathEnd(Exception):
    """Raised through the walk when the walked path ends early: a `return` (`value` is the function's result) or a
    `raise` (`raised`: this path ends without a result)."""

    value: Any
    raised: bool = False
    note: RaiseNote | None = None  # a `raise`: where, what, and the job options of the conditions that led there


@dataclass(frozen=True)
class RaiseNote:
    """A `raise` statement the walk reached: its line, the exception as written, and the job options that decided
    the branches leading to it (empty: reached whatever the arguments)."""

    line: int
    exception: str
    control: tuple[str, ...] = ()


LAMBDA = "<lambda>"  # the name of the function a lambda is walked as


@dataclass(eq=False)
class FuncRef:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    closure: list[dict]
    defaults: dict[int, Any] = field(default_factory=dict)  # id(default's node) -> its value when `def` ran

    @property
    def label(self) -> str:
        return "" if self.node.name == LAMBDA else f"function {self.node.name}"  # a lambda has no name to show


@dataclass(eq=False)
class Obj:
    """An instance of an external (or local) class the job constructs."""

    cls: ClassRef
    args: list
    kwargs: dict
    line: int
    unpacked: bool = False
    control: tuple[str, ...] = ()  # job options of the resolved conditions/loops under which it was built
    per_site: Any = None  # the config given to set_per_site_config(recipe, ...) / recipe.set_per_site_config(...)

    @property
    def name(self) -> str:
        return self.cls.name if not self.cls.dynamic else "|".join(self.cls.candidates) or "<dynamic>"

    @property
    def label(self) -> str:
        return f"{self.name}(...)"

    @property
    def origin(self) -> str:
        """What this object stands for when a data value was expected: `it comes from numpy.random.randint(...) at
        line 12, which draws random numbers` (names the run-time input)."""
        shown = self.cls.qualname.lstrip(".") or "a dynamic call"
        kind = call_kind(self.cls.qualname)
        return f"it comes from {shown}(...) at line {self.line}, {kind.value if kind else CALL}"

    @property
    def call_inputs(self) -> frozenset[Input]:
        """The run-time input its call reads, as `origin` names it."""
        return kinds(call_kind(self.cls.qualname))

    @property
    def inputs(self) -> frozenset[Input]:
        """Its call's input and the draws and clock reads of its arguments."""
        return self.call_inputs | drawn(self)


@dataclass
class MethodCall:
    target: Obj
    method: str
    args: list
    kwargs: dict
    line: int
    control: tuple[str, ...] = ()


@dataclass
class BranchNote:
    line: int
    test: str
    resolved: bool
    touched_surface: str = ""  # "runs" when a recipe/job is run in it, "built" when one is only built or given
    kind: str = "if"


@dataclass
class WalkResult:
    objects: list[Obj] = field(default_factory=list)
    calls: list[MethodCall] = field(default_factory=list)
    parsers: list[ap.Parser] = field(default_factory=list)
    namespaces: list[ap.Namespace] = field(default_factory=list)
    branches: list[BranchNote] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    base_args_errors: list[str] = field(default_factory=list)
    raises: list[int] = field(default_factory=list)  # lines of `raise` statements the walk reached
    ended_by: RaiseNote | None = None  # the `raise` that ended the walk (it propagated out of job.py)
    class_parsers: list[tuple[str, int]] = field(default_factory=list)  # (class, line) of classes that use argparse


UNSEEN_RUN = "<a run not followed>"  # the method of a call event: code the walk does not follow may run the object

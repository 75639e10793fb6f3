"""What code that may run or not (or run many times) leaves unresolved: unresolved conditions, loops walked once,
`try`, suppressing `with`, skipped branches and operands, comprehensions, and what job.py's functions reach off the
walked path. A part of `walker.Walker`, which provides `walk_block`, `ev`, `bind` and the scopes.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from . import argparse_flow as ap
from . import targets
from .builtins_eval import environment, whole_environment
from .evaluate import computed
from .events import BranchNote, FuncRef, Obj, PathEnd
from .inputs import ENV_READERS, NO_INPUTS
from .surface import touches_surface
from .values import (
    HIGH,
    MEDIUM,
    Bag,
    ClassRef,
    Val,
    drawn,
    elements,
    known,
    merge_flags,
    source_text,
    unresolved,
    unresolved_from,
)

READING_BUILTINS = set("len list tuple set sorted str print enumerate zip range min max sum any all".split())


class UncertainPaths:
    """The walker's reading of code that may or may not run (mixed into `walker.Walker`)."""

    def _handed_over(self, values: list, node: ast.Call) -> None:
        """Job.py's functions given to a call that is not followed (a thread, `map`, a callback) may run: what they
        reach is unresolved."""
        for value in values:
            if isinstance(value, FuncRef):
                self._reaches(value, node, f"{value.node.name}() given to a call at line {node.lineno}")

    def _reaches(self, func: FuncRef, node: ast.AST, what: str) -> None:
        """A call not followed may run the function, and through it every function and class of job.py it names:
        whatever any of them reads from outside itself that a call could change (a namespace, a container, an
        object) is unresolved, naming `what`; an option only read as `args.name` (not a container) stays."""
        seen, todo = set(), [func]
        while todo:
            current = todo.pop()
            if id(current.node) in seen:
                continue
            seen.add(id(current.node))
            for name, uses in _outer_uses(current.node).items():
                frame = next((scope for scope in current.closure if name in scope), None)
                if frame is None:
                    continue
                value = frame[name]
                todo += self._functions_in(value)
                if not all(_only_read(use, value) for use in uses):
                    self._stale([value], node, what)

    def _functions_in(self, value: Any, depth: int = 0) -> list[FuncRef]:
        """The functions of job.py that `value` can run: itself, a class's or an object's methods, a Bag's items'."""
        if isinstance(value, FuncRef):
            return [value]
        if isinstance(value, (ClassRef, Obj)):
            return list(self.methods.get(id(value.cls if isinstance(value, Obj) else value), ()))
        if isinstance(value, Bag) and depth < 8:
            return [f for item in value.items for f in self._functions_in(item, depth + 1)]
        return []

    def _undecided(self, sides: list[list[ast.stmt]], note: BranchNote, test: Any, why: str) -> None:
        """The sides of a condition the reading cannot resolve, walked one after the other for what they build and
        run; whatever they bind (directly or through a call) is then unresolved (`why`), and a side that returns makes
        the function's result unresolved. When every side ends, the path ends."""
        first_obj, first_call = len(self.out.objects), len(self.out.calls)
        before = self._held()
        ends: list[PathEnd | None] = []
        bound: dict[str, tuple[ast.expr, list]] = {}  # each target either side binds, with the values it gets
        for body in sides:  # a name keeps its value when no side runs: that value is among them
            for target in targets.bound(body):
                if isinstance(target, ast.Name):
                    bound.setdefault(ast.dump(target), (target, [self.ev(target)]))
        for body in sides:
            try:
                self.walk_block(body)
                ends.append(None)
            except PathEnd as end:
                ends.append(end)
            for target in targets.bound(body):
                key = ast.dump(target)
                bound.setdefault(key, (target, []))[1].append(self.ev(target))
        note.touched_surface = touches_surface(self.out.objects[first_obj:], self.out.calls[first_call:])
        flags = merge_flags(test)
        self._unsettle_rebound(before, why, flags)  # what a side rebound through a call (`args.x = ...`)
        for target, values in bound.values():
            self._rebind(target, unresolved(target, why, merge_flags(test, *values), drawn(*values)))
        returned = [end for end in ends if end is not None and not end.raised]
        ended = all(end is not None for end in ends)  # no side goes on: the path ends here
        if len(returned) > (1 if ended else 0) and self.early:  # the function's result depends on the condition
            line, kept = self.early[-1] or (note.line, ())
            self.early[-1] = (line, merge_flags(*(end.value for end in returned)) + kept)
        if ended:
            raise returned[0] if returned else next(end for end in ends if end is not None)

    def _held(self) -> list[tuple[dict, dict]]:
        """A copy of every binding a statement can change (see `bindings`), for `_unsettle_rebound`."""
        return [(frame, dict(frame)) for frame in self.bindings()]

    def _unsettle_rebound(self, before: list[tuple[dict, dict]], why: str, flags: tuple[str, ...]) -> None:
        """Every binding new, gone or changed since `before` (code that may or may not have run) is unresolved."""
        for frame, held in before:
            for name in {*held, *frame}:
                if name not in frame or name not in held or frame[name] is not held[name]:
                    values = (frame.get(name), held.get(name))
                    inputs = tuple(dict.fromkeys((*flags, *merge_flags(*values))))
                    frame[name] = unresolved(ast.Name(name), why, inputs, drawn(*values))

    def _skipped(self, block: list[ast.stmt], flags: tuple[str, ...]) -> None:
        """What the branch not taken would change depends on the options that decided it: `flags` are added to the
        value bound to the name each thing it changes starts from (every name it binds, and every object, container
        or namespace it sets an item or attribute on or calls a method of; of a namespace, the one option when the
        thing is `args.<option>`, all of them otherwise)."""
        for node in targets.changed(block) if flags else ():
            attr = node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else None
            while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
                node = node.func if isinstance(node, ast.Call) else node.value
            frame = next((scope for scope in self.scopes if isinstance(node, ast.Name) and node.id in scope), None)
            value = frame[node.id] if frame is not None else None
            if isinstance(value, ap.Namespace):
                for key in [attr] if attr in value.values else list(value.values):
                    value.values[key] = with_flags(value.values[key], flags)
            elif isinstance(value, Bag):
                value.key_flags = tuple(dict.fromkeys((*value.key_flags, *flags)))
                for item in value.items:
                    with_flags(item, flags)
            elif frame is not None:
                frame[node.id] = with_flags(value, flags)

    def _ev_BoolOp(self, node: ast.BoolOp) -> Any:
        """Every operand is read; what an operand after the first runs (a call of job.py's own function) may not
        happen: what it rebinds is unresolved."""
        maybe = any(isinstance(n, ast.Call) for part in node.values[1:] for n in ast.walk(part))
        before = self._held() if maybe else []
        vals = [self.ev(v) for v in node.values]
        flags = merge_flags(*vals)
        self._unsettle_rebound(before, f"`and`/`or` at line {node.lineno} may stop before it", flags)
        if not all(map(known, vals)):
            return unresolved_from(node, "operand is not resolved", *vals)
        stop = isinstance(node.op, ast.Or)  # `or` stops at the first true operand, `and` at the first false one
        return computed(node, next((v.value for v in vals[:-1] if bool(v.value) is stop), vals[-1].value), vals)

    def _ev_IfExp(self, node: ast.IfExp) -> Any:
        """`a if test else b`: the branch a known test picks; for another test both branches are walked for what
        they run, and what they bind or change is unresolved."""
        test = self.ev(node.test)
        if known(test):
            chosen = self.ev(node.body if test.value else node.orelse)
            return computed(node, chosen.value, [test, chosen]) if known(chosen) else chosen
        why, flags = f"depends on the condition at line {node.lineno}", merge_flags(test)
        before = self._held()
        self.ev(node.body)
        self.ev(node.orelse)
        self._unsettle_rebound(before, why, flags)
        return unresolved_from(node, "condition is not resolved", test)

    def _ev_ListComp(self, node: Any) -> Val:
        """Not evaluated: unresolved naming the line (or the run-time input it reads), keeping the flags of what it
        reads from outside. One that calls something is walked once, its variables unresolved, for what the calls
        run (what they rebind is unresolved); the draws and clock reads of its parts are the value's too."""
        comps = [n for n in ast.walk(node) if isinstance(n, ast.comprehension)]
        bound = {n.id for c in comps for n in ast.walk(c.target) if isinstance(n, ast.Name)}
        first = self.ev(node.generators[0].iter)
        named, read = [first], []
        for sub in ast.walk(node):
            if (isinstance(sub, ast.Subscript) and source_text(sub.value) == "os.environ") or (
                isinstance(sub, ast.Call) and source_text(sub.func) in ENV_READERS
            ):
                named.append(self.ev(sub))
            elif (isinstance(sub, ast.Name) and sub.id not in bound) or (
                isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id not in bound
            ):
                read.append(self.ev(sub))
        why = whole_environment(named, node) or f"a comprehension at line {node.lineno} is not evaluated statically"
        value = unresolved_from(node, why, *named, flags=merge_flags(*named, *read), kinds=environment(named))
        once = len(node.generators) == 1 and len(elements(first) or "many") <= 1  # its body runs at most once
        if any(isinstance(n, ast.Call) for n in ast.walk(node)):
            why = f"a comprehension at line {node.lineno} runs it any number of times"
            before, note = self._held(), BranchNote(node.lineno, "comprehension", False, kind="loop")
            first_obj, first_call = len(self.out.objects), len(self.out.calls)
            self.out.branches.append(note)  # a recipe/job/env built or run in it runs any number of times
            own = {n.id for c in node.generators for n in ast.walk(c.target) if isinstance(n, ast.Name)}
            saved = self.scopes
            self.scopes = [{name: unresolved(ast.Name(name), why) for name in own}, *saved]
            elts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
            try:
                parts = [*(g.iter for g in node.generators[1:]), *(c for g in node.generators for c in g.ifs), *elts]
                value = replace(value, inputs=value.inputs | drawn(*(self.ev(part) for part in parts)))
            finally:
                self.scopes = saved
            note.touched_surface = touches_surface(self.out.objects[first_obj:], self.out.calls[first_call:], once)
            self._unsettle_rebound(before, why, merge_flags(value))
            body = ast.FunctionDef(
                "<comprehension>", ast.arguments([], [], None, [], [], None, []), [ast.Expr(node)], []
            )
            self._reaches(FuncRef(body, list(self.scopes)), node, f"a comprehension at line {node.lineno}")
        return value

    _ev_SetComp = _ev_DictComp = _ev_GeneratorExp = _ev_ListComp

    def _each_pass(self, stmt: ast.For | ast.AsyncFor | ast.While, why: str, kinds: frozenset = NO_INPUTS) -> None:
        """A loop walked once stands for any of its passes: a name its body rebinds holds no value known statically
        when a pass starts (a counter, the site a pass sends to); `why` says so, with `kinds` and the draws and clock
        reads of the value it held."""
        body = [n for part in stmt.body for n in ast.walk(part)]  # nested functions and comprehensions too
        for name in sorted({n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}):
            frame = next((scope for scope in self.scopes if name in scope), None)
            if frame is not None and isinstance(frame[name], Val):
                frame[name] = unresolved(stmt, why, frame[name].flags, kinds | drawn(frame[name]))

    def _st_With(self, stmt: ast.With) -> None:
        """A `with suppress(...)` block (or one of a job.py class with `__exit__`) may stop part way without an
        error: what it binds is unresolved."""
        suppressing = False
        for item in stmt.items:
            value = self.ev(item.context_expr)
            suppressing |= isinstance(value, Obj) and (
                value.cls.name == "suppress"  # contextlib's, or a class of job.py whose __exit__ may return True
                or any(method.node.name == "__exit__" for method in self.methods.get(id(value.cls), ()))
            )
            if item.optional_vars is not None:
                self.bind(item.optional_vars, value)
        self.walk_block(stmt.body)
        if suppressing:
            self._may_stop(stmt.body, f"the block of the `with` at line {stmt.lineno} may stop part way")

    _st_AsyncWith = _st_With

    def _st_Try(self, stmt: ast.Try) -> None:
        """Whether the body raises is not known statically: where a handler can go on, what the body binds is
        unresolved and the `else:` and each handler are sides of an unresolved condition."""
        try:
            try:
                self.walk_block(stmt.body)
            except PathEnd as end:
                if not (end.raised and stmt.handlers):
                    raise
                sides = [handler.body for handler in stmt.handlers]  # a `raise` inside `try` may be caught
                why = f"depends on which handler of the try at line {stmt.lineno} catches"  # not read statically
            else:
                going_on = [handler for handler in stmt.handlers if not _ends(handler.body)]
                sides = [stmt.orelse, *(handler.body for handler in going_on)] if going_on else []
                why = f"depends on whether the try at line {stmt.lineno} raises"
                if going_on:  # a handler goes on: the body may have stopped part way
                    self._may_stop(stmt.body, why)
                for handler in going_on:
                    if handler.name:
                        self.scopes[0][handler.name] = unresolved(ast.Name(handler.name), why)
            if len(sides) <= 1:  # one handler, or no handler going on after the body: it runs
                self.walk_block(sides[0] if sides else stmt.orelse)
            else:
                note = BranchNote(stmt.lineno, "try", False)
                self.out.branches.append(note)
                self._undecided(sides, note, None, why)
        finally:
            self.walk_block(stmt.finalbody)

    def _may_stop(self, body: list[ast.stmt], why: str) -> None:
        """What a block that may stop part way binds (names, namespace options) is unresolved (`why`)."""
        for target in targets.bound(body):
            value = self.ev(target)
            self._rebind(target, unresolved(target, why, merge_flags(value), drawn(value)))

    def _rebind(self, target: ast.expr, value: Val) -> None:
        """Bind a name, or a namespace option (`args.x`), that `targets.bound` found to `value`."""
        if isinstance(target, ast.Name):
            self.scopes[0][target.id] = value
        elif isinstance(base := self.ev(target.value), ap.Namespace):
            base.values[target.attr] = value

    _st_TryStar = _st_Try


def _ends(body: list[ast.stmt]) -> bool:
    """True when a block surely ends the path: its last statement raises or exits."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    call = last.value if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) else None
    return call is not None and source_text(call.func) in ("sys.exit", "exit", "quit", "os._exit")


def with_flags(value: Any, flags: tuple[str, ...]) -> Any:
    """`value` depending on `flags` too: a data value (an option's own value becomes medium), or an object (its
    `control`, changed in place); anything else as it is."""
    if isinstance(value, Obj):
        value.control = tuple(dict.fromkeys((*value.control, *flags)))
        return value
    extra = tuple(f for f in flags if f not in value.flags) if isinstance(value, Val) else ()
    if not extra:
        return value
    confidence = MEDIUM if value.confidence == HIGH else value.confidence
    return replace(value, confidence=confidence, flags=value.flags + extra)


def _outer_uses(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[tuple[ast.Name, ast.AST | None]]]:
    """Each name a function loads, with each use and the node around it (its parameters' names included: a
    parameter that shadows an outer name makes the reading coarser, never wrong)."""
    parents = {id(child): parent for parent in ast.walk(func) for child in ast.iter_child_nodes(parent)}
    uses: dict[str, list[tuple[ast.Name, ast.AST | None]]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            uses.setdefault(node.id, []).append((node, parents.get(id(node))))
    return uses


def _only_read(use: tuple[ast.Name, ast.AST | None], value: Any) -> bool:
    """True when the use cannot change `value`: a function called by name, an option of the namespace that is not
    a container read as `args.name`, a container of plain items iterated or read by a builtin that only reads."""
    name, around = use
    if isinstance(value, ap.Parser):
        return False
    if isinstance(value, FuncRef):
        return isinstance(around, ast.Call) and around.func is name
    if isinstance(value, ap.Namespace):
        if not isinstance(around, ast.Attribute) or not isinstance(around.ctx, ast.Load) or targets.dunder(around.attr):
            return False
        option = value.values.get(around.attr)
        return isinstance(option, Val) and not isinstance(option.value, (list, dict, set))
    if isinstance(value, Val) and isinstance(value.value, (list, dict, set)):
        iterated = isinstance(around, (ast.comprehension, ast.For)) and around.iter is name
        read = isinstance(around, ast.Call) and isinstance(around.func, ast.Name) and around.func.id in READING_BUILTINS
        return _flat(value.value) and (iterated or read)
    return not isinstance(value, (Bag, Obj))


def _flat(held: list | dict | set) -> bool:
    """A container whose items cannot change: iterating it or reading it hands out nothing to write."""
    return isinstance(held, dict) or not any(isinstance(item, (list, dict, set)) for item in held)

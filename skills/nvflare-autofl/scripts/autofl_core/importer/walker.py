"""Abstract walk of a job.py module: follow the code path `python job.py` would take, without running it.

Statements are visited in order from module level; calls to job.py's own functions (and lambdas) are entered
(bounded depth); an `if` whose condition resolves takes one branch; what may or may not run is left to
`uncertain.UncertainPaths`. External classes are never imported: constructing one yields an `Obj` with its
evaluated arguments, and method calls on objects are recorded as `MethodCall` events. Assignments to the parsed
namespace and writes through `vars(args)` are followed; the namespace given to code not followed (`setattr`, a
dunder method, a class of job.py) leaves its options unresolved (`namespace_writes`). `global`, `nonlocal`,
`match`, `:=`, `exec`, `eval`, `globals()` and `locals()` are not followed (a problem: the reading refuses).
Inside a block decided by a job option (`if args.fast:`, a loop unrolled over a sequence that depends on one)
every value bound, object built and method called also depends on that option (`self.control`), so the budget
knows every input that decides it.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from typing import Any

from . import argparse_flow as ap
from . import real_parser, values
from .builtins_eval import BUILTIN_NAMES, call_builtin, env_read, environment, not_evaluated, whole_environment
from .evaluate import ExpressionEvaluator
from .events import LAMBDA, BranchNote, FuncRef, MethodCall, Obj, PathEnd, RaiseNote, WalkResult
from .inputs import ENV_READERS, call_kind
from .namespace_writes import NamespaceWrites, given_to, known_wrapper
from .surface import FEDJOB_RUNS, RECIPE_RUNS, TRAINING_RUNS, touches_surface
from .targets import dunder, own_constructor, unfollowed
from .uncertain import UncertainPaths, with_flags
from .values import (
    HIGH,
    MEDIUM,
    Bag,
    Builtin,
    ClassRef,
    ModuleRef,
    Val,
    cause,
    drawn,
    inputs_of,
    merge_flags,
    source_text,
    unresolved,
)

MAX_DEPTH = 12
MAX_STEPS = 50_000
MAX_UNROLL = 64  # a `for` over a known sequence this short is walked once per item (e.g. sites site-1..site-N)


class _Budget(Exception):
    pass


class Walker(NamespaceWrites, UncertainPaths, ExpressionEvaluator):
    """Usage: `Walker(base_args).run(tree)` -> WalkResult."""

    def __init__(self, base_args: list[str], job_name: str = "job.py"):
        self.base_args = list(base_args)
        self.out = WalkResult()
        file_val = Val(job_name, MEDIUM, "__file__")  # workspace-relative stand-in for the script path
        self.scopes: list[dict] = [{"__name__": Val("__main__", HIGH), "__file__": file_val}]
        self.stack: list[tuple[FuncRef, list[dict]]] = []  # each function being walked, with its caller's scopes
        self.control: tuple[str, ...] = ()
        self.early: list[tuple | None] = []  # per function walked: (line, flags) of a side of a condition that returned
        self.methods: dict[int, list[FuncRef]] = {}  # id(ClassRef of a class of job.py) -> its methods
        self.steps = 0

    def run(self, tree: ast.Module) -> WalkResult:
        refused = unfollowed(tree)
        if refused:
            self.out.problems.append(refused)
        try:
            self.walk_block(tree.body)
        except PathEnd as end:
            if end.raised:
                self.out.ended_by = end.note
        except _Budget:
            self.out.problems.append("job.py is too complex to follow statically (step budget exhausted)")
        except RecursionError:
            self.out.problems.append("job.py nests too deeply to follow statically")
        return self.out

    def bindings(self) -> list[dict]:
        """Everything a statement can still rebind: each frame of the current scopes and of the callers' (once),
        and every parsed namespace."""
        frames = {id(frame): frame for scopes in [self.scopes, *(s for _, s in self.stack)] for frame in scopes}
        return [*frames.values(), *(ns.values for ns in self.out.namespaces)]

    @contextmanager
    def controlled_by(self, flags: tuple[str, ...]):
        """Walk a block whose execution was decided by `flags` (options of a resolved condition or loop)."""
        saved = self.control
        self.control = tuple(dict.fromkeys((*saved, *flags)))
        try:
            yield
        finally:
            self.control = saved

    def with_control(self, value: Any) -> Any:
        """`value` plus the options that decided the current block (an option's own value becomes medium)."""
        return with_flags(value, self.control) if isinstance(value, Val) else value

    # ---- what ExpressionEvaluator leaves to the walker ------------------------------------------
    def _ev_Name(self, node: ast.Name) -> Any:
        for scope in self.scopes:
            if node.id in scope:
                return scope[node.id]
        if node.id in BUILTIN_NAMES:
            return Builtin(node.id)
        return unresolved(node, f"name '{node.id}' is not defined statically")

    def attribute(self, base: Any, attr: str, node: ast.Attribute) -> Any:
        if isinstance(base, ap.Namespace):
            if attr == "__dict__":  # what vars(args) gives
                return call_builtin(Builtin("vars"), [base], {}, node)
            if dunder(attr):  # `put = args.__setattr__`: whoever calls it may rebind
                self._stale([base], node, f"{source_text(node)} at line {node.lineno}")
            return ap.namespace_attribute(base, attr)
        if isinstance(base, ap.Parser) and attr not in real_parser.READ_ONLY or _opened(base, attr):
            runs = dunder(attr) or attr not in BOUND or attr in TRAINING_RUNS  # `job.to` sends, it does not run
            self._stale([base], node, f"{source_text(node)} at line {node.lineno}", runs)
        if values.mutator_of(base, attr):  # `update = vars(args).update`: whoever calls it changes the container
            self._changed(base, f"{source_text(node)} read at line {node.lineno}", node, [])
        if isinstance(base, (ModuleRef, ClassRef)):
            return ClassRef(attr, f"{base.qualname}.{attr}", dynamic=getattr(base, "dynamic", False))
        if isinstance(base, Obj):
            local = f"an instance of class {base.name} (line {base.line}); the importer does not follow classes"
            of = local if base.cls.qualname.startswith("<local>.") else f"{base.name}(...): {base.origin}"
            return unresolved(node, f"attribute '{attr}' of {of}", (), base.inputs)  # the object's, as `origin` names
        if isinstance(base, Val) and not base.resolved and base.reason:
            return unresolved(node, base.reason, base.flags, base.inputs)
        return unresolved(node, f"attribute '{attr}' of a run-time value")

    def _ev_Call(self, node: ast.Call) -> Any:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in REFLECTION and not any(name in scope for scope in self.scopes):  # code or bindings at run time
            self.call_arguments(node)  # what the arguments run, runs
            self.out.problems.append(
                f"job.py calls {name}() at line {node.lineno}, which reaches bindings or runs code the importer does "
                "not follow statically"
            )
            return unresolved(node, f"{name}() at line {node.lineno} is not followed statically")
        args, kwargs, unpacked = self.call_arguments(node)
        if isinstance(node.func, ast.Attribute):
            base, attr = self.ev(node.func.value), node.func.attr
            if dunder(attr):  # `object.__setattr__(args, ...)`, `args.__init__(...)`: code run on what it is given
                self._stale([base, *args, *kwargs.values()], node, given_to(node))
            if isinstance(base, (ap.Parser, Obj, Val, Bag, ap.Namespace)):
                return self._method(base, attr, args, kwargs, node)
            callee = self.attribute(base, attr, node.func)
        else:
            callee = self.ev(node.func)
        return self._dispatch(callee, args, kwargs, unpacked, node)

    # ---- calls ----------------------------------------------------------------------------------
    def _dispatch(self, callee: Any, args: list, kwargs: dict, unpacked: bool, node: ast.Call) -> Any:
        if isinstance(callee, FuncRef):
            return self._invoke(callee, args, kwargs, node)
        self._handed_over([*args, *kwargs.values()], node)
        self._given_away(callee, [*args, *kwargs.values()], node)
        for method in self.methods.get(id(callee), ()):  # a class of job.py: its methods are not followed
            self._reaches(method, node, f"code of job.py run by {callee.name}() at line {node.lineno}")
        if isinstance(callee, Builtin):
            return call_builtin(callee, args, kwargs, node)
        if isinstance(callee, ClassRef) and not callee.dynamic:
            if callee.qualname in ENV_READERS:  # `os.getenv(...)`: the environment variable, tagged `env:NAME`
                return env_read(args[0] if args else None, node, args)
            if callee.qualname.startswith("os.path."):  # keeping its inputs' flags: a path under the workspace root
                return not_evaluated(node, f"{callee.qualname}()", args)
            if callee.name == "ArgumentParser":
                abbrev = kwargs.get("allow_abbrev")
                parser = ap.Parser(allow_abbrev=not (isinstance(abbrev, Val) and abbrev.value is False))
                parser.fromfile_prefix_chars = ap.fromfile_prefix(kwargs.get("fromfile_prefix_chars"))
                self.out.parsers.append(parser)
                return parser
            if callee.name == PER_SITE and args and isinstance(args[0], Obj):  # set_per_site_config(recipe, config)
                args[0].per_site = args[1] if len(args) > 1 else kwargs.get("config")
                return Val(None, HIGH)
        if not isinstance(callee, ClassRef):
            callee = ClassRef("<dynamic>", "<dynamic>", dynamic=True)
        obj = Obj(callee, args, kwargs, node.lineno, unpacked, self.control)
        self.out.objects.append(obj)
        return obj

    def _method(self, base: Any, method: str, args: list, kwargs: dict, node: ast.Call) -> Any:
        if isinstance(base, ap.Parser):
            if method in ap.PARSE_METHODS:  # parsing into a namespace job.py holds rebinds its options
                self._stale(args[1:2] or [kwargs.get("namespace")], node, f"{method}() at line {node.lineno}")
            return real_parser.parser_method(base, method, args, kwargs, node, self.base_args, self.out)
        if isinstance(base, Obj) and method not in RECIPE_RUNS:  # a run's env: judged with the recipe's class
            self._given_away(base, [*args, *kwargs.values()], node)
            if method in set().union(*values.MUTATORS.values()):
                self._written_through(base, node)
        if isinstance(base, Obj):
            self._handed_over([*args, *kwargs.values()], node)
            self.out.calls.append(MethodCall(base, method, args, kwargs, node.lineno, self.control))
            if method == PER_SITE:
                base.per_site = args[0] if args else kwargs.get("config")
                return Val(None, HIGH)
            given = drawn(*args, *kwargs.values())  # the draws and clock reads it is given
            if call_kind(base.cls.qualname):  # an object of the environment, files, randomness or clock
                return unresolved(node, f"result of {base.name}.{method}(): {base.origin}", (), base.inputs | given)
            why = f"result of {base.name}.{method}() at line {node.lineno}, known only when it runs"
            return unresolved(node, why, (), drawn(base) | given)
        mutated = isinstance(base, Bag) and method in values.MUTATORS[dict] | values.MUTATORS[list]
        held = base.value if isinstance(base, Val) and base.resolved else None
        if mutated or (isinstance(held, (list, dict, set)) and method in values.MUTATORS.get(type(held), ())):
            return self._changed(base, f".{method}() at line {node.lineno}", node, [*args, *kwargs.values()])
        if isinstance(base, Val):  # `"-".join(...)`, `cfg.get("rounds", 2)`: a dry run reads the real value
            return not_evaluated(node, f".{method}()", [base, *args, *kwargs.values()])
        return unresolved(node, f".{method}() on a run-time value")

    def _set_item(self, target: ast.Subscript, value: Any) -> None:
        """`container[key] = value` (`del container[key]` when value is None) on a container the walk holds."""
        base, key = self.ev(target.value), self.ev(target.slice)
        self._written_through(base, target)
        if isinstance(base, Bag) or (isinstance(base, Val) and base.resolved and isinstance(base.value, (list, dict))):
            what = "the item set" if value is not None else "the item deleted"
            self._changed(base, f"{what} at line {target.lineno}", target, [key, value])

    def _changed(self, old: Any, what: str, node: ast.AST, inputs: list, why: str = "") -> Val:
        """A container changed in place by `what`: every live reference to it (names, namespaces, objects' arguments,
        containers holding it) becomes unresolved, naming it (or for `why`); returns that value."""
        why = why or f"{what} changes a container in place, which is not followed statically"
        stale = self.with_control(unresolved(node, why, merge_flags(old, *inputs)))
        held = old.value if isinstance(old, Val) else old
        for frame in self.bindings():
            for name, current in list(frame.items()):
                if values.holds(current, held):
                    frame[name] = stale
        for namespace in self.out.namespaces:  # vars(args) / args.__dict__ is the namespace itself
            if isinstance(held, Bag) and held.keys == list(namespace.values):
                if all(a is b for a, b in zip(held.items, namespace.values.values(), strict=True)):
                    namespace.values.update(dict.fromkeys(namespace.values, stale))
        for obj in self.out.objects:  # an object keeps a reference to what it was given
            obj.args = [stale if values.holds(a, held) else a for a in obj.args]
            obj.kwargs = {k: stale if values.holds(v, held) else v for k, v in obj.kwargs.items()}
        return stale

    def _invoke(self, func: FuncRef, args: list, kwargs: dict, node: ast.Call) -> Any:
        if len(self.stack) >= MAX_DEPTH or any(f is func for f, _ in self.stack):
            why = f"call of {func.node.name}() is too deep or recursive"
            self._reaches(func, node, f"the {why} at line {node.lineno}")
            return unresolved(node, why)
        frame = self._bind(func, args, kwargs, node)
        self.stack.append((func, self.scopes))
        self.scopes = [frame, *func.closure]
        self.early.append(None)
        try:
            self.walk_block(func.node.body)
            result = self.with_control(Val(None, HIGH))
        except PathEnd as ret:
            if ret.raised:  # an exception leaves the function and keeps going up, as in Python
                raise
            result = ret.value
        finally:
            self.scopes = self.stack.pop()[1]
            early = self.early.pop()
        if early is not None:  # a side of an unresolved condition returned before the end
            line, flags = early
            return unresolved(
                node, f"depends on the condition at line {line}", tuple(dict.fromkeys((*flags, *merge_flags(result))))
            )
        return result

    def _bind(self, func: FuncRef, args: list, kwargs: dict, node: ast.Call) -> dict:
        spec = func.node.args
        params = spec.posonlyargs + spec.args
        defaults = [None] * (len(params) - len(spec.defaults)) + list(spec.defaults)
        frame: dict[str, Any] = {}
        for index, (param, default) in enumerate(zip(params, defaults, strict=True)):
            if index < len(args):
                frame[param.arg] = args[index]
            elif param.arg in kwargs:
                frame[param.arg] = kwargs[param.arg]
            else:
                frame[param.arg] = self._default(func, default, node)
        for param, default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):  # a default only when not passed
            frame[param.arg] = kwargs[param.arg] if param.arg in kwargs else self._default(func, default, node)
        if spec.vararg:
            frame[spec.vararg.arg] = Bag(list(args[len(params) :]))
        if spec.kwarg:
            extra = {k: v for k, v in kwargs.items() if k not in frame}
            frame[spec.kwarg.arg] = Bag(list(extra.values()), list(extra))
        return frame

    def _default(self, func: FuncRef, default: ast.expr | None, node: ast.Call) -> Any:
        """A parameter's default: its value when `def` ran."""
        if default is None:
            return unresolved(node, "missing argument")
        return func.defaults[id(default)] if id(default) in func.defaults else self.ev(default)

    # ---- statements -----------------------------------------------------------------------------
    def walk_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise _Budget()
            handler = getattr(self, "_st_" + type(stmt).__name__, None)
            if handler is not None:
                handler(stmt)

    def _st_Expr(self, stmt: ast.Expr) -> None:
        self.ev(stmt.value)

    def _st_Return(self, stmt: ast.Return) -> None:
        raise PathEnd(self.with_control(self.ev(stmt.value) if stmt.value is not None else Val(None, HIGH)))

    def _st_Raise(self, stmt: ast.Raise) -> None:
        self.out.raises.append(stmt.lineno)
        exception = source_text(stmt.exc, 120) if stmt.exc is not None else "the current exception again"
        note = RaiseNote(stmt.lineno, exception, self.control)
        raise PathEnd(unresolved(stmt, "raised an exception"), raised=True, note=note)

    def _st_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        """`def` evaluates the defaults once, then applies the decorators: a job-local one is followed (what it
        returns is the name's value); a builtin, the standard library's or NVFLARE's is taken to give the function
        back; any other is not followed: the name is unresolved, and what the function reaches may change."""
        value: Any = self._function(stmt)
        for decorator in reversed(stmt.decorator_list):
            callee, call = self.ev(decorator), ast.Call(decorator, [], [], lineno=stmt.lineno, col_offset=0)
            if isinstance(callee, FuncRef):
                value = self._invoke(callee, [value], {}, call)
            elif not known_wrapper(callee):
                self._handed_over([value], call)
                why = f"decorated by {source_text(decorator)} at line {stmt.lineno}, which is not followed statically"
                value = unresolved(decorator, why)
        self.scopes[0][stmt.name] = value

    _st_AsyncFunctionDef = _st_FunctionDef

    def _st_ClassDef(self, stmt: ast.ClassDef) -> None:
        bases = tuple(b for b in (self.ev(base) for base in stmt.bases) if isinstance(b, ClassRef))
        defs = [n for n in stmt.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        init = own_constructor(stmt, defs) or len(bases) != len(stmt.bases)
        if ap.uses_argparse(stmt):
            self.out.class_parsers.append((stmt.name, stmt.lineno))
        saved, own = self.scopes, {}
        self.scopes = [own, *saved]  # the class body runs now, in a namespace of its own (its methods stay there)
        try:
            self.walk_block(stmt.body)
        finally:
            self.scopes = saved
        cls = ClassRef(stmt.name, f"<local>.{stmt.name}", bases=bases, defines_init=init)
        self.methods[id(cls)] = [FuncRef(n, list(self.scopes)) for n in defs]  # decorated or not
        self.scopes[0][stmt.name] = cls

    def _st_Assert(self, stmt: ast.Assert) -> None:
        self.ev(stmt.test)  # a call in it runs (trials never run Python with -O)

    def _st_Delete(self, stmt: ast.Delete) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                self._set_item(target, None)
            elif isinstance(target, ast.Name):
                self.scopes[0].pop(target.id, None)
            elif isinstance(target, ast.Attribute):  # `del args.num_rounds`: a later getattr(..., default) differs
                self.bind(target, unresolved(target, f"deleted at line {target.lineno}"))

    def _st_Import(self, stmt: ast.Import) -> None:
        for alias in stmt.names:  # `import a.b` binds the package `a`; `import a.b as c` binds `a.b` to `c`
            name = alias.asname or alias.name.split(".")[0]
            self.scopes[0][name] = ModuleRef(alias.name if alias.asname else name)

    def _st_ImportFrom(self, stmt: ast.ImportFrom) -> None:
        prefix = "." * stmt.level + (f"{stmt.module}." if stmt.module else "")
        for alias in stmt.names:
            if alias.name != "*":
                self.scopes[0][alias.asname or alias.name] = ClassRef(alias.name, prefix + alias.name)

    def _st_Assign(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        if stmt.value is not None:  # `x: int` alone binds nothing
            value = self.ev(stmt.value)
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                self.bind(target, value)

    _st_AnnAssign = _st_Assign

    def _st_AugAssign(self, stmt: ast.AugAssign) -> None:
        """`x += 1`, `cfg["n"] *= 2`, `args.r -= 1`: the target evaluated as an expression (its context is not
        read), then rebound; a Bag (`opts = vars(args); opts |= {...}`) changes in place."""
        if isinstance(stmt.target, ast.Name) and isinstance(held := self.ev(stmt.target), Bag):
            self._changed(held, f"the augmented assignment at line {stmt.lineno}", stmt, [])
        self.bind(stmt.target, self.ev(ast.BinOp(stmt.target, stmt.op, stmt.value, lineno=stmt.lineno, col_offset=0)))

    def bind(self, target: ast.AST, value: Any) -> None:
        value = self.with_control(value)
        if isinstance(target, ast.Name):
            self.scopes[0][target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = values.elements(value)
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            ok = items is not None and not starred and len(items) == len(target.elts)
            for index, element in enumerate(target.elts):
                item = items[index] if ok else unresolved(element, "cannot unpack statically")
                self.bind(element.value if isinstance(element, ast.Starred) else element, item)
        elif isinstance(target, ast.Subscript):
            self._set_item(target, value)
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value)
            if isinstance(base, ap.Namespace) and target.attr == "__dict__":  # every option replaced
                self._stale([base], target, f"the __dict__ set at line {target.lineno}")
            elif isinstance(base, ap.Namespace):
                data = value if isinstance(value, Val) else unresolved(target, "not a data value", (), drawn(value))
                base.values[target.attr] = data
            elif isinstance(base, Obj):  # `env.num_clients = 5`: NVFLARE reads the attribute when it runs
                why = (
                    f"{base.name}.{target.attr} is set again at line {target.lineno}, which is not followed statically"
                )
                stale = self.with_control(unresolved(target, why, merge_flags(value)))
                base.args = [stale for _ in base.args]  # one attribute may stand for another (clients, num_clients)
                base.kwargs = {**dict.fromkeys(base.kwargs, stale), target.attr: stale}
            elif isinstance(base, ap.Parser):  # `action.default = 9` (add_argument gives the parser)
                self._stale([base], target, f"the attribute set at line {target.lineno}")
            elif isinstance(base, FuncRef):  # `f.__defaults__ = (9,)`: what the function returns is not known
                self._changed(base, f"the attribute set at line {target.lineno}", target, [value])

    def _st_If(self, stmt: ast.If) -> None:
        test = self.ev(stmt.test)
        resolved = isinstance(test, Val) and test.resolved
        note = BranchNote(stmt.lineno, source_text(stmt.test), resolved)
        self.out.branches.append(note)
        if resolved:
            with self.controlled_by(test.flags):
                self.walk_block(stmt.body if test.value else stmt.orelse)
            self._skipped(stmt.orelse if test.value else stmt.body, test.flags)
        else:
            self._undecided([stmt.body, stmt.orelse], note, test, f"depends on the condition at line {stmt.lineno}")

    def _st_For(self, stmt: ast.For | ast.AsyncFor | ast.While) -> None:
        """A `for` over a short known sequence is walked item by item, like Python would; any other loop once, as
        one side of a fork, its variable unresolved. Building or running a recipe/job/env in a loop fails closed."""
        over = not isinstance(stmt, ast.While)  # a `for`: over a sequence
        iterable = self.ev(stmt.iter) if over else None
        items = _unrollable(iterable, stmt.body) if over else None
        if over and items is None:
            why = cause(iterable) or "a sequence that is not known statically, too long, or left with break/continue"
            variable = f"loop variable of a loop over {source_text(stmt.iter)}: {why}"
            self.bind(stmt.target, unresolved(stmt.target, variable, (), inputs_of(iterable)))
        note = BranchNote(stmt.body[0].lineno, "loop body", False, kind="loop")
        self.out.branches.append(note)
        again = [] if over else [ast.Expr(stmt.test, lineno=stmt.lineno, col_offset=0)]  # a `while` test runs again
        passes = iterable if over else self.ev(stmt.test)  # a `while` test: before the first pass, always
        each = f"it changes with each pass of the loop at line {stmt.lineno}"
        if items is None:
            self._each_pass(stmt, each, drawn(passes))  # a draw or the clock deciding how often it runs
            self._undecided([stmt.body + again, []], note, iterable, each)
            if over and whole_environment([iterable], stmt):  # a loop over os.environ: what it binds reads it
                self._each_pass(stmt, whole_environment([iterable], stmt), environment([iterable]))
        else:
            first_obj, first_call = len(self.out.objects), len(self.out.calls)
            with self.controlled_by(getattr(iterable, "flags", ())):  # how often the body runs depends on them
                for item in items:
                    self.bind(stmt.target, item)
                    self.walk_block(stmt.body)
            note.touched_surface = touches_surface(self.out.objects[first_obj:], self.out.calls[first_call:], True)
        breaks = any(isinstance(node, ast.Break) for part in stmt.body for node in ast.walk(part))
        if breaks and stmt.orelse:  # `else:` runs only when no `break` left the loop
            why = f"the loop at line {stmt.lineno} may leave by break, skipping its else clause"
            orelse = BranchNote(stmt.orelse[0].lineno, "loop else", False)
            self.out.branches.append(orelse)
            self._undecided([stmt.orelse, []], orelse, iterable, why)
        else:
            self.walk_block(stmt.orelse)

    _st_AsyncFor = _st_While = _st_For

    def _ev_Lambda(self, node: ast.Lambda) -> FuncRef:
        """A lambda is a function of one `return` (its defaults evaluated now), followed when called."""
        body = [ast.Return(node.body, lineno=node.lineno, col_offset=node.col_offset)]
        return self._function(
            ast.FunctionDef(LAMBDA, node.args, body, [], lineno=node.lineno, col_offset=node.col_offset)
        )

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> FuncRef:
        """The function `def` (or `lambda`) makes: its defaults evaluated now, its closure the current scopes."""
        spec = node.args
        return FuncRef(node, list(self.scopes), {id(d): self.ev(d) for d in [*spec.defaults, *spec.kw_defaults] if d})


REFLECTION = ("exec", "eval", "globals", "locals")
PER_SITE = "set_per_site_config"  # the recipe's per-site config is kept on its Obj, for `recipe_raises`
BOUND = {"to", "to_server", "to_clients", PER_SITE, *RECIPE_RUNS, *FEDJOB_RUNS}  # read, not called


def _opened(base: Any, attr: str) -> bool:
    """`env.__dict__`, `send = job.to`: an object's attributes or a method the reading interprets, handed out."""
    return isinstance(base, Obj) and (dunder(attr) or attr in BOUND)


def _unrollable(iterable: Any, body: list[ast.stmt]) -> list | None:
    """The items of a short, statically known sequence (not a dict) whose loop body never breaks or continues."""
    items = None if isinstance(iterable, Bag) and iterable.keys is not None else values.elements(iterable)
    leaves = any(isinstance(node, (ast.Break, ast.Continue)) for stmt in body for node in ast.walk(stmt))
    return None if items is None or len(items) > MAX_UNROLL or leaves else items

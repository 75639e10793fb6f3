"""Safe static evaluation of Python expressions into `Val(value, confidence)`: nothing is executed, every
operation is size-bounded. Names, attributes, calls, `and`/`or` and comprehensions are left to the subclass
(`walker.Walker`, with `uncertain.UncertainPaths`).
"""

from __future__ import annotations

import ast
import operator
import re
from contextlib import suppress
from typing import Any

from .builtins_eval import env_read, environment, whole_environment
from .values import (
    HIGH,
    MAX_ITEMS,
    MAX_STR,
    MEDIUM,
    Bag,
    ClassRef,
    Val,
    deep_size,
    known,
    merge_flags,
    source_text,
    unresolved,
    unresolved_from,
    weakest,
)


def _singleton(value: Any) -> bool:
    return value is None or isinstance(value, bool)


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b if _singleton(a) or _singleton(b) else a == b,
    ast.IsNot: lambda a, b: a is not b if _singleton(a) or _singleton(b) else a != b,
}


def safe_binop(op: ast.operator, left: Any, right: Any) -> Any:
    """Apply `op` with bounds on result size; raises ValueError when it would be too big (KeyError: an operator
    not evaluated, such as `@` or `<<`)."""
    func = _BINOPS[type(op)]
    if isinstance(op, ast.Mult) and (isinstance(left, int) or isinstance(right, int)):
        seq, times = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(seq, (str, list, tuple)) and deep_size(seq) * max(times, 0) > MAX_STR:
            raise ValueError("result too large")
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 256:
        raise ValueError("exponent too large")
    if isinstance(op, ast.Mod) and isinstance(left, str):
        raise ValueError("printf-style formatting is not evaluated")
    result = func(left, right)
    if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > 1024:
        raise ValueError("integer too large")
    if deep_size(result) > MAX_STR:
        raise ValueError("result too large")
    return result


def wide_format(spec: str) -> bool:
    """True when a format spec/template asks for a huge width or nests fields (could allocate a lot)."""
    return any(len(n) > 4 for n in re.findall(r"\d+", spec)) or re.search(r"\{[^{}]*\{", spec) is not None


def computed(node: ast.AST, value: Any, inputs: list[Val], **extra: Any) -> Val:
    """A value computed from resolved `inputs`: medium at best, its expression, their flags."""
    confidence = weakest(MEDIUM, *(v.confidence for v in inputs))
    return Val(value, confidence, source_text(node), merge_flags(*inputs), **extra)


class ExpressionEvaluator:
    """Evaluate expression nodes; a subclass provides `_ev_Name(node)`, `_ev_Call(node)`, `_ev_BoolOp(node)`, the
    comprehensions' `_ev_ListComp(node)` and `attribute(base, attr, node)`."""

    def ev(self, node: ast.AST) -> Any:
        method = getattr(self, "_ev_" + type(node).__name__, None)
        if method is None:
            return unresolved(node, f"{type(node).__name__} is not evaluated statically")
        return method(node)

    def _ev_Constant(self, node: ast.Constant) -> Val:
        if isinstance(node.value, (bytes, complex)) or node.value is Ellipsis:
            return unresolved(node, "unsupported literal")
        return Val(node.value, HIGH)

    def _ev_Attribute(self, node: ast.Attribute) -> Any:
        return self.attribute(self.ev(node.value), node.attr, node)

    def _ev_UnaryOp(self, node: ast.UnaryOp) -> Val:
        operand = self.ev(node.operand)
        if not known(operand):
            return unresolved_from(node, "operand is not resolved", operand)
        ops = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
        try:
            value = ops[type(node.op)](operand.value)
        except (TypeError, KeyError):
            return unresolved(node, "invalid operand")
        literal = isinstance(node.operand, ast.Constant) and isinstance(node.op, (ast.USub, ast.UAdd))
        conf = operand.confidence if literal else weakest(operand.confidence, MEDIUM)
        return Val(value, conf, "" if literal else source_text(node), operand.flags)

    def _ev_BinOp(self, node: ast.BinOp) -> Val:
        left, right = self.ev(node.left), self.ev(node.right)
        flags = merge_flags(left, right)
        if not (known(left) and known(right)):
            return unresolved_from(node, "operand is not resolved", left, right)
        with suppress(ArithmeticError, TypeError, ValueError, KeyError):
            return computed(node, safe_binop(node.op, left.value, right.value), [left, right])
        return unresolved(node, "expression cannot be evaluated safely", flags)

    def _ev_Compare(self, node: ast.Compare) -> Val:
        items = [self.ev(node.left)] + [self.ev(c) for c in node.comparators]
        flags = merge_flags(*items)
        if not all(map(known, items)):
            return unresolved_from(node, "comparison operand is not resolved", *items)
        with suppress(TypeError, KeyError):
            result = all(_CMPOPS[type(op)](items[i].value, items[i + 1].value) for i, op in enumerate(node.ops))
            return computed(node, result, items)
        return unresolved(node, "comparison cannot be evaluated", flags)

    def _ev_JoinedStr(self, node: ast.JoinedStr) -> Val:
        vals: list[Val] = []
        traced: list[tuple[str, tuple]] = []  # (text, flags) of each part
        for index, part in enumerate(node.values):
            if isinstance(part, ast.Constant):
                traced.append((str(part.value), ()))
                continue
            val = self.ev(part.value)
            if not known(val):  # the fields after it are read for their draws and clock reads
                rest = [self.ev(p.value) for p in node.values[index + 1 :] if isinstance(p, ast.FormattedValue)]
                return unresolved_from(
                    node, "f-string field is not resolved", val, *rest, flags=merge_flags(val, *vals)
                )
            vals.append(val)
            spec = self.ev(part.format_spec) if part.format_spec is not None else Val("", HIGH)
            if not known(spec) or wide_format(spec.value):
                return unresolved(node, "format spec is not resolved", merge_flags(*vals))
            try:
                conv = {115: str, 114: repr, 97: ascii}.get(part.conversion)
                traced.append((format(conv(val.value) if conv else val.value, spec.value), val.flags))
            except (TypeError, ValueError):
                return unresolved(node, "invalid format", merge_flags(*vals))
        text = "".join(text for text, _ in traced)
        if len(text) > MAX_STR:
            return unresolved(node, "string too large")
        return computed(node, text, vals, parts=tuple(traced))

    def _sequence(self, node: ast.AST, elements: list[ast.AST], build) -> Any:
        if len(elements) > MAX_ITEMS:
            return unresolved(node, "container too large")
        items = [self.ev(e) for e in elements]
        if any(isinstance(e, ast.Starred) for e in elements):
            return unresolved(node, "starred items are not evaluated")
        if not all(isinstance(i, Val) for i in items):
            return Bag(items)
        if not all(map(known, items)):
            return unresolved_from(node, "an item is not resolved", *items)
        try:
            value = build([i.value for i in items])
        except TypeError:
            return unresolved(node, "unhashable item")
        return unresolved(node, "container too large") if deep_size(value) > MAX_STR else computed(node, value, items)

    def _ev_List(self, node: ast.List | ast.Tuple | ast.Set) -> Any:
        return self._sequence(node, node.elts, {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)])

    _ev_Tuple = _ev_Set = _ev_List

    def _ev_Dict(self, node: ast.Dict) -> Any:
        if any(k is None for k in node.keys):
            unpacked = [self.ev(v) for k, v in zip(node.keys, node.values, strict=True) if k is None]
            return unresolved(
                node, whole_environment(unpacked, node) or "dict unpacking is not evaluated", (), environment(unpacked)
            )
        keys = self._sequence(node, node.keys, list)
        values = [self.ev(v) for v in node.values]
        if not known(keys):
            return unresolved(node, "a dict key is not resolved")
        if not all(isinstance(v, Val) for v in values):
            return Bag(values, keys.value, key_flags=keys.flags, key_confidence=keys.confidence)
        if not all(map(known, values)):
            return unresolved_from(node, "a dict value is not resolved", *values)
        try:
            value = dict(zip(keys.value, (v.value for v in values), strict=True))
        except TypeError:
            return unresolved(node, "unhashable key")
        if deep_size(value) > MAX_STR:
            return unresolved(node, "dict too large")
        return computed(node, value, [keys, *values])

    def _ev_Subscript(self, node: ast.Subscript) -> Any:
        base, index = self.ev(node.value), self.ev(node.slice)
        if isinstance(base, Bag):  # a class picked from a table is dynamic construction, even with a known key
            classes = tuple(i.name for i in base.items if isinstance(i, ClassRef))
            if classes:
                return ClassRef("<dynamic>", "<dynamic>", dynamic=True, candidates=classes)
            if not known(index):
                return unresolved(node, "subscript is not resolved")
            with suppress(ValueError, IndexError, TypeError):
                return base.items[base.keys.index(index.value) if base.keys is not None else index.value]
            return unresolved(node, "subscript cannot be evaluated")
        if isinstance(base, ClassRef) and base.qualname == "os.environ":
            return env_read(index, node, [index])
        if not (known(base) and known(index)):
            return unresolved_from(node, "subscript is not resolved", base, index)
        with suppress(KeyError, IndexError, TypeError, ValueError):
            return computed(node, base.value[index.value], [base, index])
        return unresolved(node, "subscript cannot be evaluated", merge_flags(base, index))

    def _ev_Slice(self, node: ast.Slice) -> Val:
        parts = [self.ev(p) if p is not None else Val(None, HIGH) for p in (node.lower, node.upper, node.step)]
        if not all(map(known, parts)):
            return unresolved(node, "slice is not resolved", merge_flags(*parts))
        return Val(slice(*(p.value for p in parts)), MEDIUM, "", merge_flags(*parts))

    def call_arguments(self, node: ast.Call) -> tuple[list, dict, bool]:
        """(positional values, keyword values, whether some argument is not followed): `*rest` is not, `**d` is
        when `d` is a resolved dict or a Bag with known keys."""
        args = [self.ev(arg) for arg in node.args if not isinstance(arg, ast.Starred)]
        kwargs, unpacked = {}, len(args) < len(node.args)  # a `*rest` argument is not followed
        for kw in node.keywords:
            value = self.ev(kw.value)
            if kw.arg is not None:
                kwargs[kw.arg] = value
            elif isinstance(value, Val) and value.resolved and isinstance(value.value, dict):
                kwargs.update(
                    {str(k): Val(v, value.confidence, value.expr, value.flags) for k, v in value.value.items()}
                )
            elif isinstance(value, Bag) and value.keys is not None:
                kwargs.update({str(k): v for k, v in zip(value.keys, value.items, strict=True)})
            else:
                unpacked = True
        return args, kwargs, unpacked

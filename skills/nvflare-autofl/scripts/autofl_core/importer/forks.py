"""Walk both sides of a condition the importer cannot resolve and merge what each side bound.

A name bound to the same value on both sides keeps it; otherwise it becomes unresolved
("depends on the condition at line N"). A side that returns early still decides the function's result: its
value is merged with whatever the function returns at its end; a side that raises gives no result. Whether a side built or ran a recipe/job is recorded on
the branch note so `surface` can fail closed on an ambiguous choice of what runs.
"""

from __future__ import annotations

from typing import Any

from .events import BranchNote, PathEnd
from .surface import touches_surface
from .values import UNRESOLVED, Val, known, merge_flags


def merge_value(a: Any, b: Any, line: int) -> Any:
    """What a name holds after both sides: its value when the same on both (the same object, or equal data of the
    same confidence), else unresolved naming the condition."""
    flags = merge_flags(*(v for v in (a, b) if isinstance(v, Val)))
    if a is b or (known(a) and known(b) and a.confidence == b.confidence and a.value == b.value):
        return Val(a.value, a.confidence, a.expr, flags, a.reason, a.parts) if isinstance(a, Val) else a
    return Val(None, UNRESOLVED, "", flags, f"depends on the condition at line {line}")


def _merge_frames(left: dict, right: dict, line: int) -> dict:
    return {
        name: merge_value(left[name], right[name], line)
        if name in left and name in right
        else Val(None, UNRESOLVED, "", (), f"bound only on one side of the condition at line {line}")
        for name in dict.fromkeys([*left, *right])
    }


def walk_both(walker, left: list, right: list, note: BranchNote) -> None:
    """Walk `left` and `right` with `walker` (the `walker.Walker`) from the same starting bindings; continue with
    the merged bindings."""
    state = walker.bindings()
    snapshots = [dict(d) for d in state]
    first_obj, first_call = len(walker.out.objects), len(walker.out.calls)
    outcomes: list[tuple[list[dict], PathEnd | None]] = []
    for body in (left, right):
        for d, snap in zip(state, snapshots, strict=True):
            d.clear()
            d.update(snap)
        returned = None
        try:
            walker.walk_block(body)
        except PathEnd as ret:
            returned = ret
        outcomes.append(([dict(d) for d in state], returned))
    note.touched_surface = touches_surface(walker.out.objects[first_obj:], walker.out.calls[first_call:])
    (left_state, left_ret), (right_state, right_ret) = outcomes
    for d, left_d, right_d in zip(state, left_state, right_state, strict=True):
        d.clear()
        if (left_ret is None) == (right_ret is None):
            d.update(_merge_frames(left_d, right_d, note.line))
        else:
            d.update(right_d if left_ret is not None else left_d)
    _end_paths(walker, left_ret, right_ret, note.line)


def _end_paths(walker, left: PathEnd | None, right: PathEnd | None, line: int) -> None:
    """Raise the result when both sides returned; keep a lone early return for the function's result."""
    if left is not None and right is not None:
        if left.raised != right.raised:
            raise right if left.raised else left  # the side that raises gives no result
        raise PathEnd(merge_value(left.value, right.value, line), raised=left.raised)
    returned = left or right
    if returned is not None and not returned.raised and walker.early:
        walker.early[-1].append((returned.value, line))

"""Walk both sides of a condition the importer cannot resolve and merge what each side bound.

A name bound to the same value on both sides keeps it; otherwise it becomes unresolved
("depends on the condition at line N"). Whether a side built or ran a recipe/job is recorded on
the branch note so `surface` can fail closed on an ambiguous choice of what runs.
"""

from __future__ import annotations

from typing import Any

from .surface import touches_surface
from .values import UNRESOLVED, Val
from .walker import BranchNote, Walker, _Return


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Val) and isinstance(b, Val):
        return a.confidence == b.confidence and a.confidence != UNRESOLVED and a.value == b.value
    return False


def _merge_value(a: Any, b: Any, line: int) -> Any:
    if _same(a, b):
        return a
    flags = tuple(dict.fromkeys((*getattr(a, "flags", ()), *getattr(b, "flags", ()))))
    return Val(None, UNRESOLVED, "", flags, f"depends on the condition at line {line}")


def _merge_frames(left: dict, right: dict, line: int) -> dict:
    merged = {}
    for name in dict.fromkeys([*left, *right]):
        if name in left and name in right:
            merged[name] = _merge_value(left[name], right[name], line)
        else:
            merged[name] = Val(None, UNRESOLVED, "", (), f"bound only on one side of the condition at line {line}")
    return merged


def walk_both(walker: Walker, left: list, right: list, note: BranchNote) -> None:
    """Walk `left` and `right` from the same starting bindings; continue with the merged bindings."""
    frame = walker.scopes[0]
    snapshot = dict(frame)
    first_obj, first_call = len(walker.out.objects), len(walker.out.calls)
    outcomes: list[tuple[dict, _Return | None]] = []
    for body in (left, right):
        frame.clear()
        frame.update(snapshot)
        returned = None
        try:
            walker.walk_block(body)
        except _Return as ret:
            returned = ret
        outcomes.append((dict(frame), returned))
    note.touched_surface = touches_surface(walker.out.objects[first_obj:], walker.out.calls[first_call:])
    (left_frame, left_ret), (right_frame, right_ret) = outcomes
    frame.clear()
    if left_ret is not None and right_ret is not None:
        frame.update(_merge_frames(left_frame, right_frame, note.line))
        raise _Return(_merge_value(left_ret.value, right_ret.value, note.line))
    if left_ret is not None or right_ret is not None:
        frame.update(right_frame if left_ret is not None else left_frame)
        return
    frame.update(_merge_frames(left_frame, right_frame, note.line))

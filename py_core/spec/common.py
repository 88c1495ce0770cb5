"""Shape helpers shared by the operator families.  https://www.w3.org/TR/webnn/#algorithms-broadcasting"""

from __future__ import annotations

from collections.abc import Sequence

from py_core.spec.table import OpCall


def broadcast_shapes(call: OpCall, a: Sequence[int], b: Sequence[int], what: str = "inputs") -> tuple[int, ...]:
    """Bidirectional broadcasting.  https://www.w3.org/TR/webnn/#biderectionally-broadcasting"""
    rank = max(len(a), len(b))
    pa = [1] * (rank - len(a)) + list(a)
    pb = [1] * (rank - len(b)) + list(b)
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            call.fail(f"{what} shapes {list(a)} and {list(b)} are not broadcastable")
    return tuple(out)


def check_unidirectional(call: OpCall, shape_from: Sequence[int], shape_to: Sequence[int],
                         what: str) -> None:
    """Unidirectional broadcasting of `shape_from` to `shape_to`.
    https://www.w3.org/TR/webnn/#unidirectionally-broadcasting"""
    if len(shape_from) > len(shape_to):
        call.fail(f"{what} shape {list(shape_from)} cannot be broadcast to {list(shape_to)}")
    padded = [1] * (len(shape_to) - len(shape_from)) + list(shape_from)
    for x, y in zip(padded, shape_to, strict=True):
        if x != y and x != 1:
            call.fail(f"{what} shape {list(shape_from)} cannot be broadcast to {list(shape_to)}")


def check_axis(call: OpCall, axis: int, rank: int, what: str = "axis") -> int:
    """An axis must be in [0, rank)."""
    if not 0 <= axis < rank:
        call.fail(f"{what} {axis} is out of range for rank {rank}")
    return axis


def check_axes(call: OpCall, axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    """Axes must be in [0, rank) and unique."""
    for a in axes:
        check_axis(call, a, rank, f"{what} value")
    if len(set(axes)) != len(axes):
        call.fail(f"{what} {list(axes)} contain duplicate values")
    return list(axes)


def check_length(call: OpCall, name: str, values: Sequence[object], length: int) -> None:
    """A sequence option must have exactly `length` items."""
    if len(values) != length:
        call.fail(f"{name} {list(values)} must have {length} values")

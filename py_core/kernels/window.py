"""Window geometry shared by the convolution and pooling kernels: which inputs each filter tap reads, without
materialising padding or stride gaps.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d

Along one axis a tap `i` links position `a` on one side to `b = a * stride + i * dilation + offset` on the other
(conv2d and the pools: a = output, b = input, offset = -padding; convTranspose2d: a = input, b = output,
offset = -padding).  For every tap that links anything, `spans` gives the contiguous range of `a` and the
strided slice of `b` it links, so a kernel only touches positions inside both tensors: padding, dilation and
stride gaps cost nothing, whatever their size (padding 12000 with strides 30000 reads as little as padding 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

# A kernel's temporary buffers (im2col columns, convTranspose2d's per-tap products) are cut into tiles of at
# most this many bytes: memory then scales with the output and the filter, never with their product.
SCRATCH_BYTES = 64 << 20
# The pre-packed conv2d (py_core.compiler.kernels) builds its im2col matrix whole, on NumPy or C; past this
# size it hands over to the tiled reference kernel (a 1024x1024 3x3x64 layer would need 2.4 GB at once).
MAX_IM2COL_BYTES = 256 << 20


class Span(NamedTuple):
    """One tap's share of an axis: positions `a` (contiguous, relative to the range asked for) and `b`."""

    tap: int
    a: slice
    b: slice


def _ceil_div(p: int, q: int) -> int:
    return -(-p // q)


def _taps(n_b: int, window: int, offset: int, stride: int, dilation: int, a0: int, a1: int) -> Iterator[int]:
    """Candidate taps linking some a in [a0, a1) to some b in [0, n_b), in increasing order (Python ints: no
    overflow, and never a loop over taps that cannot land)."""
    lo = max(0, _ceil_div(-offset - (a1 - 1) * stride, dilation))
    hi = min(window - 1, (n_b - 1 - offset - a0 * stride) // dilation)
    if hi < lo:
        return iter(())
    per_a = (n_b - 1) // dilation + 1  # taps one position a can link at most
    if hi - lo + 1 <= (a1 - a0) * per_a:
        return iter(range(lo, hi + 1))
    # far more candidates than links (huge window, stride and padding): collect each a's own taps
    found: set[int] = set()
    for a in range(a0, a1):
        first = max(lo, _ceil_div(-offset - a * stride, dilation))
        last = min(hi, (n_b - 1 - offset - a * stride) // dilation)
        found.update(range(first, last + 1))
    return iter(sorted(found))


def spans(n_b: int, window: int, offset: int, stride: int, dilation: int, a0: int, a1: int) -> list[Span]:
    """Every tap linking a in [a0, a1) to b = a * stride + tap * dilation + offset in [0, n_b)."""
    out = []
    for i in _taps(n_b, window, offset, stride, dilation, a0, a1):
        base = i * dilation + offset
        first = max(a0, _ceil_div(-base, stride))
        last = min(a1 - 1, (n_b - 1 - base) // stride)
        if last < first:
            continue
        start = first * stride + base
        # one position: a unit step (a huge stride would not fit a slice step on 32-bit NumPy)
        b = slice(start, start + 1) if last == first else slice(start, start + (last - first) * stride + 1, stride)
        out.append(Span(i, slice(first - a0, last + 1 - a0), b))
    return out


def out_size(size: int, window: int, pad_begin: int, pad_end: int, stride: int, dilation: int) -> int:
    """conv2d's output size along one axis (floor rounding)."""
    return (size + pad_begin + pad_end - (window - 1) * dilation - 1) // stride + 1


def tiles(rows: int, cols: int, pixel_bytes: int) -> Iterator[tuple[int, int, int, int]]:
    """Rectangles (r0, r1, c0, c1) covering rows x cols so each holds at most SCRATCH_BYTES of pixel_bytes each
    (at least one pixel)."""
    row_bytes = cols * pixel_bytes
    if row_bytes <= SCRATCH_BYTES:
        step = max(1, SCRATCH_BYTES // max(row_bytes, 1))
        for r in range(0, rows, step):
            yield r, min(rows, r + step), 0, cols
        return
    step = max(1, SCRATCH_BYTES // max(pixel_bytes, 1))
    for r in range(rows):
        for c in range(0, cols, step):
            yield r, r + 1, c, min(cols, c + step)

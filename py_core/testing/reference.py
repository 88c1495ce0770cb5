"""float64 definitions of the fuzzed operators, written from the spec's formulas, independent of py_core.kernels.

Each one computes every output element from the input coordinates its definition names (out-of-range
coordinates are padding), so time and memory follow the OUTPUT and window sizes, never the padding, strides or
dilations: a padding of 2^32 - 1 costs nothing here.  Tensors are NCHW / OIHW / IOHW (callers transpose); the
recurrent ones take the canonical layouts zrn / iofg.  Used by tests/core/test_fuzz_kernels.py and by
py_core.testing.native_check (so also inside Pyodide).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

F64 = np.float64


def window_coords(out: int, window: int, stride: int, dilation: int, pad_begin: int,
                  size: int) -> tuple[np.ndarray, np.ndarray]:
    """[out, window] input coordinates o * stride - pad_begin + i * dilation (Python ints, exact), clipped into
    the input, and the mask of those inside it."""
    coords = [[o * stride - pad_begin + i * dilation for i in range(window)] for o in range(out)]
    inside = np.array([[0 <= c < size for c in row] for row in coords], bool).reshape(out, window)
    clipped = np.array([[min(max(c, 0), size - 1) for c in row] for row in coords], np.int64).reshape(out, window)
    return clipped, inside


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, padding: Sequence[int], strides: Sequence[int],
           dilations: Sequence[int], groups: int, out_hw: Sequence[int]) -> np.ndarray:
    """y[n, o, p, q] = bias[o] + sum over c in o's group, i, j of x[n, c, p*sh - top + i*dh, q*sw - left + j*dw]
    * w[o, c, i, j], zero outside the input."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    rows, rin = window_coords(out_hw[0], kh, strides[0], dilations[0], padding[0], h)
    cols, cin = window_coords(out_hw[1], kw, strides[1], dilations[1], padding[2], wd)
    # patches[n, c, p, i, q, j], padding as 0
    patches = x.astype(F64)[:, :, rows][:, :, :, :, cols] * (rin[:, :, None, None] & cin[None, None])
    og = o // groups
    y = np.empty((n, o, out_hw[0], out_hw[1]))
    for g in range(groups):
        y[:, g * og:(g + 1) * og] = np.einsum("ncpiqj,ocij->nopq", patches[:, g * cg:(g + 1) * cg],
                                              w[g * og:(g + 1) * og].astype(F64))
    if bias is not None:
        y += bias.astype(F64)[None, :, None, None]
    return y


def conv_transpose2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, padding: Sequence[int],
                     strides: Sequence[int], dilations: Sequence[int], groups: int,
                     out_hw: Sequence[int]) -> np.ndarray:
    """The transpose of conv2d: y[n, o, p, q] = bias[o] + sum of x[n, c, a, b] * w[c, o', i, j] over every input
    pixel (a, b) and tap (i, j) with a*sh + i*dh - top = p and b*sw + j*dw - left = q (w: IOHW, per group)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups

    def sources(out: int, window: int, stride: int, dilation: int, pad: int, size: int):
        src, ok = np.zeros((out, window), np.int64), np.zeros((out, window), bool)
        for p in range(out):
            for i in range(window):
                a, r = divmod(p + pad - i * dilation, stride)
                if r == 0 and 0 <= a < size:
                    src[p, i], ok[p, i] = a, True
        return src, ok

    rows, rin = sources(out_hw[0], kh, strides[0], dilations[0], padding[0], h)
    cols, cin = sources(out_hw[1], kw, strides[1], dilations[1], padding[2], wd)
    patches = x.astype(F64)[:, :, rows][:, :, :, :, cols] * (rin[:, :, None, None] & cin[None, None])
    y = np.empty((n, og * groups, out_hw[0], out_hw[1]))
    for g in range(groups):
        y[:, g * og:(g + 1) * og] = np.einsum("ncpiqj,coij->nopq", patches[:, g * cg:(g + 1) * cg],
                                              w[g * cg:(g + 1) * cg].astype(F64))
    if bias is not None:
        y += bias.astype(F64)[None, :, None, None]
    return y


def pool2d(kind: str, x: np.ndarray, window: Sequence[int], padding: Sequence[int], strides: Sequence[int],
           dilations: Sequence[int], out_hw: Sequence[int]) -> np.ndarray:
    """average (over the window's taps inside the input), l2 (sqrt of their sum of squares) or max; a window
    entirely in the padding gives 0 (average, l2) or -inf (max), as the kernels define it."""
    n, c, h, wd = x.shape
    rows, rin = window_coords(out_hw[0], window[0], strides[0], dilations[0], padding[0], h)
    cols, cin = window_coords(out_hw[1], window[1], strides[1], dilations[1], padding[2], wd)
    patches = x.astype(F64)[:, :, rows][:, :, :, :, cols]  # [n, c, p, i, q, j]
    mask = np.broadcast_to(rin[:, :, None, None] & cin[None, None], patches.shape)
    if kind == "max":
        return np.where(mask, patches, -np.inf).max(axis=(3, 5))
    if kind == "l2":
        return np.sqrt(np.where(mask, patches * patches, 0).sum(axis=(3, 5)))
    count = mask.sum(axis=(3, 5))
    return np.where(mask, patches, 0).sum(axis=(3, 5)) / np.maximum(count, 1)


def _resample_axis(x: np.ndarray, axis: int, out: int, mode: str) -> np.ndarray:
    """One axis of resample2d, half-pixel: source coordinate (o + 1/2) * in / out - 1/2, exact in fractions."""
    size = x.shape[axis]
    coords = [min(max(Fraction(2 * o + 1, 2) * size / out - Fraction(1, 2), Fraction(0)), Fraction(size - 1))
              for o in range(out)]
    if mode == "nearest-neighbor":
        # the nearest input, halves rounding down: ceil(coord - 1/2)
        idx = [math.ceil(c - Fraction(1, 2)) for c in coords]
        return np.take(x, np.array(idx, np.int64), axis=axis)
    lo = [int(c) for c in coords]  # floor: coords are >= 0
    hi = [min(v + 1, size - 1) for v in lo]
    t = np.array([float(c - v) for c, v in zip(coords, lo, strict=True)])
    shape = [1] * x.ndim
    shape[axis] = out
    t = t.reshape(shape)
    return np.take(x, np.array(lo), axis=axis) * (1 - t) + np.take(x, np.array(hi), axis=axis) * t


def resample2d(x: np.ndarray, mode: str, sizes: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """resample2d along two axes (any order), float64."""
    y = x.astype(F64)
    for axis, out in zip(axes, sizes, strict=True):
        y = _resample_axis(y, axis, out, mode)
    return y


def pad(x: np.ndarray, begin: Sequence[int], end: Sequence[int], mode: str, value: float) -> np.ndarray:
    """Every output coordinate mapped back to the input: constant fills, edge clamps, reflection mirrors
    around the edge elements (period 2 * (size - 1))."""
    y = x.astype(F64)
    for axis, (b, e) in enumerate(zip(begin, end, strict=True)):
        size = y.shape[axis]
        src = np.arange(-b, size + e)
        if mode == "edge":
            idx = np.clip(src, 0, size - 1)
        elif mode == "reflection":
            period = 2 * (size - 1)
            m = np.mod(src, period) if period else np.zeros_like(src)
            idx = np.where(m < size, m, period - m)
        else:
            idx = np.clip(src, 0, size - 1)
        y = np.take(y, idx, axis=axis)
        if mode == "constant":
            shape = [1] * y.ndim
            shape[axis] = len(src)
            inside = ((src >= 0) & (src < size)).reshape(shape)
            y = np.where(inside, y, value)
    return y


def slice_(x: np.ndarray, starts: Sequence[int], sizes: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """y[k...] = x[start + k * stride ...] for k * stride < size."""
    y = x.astype(F64)
    for axis, (s, n, st) in enumerate(zip(starts, sizes, strides, strict=True)):
        y = np.take(y, np.arange(s, s + n, st), axis=axis)
    return y


def gather(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """Negative indices count from the end, then clamp into the axis (the spec's clamping)."""
    size = x.shape[axis]
    idx = [min(max(i + size if i < 0 else i, 0), size - 1) for i in indices.astype(object).ravel()]
    return np.take(x.astype(F64), np.array(idx, np.int64).reshape(indices.shape), axis=axis)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-v) = inf below about -709: 1 / inf = 0, the right limit
        return 1 / (1 + np.exp(-v))


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": _sigmoid, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}


def _gates(a: np.ndarray | None, layout: str, canonical: str, hidden: int) -> dict[str, np.ndarray | float]:
    """The gate blocks of a weight or bias (gates along axis 0), by gate letter; 0 for an absent operand."""
    if a is None:
        return dict.fromkeys(canonical, 0.0)
    return {g: a[layout.index(g) * hidden:(layout.index(g) + 1) * hidden].astype(F64) for g in canonical}


def gru_cell(x, w, r, h, hidden, b, rb, reset_after, layout, acts):  # type: ignore[no-untyped-def]
    """z = f(x Wz + bz + h Rz + rbz), r likewise, n = g(x Wn + bn + r (h Rn + rbn)) (resetAfter) or
    g(x Wn + bn + (r h) Rn + rbn); h' = z h + (1 - z) n."""
    f, g = (ACTIVATIONS[a] for a in acts)
    x, h = x.astype(F64), h.astype(F64)
    W, R, B, RB = (_gates(a, layout, "zrn", hidden) for a in (w, r, b, rb))
    z = f(x @ W["z"].T + B["z"] + h @ R["z"].T + RB["z"])
    rr = f(x @ W["r"].T + B["r"] + h @ R["r"].T + RB["r"])
    if reset_after:
        n = g(x @ W["n"].T + B["n"] + rr * (h @ R["n"].T + RB["n"]))
    else:
        n = g(x @ W["n"].T + B["n"] + (rr * h) @ R["n"].T + RB["n"])
    return z * h + (1 - z) * n


def lstm_cell(x, w, r, h, c, hidden, b, rb, p, layout, acts):  # type: ignore[no-untyped-def]
    """i, f, o = f0(x W + b + h R + rb + peephole * c), g = f1(...); c' = f c + i g; h' = o f2(c')."""
    f0, f1, f2 = (ACTIVATIONS[a] for a in acts)
    x, h, c = x.astype(F64), h.astype(F64), c.astype(F64)
    W, R, B, RB = (_gates(a, layout, "iofg", hidden) for a in (w, r, b, rb))
    P = _gates(p, "iof", "iof", hidden)

    def pre(gate: str) -> np.ndarray:
        return x @ W[gate].T + B[gate] + h @ R[gate].T + RB[gate] + (c * P[gate] if gate in P else 0)

    i, f, o, g = f0(pre("i")), f0(pre("f")), f0(pre("o")), f1(pre("g"))
    c2 = f * c + i * g
    return o * f2(c2), c2


def _directions(direction: str, num: int, steps: int) -> list[range]:
    fwd, bwd = range(steps), range(steps - 1, -1, -1)
    return [fwd, bwd] if num == 2 else [bwd if direction == "backward" else fwd]


def gru(x, w, r, hidden, b, rb, h0, reset_after, direction, layout, acts):  # type: ignore[no-untyped-def]
    """gru: gru_cell over the steps of each direction; returns (last hidden state, sequence)."""
    steps, batch = x.shape[0], x.shape[1]
    num = w.shape[0]
    seq = np.zeros((steps, num, batch, hidden))
    last = []
    for d, order in enumerate(_directions(direction, num, steps)):
        h = np.zeros((batch, hidden)) if h0 is None else h0[d].astype(F64)
        for t in order:
            h = gru_cell(x[t], w[d], r[d], h, hidden, None if b is None else b[d], None if rb is None else rb[d],
                         reset_after, layout, acts)
            seq[t, d] = h
        last.append(h)
    return np.stack(last), seq


def lstm(x, w, r, hidden, b, rb, p, h0, c0, direction, layout, acts):  # type: ignore[no-untyped-def]
    """lstm: lstm_cell over the steps of each direction; returns (last hidden, last cell, sequence)."""
    steps, batch = x.shape[0], x.shape[1]
    num = w.shape[0]
    seq = np.zeros((steps, num, batch, hidden))
    hs, cs = [], []
    for d, order in enumerate(_directions(direction, num, steps)):
        h = np.zeros((batch, hidden)) if h0 is None else h0[d].astype(F64)
        c = np.zeros((batch, hidden)) if c0 is None else c0[d].astype(F64)
        for t in order:
            h, c = lstm_cell(x[t], w[d], r[d], h, c, hidden, None if b is None else b[d],
                             None if rb is None else rb[d], None if p is None else p[d], layout, acts)
            seq[t, d] = h
        hs.append(h)
        cs.append(c)
    return np.stack(hs), np.stack(cs), seq

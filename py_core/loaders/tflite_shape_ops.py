"""TFLite shape and resampling operators -> WebNN: padding, reshapes, slices, depth/space moves, resizes.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

Same conventions as tflite_ops.py (one function per operator, taking a MappingContext).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from py_core.errors import NotSupportedError
from py_core.loaders.tflite_context import MappingContext


def reshape_to(ctx: MappingContext, x: Any, shape: Sequence[int], current: Sequence[int]) -> Any:
    """reshape only when the shape changes."""
    return x if tuple(shape) == tuple(current) else ctx.emit("reshape", x, [int(d) for d in shape])


def reshape(ctx: MappingContext) -> Any:
    """RESHAPE to the output tensor's static shape (the shape input or option says the same)."""
    return ctx.emit("reshape", ctx.operand(0), list(ctx.out().shape))


def concatenation(ctx: MappingContext) -> Any:
    """CONCATENATION along axis (negative wraps) with a fused activation."""
    rank = len(ctx.shape(0))
    xs = [ctx.operand(k) for k in range(len(ctx.op.inputs))]
    y = ctx.emit("concat", xs, ctx.options.Axis() % rank)
    return ctx.fused(y, ctx.options.FusedActivationFunction())


def pad(ctx: MappingContext) -> Any:
    """PAD / PADV2: constant paddings [rank, 2]; PADV2's third input is the fill value."""
    p = ctx.const(1).astype(np.int64).reshape(-1, 2)
    if (p < 0).any():
        raise NotSupportedError(f"negative paddings {p.tolist()}")
    options: dict[str, Any] = {}
    if ctx.has(2):
        options["value"] = float(ctx.const(2).reshape(-1)[0])
    return ctx.emit("pad", ctx.operand(0), p[:, 0].tolist(), p[:, 1].tolist(), **options)


def mirror_pad(ctx: MappingContext) -> Any:
    """MIRROR_PAD: REFLECT is WebNN's reflection; SYMMETRIC has no mapping."""
    if ctx.options.Mode() != 0:
        raise NotSupportedError("SYMMETRIC mirror padding")
    p = ctx.const(1).astype(np.int64).reshape(-1, 2)
    return ctx.emit("pad", ctx.operand(0), p[:, 0].tolist(), p[:, 1].tolist(), mode="reflection")


def transpose(ctx: MappingContext) -> Any:
    """TRANSPOSE by a constant permutation."""
    return ctx.emit("transpose", ctx.operand(0), permutation=[int(a) for a in ctx.const(1)])


def depth_to_space(ctx: MappingContext) -> Any:
    """DEPTH_TO_SPACE (DCR): y[n, h*b+i, w*b+j, c] = x[n, h, w, (i*b + j)*C + c]."""
    n, h, w, c = ctx.shape(0)
    b = ctx.options.BlockSize()
    x = ctx.emit("reshape", ctx.operand(0), [n, h, w, b, b, c // (b * b)])
    x = ctx.emit("transpose", x, permutation=[0, 1, 3, 2, 4, 5])
    return ctx.emit("reshape", x, [n, h * b, w * b, c // (b * b)])


def space_to_depth(ctx: MappingContext) -> Any:
    """SPACE_TO_DEPTH: the inverse of DEPTH_TO_SPACE."""
    n, h, w, c = ctx.shape(0)
    b = ctx.options.BlockSize()
    x = ctx.emit("reshape", ctx.operand(0), [n, h // b, b, w // b, b, c])
    x = ctx.emit("transpose", x, permutation=[0, 1, 3, 2, 4, 5])
    return ctx.emit("reshape", x, [n, h // b, w // b, b * b * c])


def _slice(ctx: MappingContext, x: Any, shape: Sequence[int], ranges: Sequence[range]) -> Any:
    """Take Python-style ranges along every axis: reverse the negative-step axes, then one strided slice."""
    rev = [a for a, r in enumerate(ranges) if r.step < 0]
    starts, sizes, strides = [], [], []
    for dim, r in zip(shape, ranges, strict=True):
        if len(r) == 0:
            raise NotSupportedError(f"empty slice {r} (WebNN has no zero-sized dimensions)")
        start = r.start if r.step > 0 else dim - 1 - r.start  # index in the reversed axis
        starts.append(start)
        sizes.append((len(r) - 1) * abs(r.step) + 1)
        strides.append(abs(r.step))
    if rev:
        x = ctx.emit("reverse", x, axes=rev)
    if starts == [0] * len(shape) and sizes == list(shape) and strides == [1] * len(shape):
        return x if rev else ctx.emit("identity", x)
    return ctx.emit("slice", x, starts, sizes, strides=strides)


def strided_slice(ctx: MappingContext) -> Any:
    """STRIDED_SLICE with begin/end/ellipsis/new-axis/shrink masks and `offset`, as tf.strided_slice."""
    o = ctx.options
    shape = ctx.shape(0)
    begin, end = [int(v) for v in ctx.const(1)], [int(v) for v in ctx.const(2)]
    steps = [int(v) for v in ctx.const(3)] if ctx.has(3) else [1] * len(begin)
    masks = [o.BeginMask(), o.EndMask(), o.EllipsisMask(), o.NewAxisMask(), o.ShrinkAxisMask()]
    bmask, emask, ellipsis, new_axis, shrink = masks
    offset = bool(o.Offset()) if hasattr(o, "Offset") else False
    if ellipsis & (ellipsis - 1):
        raise NotSupportedError("more than one ellipsis")
    spec = list(range(len(begin)))
    if not ellipsis:  # an implicit ellipsis at the end selects the remaining dimensions
        spec.append(-1)
    else:
        spec[(ellipsis & -ellipsis).bit_length() - 1] = -1
    consumed = sum(1 for k in spec if k >= 0 and not (new_axis >> k) & 1)
    ranges: list[range] = []
    out_shape: list[int] = []
    dim = 0
    for k in spec:
        if k == -1:  # the ellipsis: whole dimensions
            for _ in range(len(shape) - consumed):
                ranges.append(range(shape[dim]))
                out_shape.append(shape[dim])
                dim += 1
            continue
        if (new_axis >> k) & 1:
            out_shape.append(1)
            continue
        size = shape[dim]
        if (shrink >> k) & 1:
            b = begin[k] + size if begin[k] < 0 else begin[k]
            if not 0 <= b < size:
                raise NotSupportedError(f"shrink index {begin[k]} out of range for dimension {size}")
            ranges.append(range(b, b + 1))
        else:
            if steps[k] == 0:
                raise NotSupportedError("stride 0")
            e = begin[k] + end[k] if offset else end[k]
            r = slice(None if (bmask >> k) & 1 else begin[k], None if (emask >> k) & 1 else e, steps[k])
            ranges.append(range(*r.indices(size)))
            out_shape.append(len(ranges[-1]))
        dim += 1
    y = _slice(ctx, ctx.operand(0), shape, ranges)
    return reshape_to(ctx, y, out_shape, [len(r) for r in ranges])


def slice_op(ctx: MappingContext) -> Any:
    """SLICE(begin, size) where size -1 means to the end."""
    shape = ctx.shape(0)
    begin, size = [int(v) for v in ctx.const(1)], [int(v) for v in ctx.const(2)]
    ranges = [range(b, d if s == -1 else b + s) for b, s, d in zip(begin, size, shape, strict=True)]
    return _slice(ctx, ctx.operand(0), shape, ranges)


def squeeze_like(ctx: MappingContext) -> Any:
    """SQUEEZE / EXPAND_DIMS: a reshape to the output tensor's static shape."""
    return ctx.emit("reshape", ctx.operand(0), list(ctx.out().shape))


# --------------------------------------------------------------------------------------------------- resize


def _resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TFLite's resize scale, in float32: (in - 1) / (out - 1) with align_corners, else in / out."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _resize_coords(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """TFLite's bilinear source coordinates per output index, computed in float32 as its kernels do."""
    scale = _resize_scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    return (o + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else o * scale


def _gather_axis(ctx: MappingContext, x: Any, idx: np.ndarray, axis: int) -> Any:
    return ctx.emit("gather", x, ctx.constant(idx.astype(np.int32)), axis=axis)


def resize_bilinear(ctx: MappingContext) -> Any:
    """RESIZE_BILINEAR.  half_pixel_centers (without align_corners) is exactly WebNN's linear resample2d
    (half-pixel, edge-clamped); align_corners and the legacy asymmetric mode sample other coordinates, so
    they become, per axis, two gathers of the neighbouring rows blended by constant weights."""
    o = ctx.options
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    if align and half:
        raise NotSupportedError("align_corners together with half_pixel_centers")
    n, h, w, c = ctx.shape(0)
    _, oh, ow, _ = ctx.out().shape
    x = ctx.operand(0)
    if half:
        return ctx.emit("resample2d", x, mode="linear", sizes=[oh, ow], axes=[1, 2])
    for axis, (size, out) in ((1, (h, oh)), (2, (w, ow))):
        coord = _resize_coords(size, out, align, half)
        lo = np.floor(coord).astype(np.int64)
        hi = np.minimum(np.ceil(coord).astype(np.int64), size - 1)
        t = coord - lo.astype(np.float32)
        if size == out and not t.any() and (lo == np.arange(out)).all():
            continue
        x0 = _gather_axis(ctx, x, lo, axis)
        if not t.any():
            x = x0
            continue
        shape = [1, 1, 1, 1]
        shape[axis] = out
        x1 = _gather_axis(ctx, x, hi, axis)
        # x0 + (x1 - x0) * t: the blend TFLite's reference kernel computes, weights as float32 constants
        diff = ctx.emit("sub", x1, x0)
        x = ctx.emit("add", x0, ctx.emit("mul", diff, ctx.constant(t.reshape(shape))))
    return x if x is not ctx.operand(0) else ctx.emit("identity", x)


def resize_nearest_neighbor(ctx: MappingContext) -> Any:
    """RESIZE_NEAREST_NEIGHBOR: TFLite's source indices as one gather per axis.

    Reference GetNearestNeighbor: align_corners rounds half away from zero, half_pixel_centers offsets by 0.5.
    WebNN's nearest-neighbor mode picks other indices, so it is not used."""
    o = ctx.options
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    n, h, w, c = ctx.shape(0)
    _, oh, ow, _ = ctx.out().shape
    x = ctx.operand(0)
    for axis, (size, out) in ((1, (h, oh)), (2, (w, ow))):
        coord = _resize_coords(size, out, align, False) if not half else \
            (np.arange(out, dtype=np.float32) + np.float32(0.5)) * _resize_scale(size, out, align)
        idx = np.floor(coord + np.float32(0.5)) if align else np.floor(coord)
        idx = np.clip(idx.astype(np.int64), 0, size - 1)
        if size != out or (idx != np.arange(out)).any():
            x = _gather_axis(ctx, x, idx, axis)
    return x if x is not ctx.operand(0) else ctx.emit("identity", x)

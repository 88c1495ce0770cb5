"""The C forms of reference kernels: what py_core/compiler/plan.py lowers into a compiled plan's instruction words
(py_core/kernels/native/webnn_plan.c), registered by operator here as the traits are beside each family's kernels.

A form takes a float32 node's options, operand shapes (None for an absent operand) and output shape and returns
the instructions computing it, or None (the node stays a Python step).  Buffers are named symbolically (`Buf`):
an operand, the output, or a constant array the form made; the lowering turns them into address-table indices
and checks every count.  Each form computes what its reference kernel computes with the C kernels loaded
(the same C functions), so a plan's results equal the step-by-step executor's up to the order of float sums
in products (tests/core/test_compiler_plan.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from py_core.kernels import native, traits

Shape = tuple[int, ...]

# opcodes and binary kinds of webnn_plan.c
SGEMM, SGEMM_PACKED, CONV_NCHW, IM2COL_NHWC, DW_NHWC, DW_NCHW, BINARY, ACT, SIGMOID, ERF, LAYER_NORM, SOFTMAX, \
    COPY, TRANSPOSE, GATHER, SCATTER, FILL, MAX_POOL, RESAMPLE = range(1, 20)
BINARY_KINDS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}


@dataclass(frozen=True)
class Buf:
    """A buffer argument: kind "in" (operand `key`), "out" (the node's output), "const" (the array `key`),
    "cols" / "work" (scratch of `key` floats, shared by every instruction: contents die with the instruction)."""

    kind: str
    key: Any = None


@dataclass(frozen=True)
class F32:
    """A float argument (a float32's bits in a word)."""

    value: float


Arg = int | Buf | F32 | None
OUT = Buf("out")


@dataclass
class CForm:
    """A node's instructions; `in_place`: the output may take a dying same-sized input's buffer (element-wise);
    `alias`: the output is operand `alias`'s bytes seen in another shape (no instruction)."""

    instrs: list[tuple[int, tuple[Arg, ...]]] = field(default_factory=list)
    in_place: bool = False
    alias: str | None = None


Form = Callable[[Mapping[str, Any], Mapping[str, Shape | None], Shape], CForm | None]
FORMS: dict[str, Form] = {}


def period(shape: Shape, out: Shape) -> int | None:
    """How often an operand of `shape` repeats in an output of `out` when broadcast: its size if its shape
    (leading ones dropped) is a trailing suffix of `out`, 1 for a single element; None otherwise."""
    size = math.prod(shape)
    if size == 1:
        return 1
    trimmed = list(shape)
    while trimmed and trimmed[0] == 1:
        trimmed.pop(0)
    if tuple(out[len(out) - len(trimmed):]) == tuple(trimmed):
        return size
    return None


def _binary(kind: int, a_name: str = "a", b_name: str = "b") -> Form:
    """webnn_plan.c's binary op `kind` over operands a_name and b_name, each broadcast as a trailing suffix."""
    def form(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
        a, b = shapes[a_name], shapes[b_name]
        count = math.prod(out)
        if a is None or b is None or count == 0:
            return None
        pa, pb = period(a, out), period(b, out)
        if pa is None or pb is None or count not in (pa, pb):
            return None
        return CForm([(BINARY, (kind, OUT, Buf("in", a_name), Buf("in", b_name), count, pa, pb))], in_place=True)

    return form


for _op, _fn in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)):
    FORMS[_op] = _binary(BINARY_KINDS[_fn])
PRELU = 4  # webnn_plan.c's BIN_PRELU
# input < 0 ? input * slope : input, as the reference's np.where (the slope broadcast like a binary's)
FORMS["prelu"] = _binary(PRELU, "input", "slope")


def _activation(op: str) -> Form:
    def form(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
        act, lo, hi = traits(op).native_act(options)  # type: ignore[misc]
        return CForm([(ACT, (Buf("in", "input"), OUT, math.prod(out), act, F32(lo), F32(hi)))], in_place=True)

    return form


for _op in ("relu", "clamp", "hardSwish"):
    FORMS[_op] = _activation(_op)


def _sigmoid(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    return CForm([(SIGMOID, (Buf("in", "input"), OUT, math.prod(out)))], in_place=True)


def _erf(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    return CForm([(ERF, (Buf("in", "input"), OUT, math.prod(out)))])


def _softmax(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    if not out or options["axis"] not in (-1, len(out) - 1) or math.prod(out) == 0:
        return None
    return CForm([(SOFTMAX, (Buf("in", "input"), OUT, math.prod(out) // out[-1], out[-1]))])


def _layer_norm(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    rank, axes = len(out), list(options["axes"])
    k = len(axes)
    n = math.prod(out[rank - k:])
    if not k or axes != list(range(rank - k, rank)) or n == 0:
        return None
    for name in ("scale", "bias"):
        shape = shapes.get(name)
        if shape is not None and math.prod(shape) != n:
            return None
    scale = Buf("in", "scale") if shapes.get("scale") is not None else None
    bias = Buf("in", "bias") if shapes.get("bias") is not None else None
    return CForm([(LAYER_NORM, (Buf("in", "input"), OUT, math.prod(out) // n, n, scale, bias,
                                F32(float(options["epsilon"]))))])


def _reshape(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    return CForm(alias="input")


def _matmul(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    """[..., M, K] x [..., K, N] (batch dimensions equal, or one side without them / of one matrix), as the C
    product per matrix (py_core.kernels.matrix.matmul's C path, without its small-product NumPy branch)."""
    a, b = shapes["a"], shapes["b"]
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    m, k, n = a[-2], a[-1], b[-1]
    if 0 in (m, k, n):
        return None
    batch = math.prod(out[:-2])
    ab, bb = math.prod(a[:-2]), math.prod(b[:-2])
    if ab not in (1, batch) or bb not in (1, batch) or (ab == bb == batch and a[:-2] != b[:-2]):
        return None
    work = Buf("work", native.sgemm_work_size(n, k)) if m >= 2 and n >= native.PANEL else None
    return CForm([(SGEMM, (batch, m, n, k, Buf("in", "a"), m * k if ab > 1 else 0, k, 1, Buf("in", "b"),
                           k * n if bb > 1 else 0, n, OUT, m * n, n, None, native.BIAS_NONE, native.ACT_NONE,
                           F32(0.0), F32(0.0), work))])


def _average_pool(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    """Global average pooling as a product with a ones vector, then a division: what pooling.py's C path does."""
    x = shapes["input"]
    if x is None or len(x) != 4 or any(options["padding"]):
        return None
    nhwc = options["layout"] == "nhwc"
    n, h, w, c = x if nhwc else (x[0], x[2], x[3], x[1])
    if tuple(options["windowDimensions"]) != (h, w) or tuple(options["outputSizes"]) != (1, 1) or 0 in (n, c, h * w):
        return None
    hw = h * w
    if nhwc:  # per image: ones[1, HW] x x[HW, C]
        ones = np.ones(hw, np.float32)
        prod = (SGEMM, (n, 1, c, hw, Buf("const", ones), 0, hw, 1, Buf("in", "input"), hw * c, c, OUT, c, c, None,
                        native.BIAS_NONE, native.ACT_NONE, F32(0.0), F32(0.0), None))
    else:  # x[N*C, HW] x ones[HW, 1]
        ones = np.ones(hw, np.float32)
        prod = (SGEMM, (1, n * c, 1, hw, Buf("in", "input"), 0, hw, 1, Buf("const", ones), 0, 1, OUT, 0, 1, None,
                        native.BIAS_NONE, native.ACT_NONE, F32(0.0), F32(0.0), None))
    scale = np.full(1, hw, np.float32)
    return CForm([prod, (BINARY, (BINARY_KINDS[np.divide], OUT, OUT, Buf("const", scale), n * c, n * c, 1))])


def _transpose(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    """A copy in output order (Python's transpose is a view; a C step reading it would copy it anyway)."""
    x, perm = shapes["input"], list(options["permutation"])
    if x is None or len(x) > 6 or sorted(perm) != list(range(len(x))) or math.prod(out) == 0:
        return None
    strides = [math.prod(x[i + 1:]) for i in range(len(x))]
    dims = [1] * (6 - len(x)) + [x[p] for p in perm]
    steps = [0] * (6 - len(x)) + [strides[p] for p in perm]
    return CForm([(TRANSPOSE, (Buf("in", "input"), OUT, *dims, *steps))])


def _max_pool(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    """Any 2-D max pooling (padding, strides, dilations, output sizes) in the input's own layout: the reference's
    result exactly (a max rounds nothing), taps outside the input skipped as the reference skips them."""
    x = shapes["input"]
    if x is None or len(x) != 4 or math.prod(out) == 0 or math.prod(x) == 0:
        return None
    nhwc = options["layout"] == "nhwc"
    n, h, w, c = x if nhwc else (x[0], x[2], x[3], x[1])
    (kh, kw), (oh, ow) = options["windowDimensions"], options["outputSizes"]
    top, _, left, _ = options["padding"]
    strides, dilations = options["strides"], options["dilations"]
    if (kh, kw, oh, ow) == (h, w, 1, 1) and not any(options["padding"]):  # global: the reference's NumPy max
        return None
    if not native.conv_fits((h, w), (kh, kw), strides, dilations, (top, left), (oh, ow)):
        return None
    outer, inner = (n, c) if nhwc else (n * c, 1)
    return CForm([(MAX_POOL, (outer, h, w, inner, Buf("in", "input"), kh, kw, *strides, *dilations, top, left, oh,
                              ow, OUT))])


def _resample(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], out: Shape) -> CForm | None:
    """Bilinear resampling of two adjacent axes: the C kernel the reference calls, on the same tables."""
    from py_core.kernels.pooling import linear_tables

    x = shapes["input"]
    h_axis, w_axis = options["axes"]
    sizes = options["sizes"]
    if (x is None or options["mode"] != "linear" or w_axis != h_axis + 1 or x[h_axis] == sizes[0]
            or x[w_axis] == sizes[1] or not native.resample_fits(x[h_axis:w_axis + 1]) or math.prod(out) == 0):
        return None
    rows, cols = linear_tables(x[h_axis], sizes[0]), linear_tables(x[w_axis], sizes[1])
    return CForm([(RESAMPLE, (math.prod(x[:h_axis]), x[h_axis], x[w_axis], math.prod(x[w_axis + 1:]),
                              Buf("in", "input"), sizes[0], sizes[1], *(Buf("const", a) for a in rows),
                              *(Buf("const", a) for a in cols), OUT))])


FORMS.update({"transpose": _transpose, "sigmoid": _sigmoid, "erf": _erf, "softmax": _softmax,
              "layerNormalization": _layer_norm, "reshape": _reshape, "matmul": _matmul,
              "averagePool2d": _average_pool, "maxPool2d": _max_pool, "resample2d": _resample})


def _split(options: Mapping[str, Any], shapes: Mapping[str, Shape | None], outs: list[Shape]) -> CForm | None:
    """Each output a strided copy of its slab along the axis (the reference kernel copies too)."""
    x = shapes["input"]
    if x is None or len(x) > 6 or not outs:
        return None
    axis = options["axis"]
    axis = axis + len(x) if axis < 0 else axis
    if not 0 <= axis < len(x) or sum(o[axis] for o in outs) != x[axis]:
        return None
    instrs = _slab_copies(GATHER, x, outs, axis, lambda i: (Buf("in", "input"), Buf("out", i)))
    return None if instrs is None else CForm(instrs)


def _slab_copies(op: int, whole: Shape, slabs: Sequence[Shape], axis: int,
                 ends: Callable[[int], tuple[Buf, Buf]]) -> list[tuple[int, tuple[Arg, ...]]] | None:
    """One strided copy (GATHER: whole -> slab, SCATTER: slab -> whole) per non-empty slab of `whole` along
    `axis`, slab i's buffers being ends(i) = (source, destination); None unless the slabs tile `whole`."""
    strides = [math.prod(whole[i + 1:]) for i in range(len(whole))]
    pad = 6 - len(whole)
    instrs: list[tuple[int, tuple[Arg, ...]]] = []
    start = 0
    for i, slab in enumerate(slabs):
        if len(slab) != len(whole) or any(slab[d] != whole[d] for d in range(len(whole)) if d != axis):
            return None
        if math.prod(slab):
            instrs.append((op, (*ends(i), start * strides[axis], *([1] * pad), *slab, *([0] * pad), *strides)))
        start += slab[axis]
    return instrs if start == whole[axis] else None


def _concat(options: Mapping[str, Any], shapes: Mapping[str, Any], out: Shape) -> CForm | None:
    """Each input copied into its slab of the output."""
    parts, axis = shapes["inputs"], options["axis"]
    if len(out) > 6 or not 0 <= axis < len(out) or math.prod(out) == 0:
        return None
    instrs = _slab_copies(SCATTER, out, parts, axis, lambda i: (Buf("in", ("inputs", i)), OUT))
    return None if instrs is None else CForm(instrs)


def _pad(options: Mapping[str, Any], shapes: Mapping[str, Any], out: Shape) -> CForm | None:
    """Constant padding: the value everywhere, then the input into its place."""
    x = shapes["input"]
    begin, end = list(options["beginningPadding"]), list(options["endingPadding"])
    if (options["mode"] != "constant" or x is None or not x or len(x) > 6 or len(begin) != len(x)
            or len(end) != len(x) or any(v < 0 for v in begin + end) or math.prod(out) == 0
            or tuple(d + b + e for d, b, e in zip(x, begin, end, strict=True)) != tuple(out)):
        return None
    strides = [math.prod(out[i + 1:]) for i in range(len(out))]
    offset = sum(b * s for b, s in zip(begin, strides, strict=True))
    pad = 6 - len(x)
    instrs: list[tuple[int, tuple[Arg, ...]]] = [(FILL, (OUT, math.prod(out), F32(float(options["value"]))))]
    if math.prod(x):
        instrs.append((SCATTER, (Buf("in", "input"), OUT, offset, *([1] * pad), *x, *([0] * pad), *strides)))
    return CForm(instrs)


FORMS.update({"concat": _concat, "pad": _pad})
MultiForm = Callable[[Mapping[str, Any], Mapping[str, Shape | None], list[Shape]], CForm | None]
MULTI_FORMS: dict[str, MultiForm] = {"split": _split}


def multi_form_of(op: str) -> MultiForm | None:
    """The C form of a multi-output operator, or None."""
    return MULTI_FORMS.get(op)


def form_of(op: str) -> Form | None:
    """The C form registered for `op`, or None."""
    return FORMS.get(op)

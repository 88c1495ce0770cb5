"""Compiled plan: each maximal run of consecutive steps whose kernel has a C form runs as ONE call into the C
kernels (`wk_run_plan` in py_core/kernels/native/webnn_plan.c): Python plans, C runs.

Per step, the Python executor spends 10-30 us in wasm on the call itself (keyword dict, kernel wrapper, checks,
ctypes marshalling, a new output array), the rest of which a plan pays once at build: here every step with a C
form is lowered into instruction words (int64) whose buffer arguments index one address table.  The plan owns
its intermediates: float32 arrays allocated once at build and reused once their values (and every view of them)
are dead, an element-wise step writing into a dying input's buffer.  What the table cannot fix at build is
written before each call: the graph's inputs, values computed by Python steps, and the graph's outputs, which
are new arrays every run (a caller owns its results: no later run overwrites them; graph inputs are never
written).  Steps without a C form stay Python steps between the C segments.

Memory safety: the words are the only thing C trusts.  Every count is derived from the graph's shapes and
checked here (every integer word below 2^62; conv geometry through the kernel's own `conv_fits`, the product's
operands through the same shape rules as the ctypes wrappers), and every buffer the table names holds at least
the floats its value has: the plan's own by construction, the ones written per run checked for float32, C order
and shape as they are written (a strided or other-typed array is copied first).

What lowers: the pre-packed kernels (compiler/kernels.py: every conv2d mode in both layouts, packed gemm and
matmul, with their fused C activation) and the operators with a C form (py_core/kernels/cforms.py: float32
add/sub/mul/div of equal or trailing-broadcast shapes, relu/clamp/hardSwish/sigmoid, erf, softmax over the last
axis, layerNormalization over trailing axes, batched matmul, global average pooling, reshape as an alias).

Switch: PYODIDE_WEBNN_PLAN=0 (worker URL ?plan=0), or CompileOptions(plan=False): every step runs in Python.
"""

from __future__ import annotations

import ctypes
import math
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from py_core.compiler.ir import Node, Program
from py_core.compiler.kernels import PackedConv2d, PackedMatmul
from py_core.kernels import cforms as cf
from py_core.kernels import native, traits
from py_core.kernels.activation import NATIVE_MIN
from py_core.kernels.cforms import F32, OUT, Arg, Buf, CForm, form_of

ENV_SWITCH = "PYODIDE_WEBNN_PLAN"
SMALL = NATIVE_MIN  # elements: a segment of one step below this stays Python, as the activations keep NumPy
F32_DTYPE = np.dtype(np.float32)


def env_off(name: str) -> bool:
    """Whether the environment switch `name` is 0/off/false/no (unset or anything else: on)."""
    return os.environ.get(name, "").strip().lower() in ("0", "off", "false", "no")


def plan_wanted() -> bool:
    """Whether compiled plans are on: yes unless PYODIDE_WEBNN_PLAN is 0/off/false/no."""
    return not env_off(ENV_SWITCH)


class PlanError(ValueError):
    """A value the plan would write into its words failed its check (a lowering bug: the step stays Python)."""


# ------------------------------------------------------------------------------------------- lowering a node


def _single_input(node: Node) -> int | None:
    refs = [r for r in node.operands.values() if r is not None]
    return refs[0] if len(refs) == 1 and isinstance(refs[0], int) else None


def _posts(epilogue: Sequence[Any], used: int, shape: tuple[int, ...]) -> list[tuple[int, tuple[Arg, ...]]] | None:
    """The epilogue steps after the fused one as in-place C steps on the output, or None if one has no C form."""
    count = math.prod(shape)
    out: list[tuple[int, tuple[Arg, ...]]] = []
    for e in epilogue[used:]:
        if e.native is not None:
            act, lo, hi = e.native
            out.append((cf.ACT, (OUT, OUT, count, act, F32(lo), F32(hi))))
        elif e.ufunc is None and (unary := _unary_in_place(e.op, shape)) is not None:  # e.g. sigmoid
            out.append(unary)
        elif e.ufunc in cf.BINARY_KINDS and e.constant is not None and e.constant.dtype == F32_DTYPE:
            c = e.constant
            period = cf.period(tuple(c.shape), shape)
            if period is None or c.ndim > len(shape):
                return None
            out.append((cf.BINARY, (cf.BINARY_KINDS[e.ufunc], OUT, OUT, Buf("const", c), count, count, period)))
        else:
            return None
    return out


def _unary_in_place(op: str, shape: tuple[int, ...]) -> tuple[int, tuple[Arg, ...]] | None:
    """An option-free unary operator's C form run in place on the output (an epilogue step), or None."""
    form = form_of(op)
    try:
        lowered = None if form is None else form({}, {"input": shape}, shape)
    except (KeyError, TypeError, ValueError):
        return None
    if lowered is None or not lowered.in_place or len(lowered.instrs) != 1:
        return None
    code, args = lowered.instrs[0]
    return code, tuple(OUT if a == Buf("in", "input") else a for a in args)


def _lower_conv(k: PackedConv2d, x: tuple[int, ...]) -> CForm | None:
    """A packed conv2d as what PackedConv2d._native calls, word for word."""
    if not k.native_fits or k.reference == "always" or len(x) != 4:
        return None
    posts = _posts(k.epilogue, len(k.posts) - len(k.native_posts), tuple(k.out_shape))
    if posts is None:
        return None
    act, lo, hi = k.native_act
    fa = (act, F32(lo), F32(hi))
    bias = None if k.bias_vec is None else Buf("const", k.bias_vec)
    per_col = native.BIAS_NONE if bias is None else native.BIAS_PER_COL  # (C reads a bias only with a mode)
    per_row = native.BIAS_NONE if bias is None else native.BIAS_PER_ROW
    top, left = k.padding[0], k.padding[2]
    (sh, sw), (dh, dw) = k.strides, k.dilations
    xin = Buf("in", "input")
    instrs: list[tuple[int, tuple[Arg, ...]]] = []
    if k.layout == "nhwc":
        n, h, w, c = x
        _, oh, ow, o = k.out_shape
        if k.mode == "depthwise":
            instrs.append((cf.DW_NHWC, (n, h, w, c, xin, k.kh, k.kw, Buf("const", k.w), sh, sw, dh, dw, top, left,
                                     oh, ow, OUT, bias, *fa)))
        else:
            if k.mode == "gemm1x1":
                a, m, kk = xin, n * h * w, c
            else:
                m, kk = n * oh * ow, k.kh * k.kw * c
                a = Buf("cols", m * kk)
                instrs.append((cf.IM2COL_NHWC, (n, h, w, c, xin, k.kh, k.kw, sh, sw, dh, dw, top, left, oh, ow, a)))
            if k.w_packed is not None:
                if k.w_packed.k != kk or k.w_packed.n != o:
                    return None
                instrs.append((cf.SGEMM_PACKED, (m, o, kk, a, kk, 1, Buf("const", k.w_packed.data), OUT, o, bias,
                                              per_col, *fa)))
            else:
                wt = k.w
                if wt.shape != (kk, o):
                    return None
                work = Buf("work", native.sgemm_work_size(o, kk)) if m >= 2 and o >= native.PANEL else None
                instrs.append((cf.SGEMM, (1, m, o, kk, a, 0, kk, 1, Buf("const", wt), 0, o, OUT, 0, o, bias,
                                       per_col, *fa, work)))
    else:
        n, c, h, w = x
        _, o, oh, ow = k.out_shape
        if k.mode == "depthwise":
            taps = k.taps_chw
            if taps is None or taps.shape != (c, k.kh, k.kw):
                return None
            size = native.depthwise_work_size(k.kh, k.kw, k.strides, k.dilations, oh, ow)
            instrs.append((cf.DW_NCHW, (n, c, h, w, xin, k.kh, k.kw, Buf("const", taps), sh, sw, dh, dw, top, left,
                                     oh, ow, OUT, bias, *fa, Buf("work", size) if size else None)))
        elif k.mode == "gemm1x1":
            wt = k.w
            if wt.shape != (o, c):
                return None
            work = Buf("work", native.sgemm_work_size(oh * ow, c)) if o >= 2 and oh * ow >= native.PANEL else None
            instrs.append((cf.SGEMM, (n, o, oh * ow, c, Buf("const", wt), 0, c, 1, xin, c * h * w, h * w, OUT,
                                   o * oh * ow, oh * ow, bias, per_row, *fa, work)))
        else:
            wt = k.w
            if wt.shape != (o, c * k.kh * k.kw):
                return None
            size = native.conv_nchw_work_size(c, h, w, k.kh, k.kw, (sh, sw), (dh, dw), oh, ow)
            instrs.append((cf.CONV_NCHW, (n, c, h, w, xin, k.kh, k.kw, sh, sw, dh, dw, top, left, oh, ow,
                                       Buf("const", wt), o, OUT, bias, *fa, Buf("work", size))))
    return CForm(instrs + posts)


def _lower_matmul(k: PackedMatmul, x: tuple[int, ...], out: tuple[int, ...]) -> CForm | None:
    """A packed gemm/matmul as what PackedMatmul.__call__ calls with the C kernels, word for word."""
    if k.a_transpose or not k.native_fused or not x:
        return None
    posts = _posts(k.epilogue, len(k.posts) - len(k.native_posts), out)
    if posts is None:
        return None
    kk, n = x[-1], k.n
    m = math.prod(x) // kk if kk else 0
    if m == 0 or kk == 0 or n == 0 or math.prod(out) != m * n:
        return None
    act, lo, hi = k.native_act
    bias = None if k.bias_vec is None else Buf("const", k.bias_vec)
    per_col = native.BIAS_NONE if bias is None else native.BIAS_PER_COL
    if k.packed is not None:
        if k.packed.k != kk:
            return None
        instr = (cf.SGEMM_PACKED, (m, n, kk, Buf("in", "a"), kk, 1, Buf("const", k.packed.data), OUT, n, bias,
                                per_col, act, F32(lo), F32(hi)))
    else:
        b = k.b
        if b.shape != (kk, n) or not native.gemm_ok(np.empty((1, kk), F32_DTYPE), b):
            return None
        work = Buf("work", native.sgemm_work_size(n, kk)) if m >= 2 and n >= native.PANEL else None
        instr = (cf.SGEMM, (1, m, n, kk, Buf("in", "a"), 0, kk, 1, Buf("const", b), 0, n, OUT, 0, n, bias,
                         per_col, act, F32(lo), F32(hi), work))
    return CForm([instr, *posts])


def lower_node(node: Node, prog: Program) -> CForm | None:
    """The node's C form, or None (it stays a Python step): float32 single-output nodes only."""
    if any(prog.dtype(o) != F32_DTYPE for o in node.outputs) or not node.outputs:
        return None
    if len(node.outputs) > 1:  # a multi-output reference kernel (split)
        multi = cf.multi_form_of(node.op)
        if multi is None or node.kernel is not None or node.epilogue:
            return None
        x = _single_input(node)
        try:
            return None if x is None else multi(node.options, {"input": prog.shape(x)},
                                                [prog.shape(o) for o in node.outputs])
        except (KeyError, TypeError, ValueError):
            return None
    for ref in node.operands.values():
        for r in (ref if isinstance(ref, list) else [ref]):
            if r is not None and prog.dtype(r) != F32_DTYPE:
                return None
    out = prog.shape(node.outputs[0])
    if isinstance(node.kernel, PackedConv2d):
        x = _single_input(node)
        if x is None or "input" not in node.operands:
            return None
        return _lower_conv(node.kernel, prog.shape(x))
    if isinstance(node.kernel, PackedMatmul):
        x = _single_input(node)
        if x is None or "a" not in node.operands:
            return None
        return _lower_matmul(node.kernel, prog.shape(x), out)
    # the reference kernel; the memory plan's in-place version (same operands, options dropped: a form that needs
    # them fails below and the step stays Python); a reference kernel bind_epilogues wrapped with its epilogue
    options, epilogue = node.options, []
    if node.unbound is not None:
        options, epilogue = node.unbound
    elif node.epilogue or not (node.kernel is None or node.variant == "in-place"):
        return None
    form = form_of(node.op)
    if form is None:
        return None
    shapes: dict[str, Any] = {name: (None if ref is None else [prog.shape(r) for r in ref] if isinstance(ref, list)
                                     else prog.shape(ref)) for name, ref in node.operands.items()}
    try:
        lowered = form(options, shapes, out)
    except (KeyError, TypeError, ValueError):  # an option the form does not know: keep the Python step
        return None
    if lowered is None or not epilogue:
        return lowered
    posts = _posts(epilogue, 0, out)
    if posts is None or lowered.alias is not None:
        return None
    return CForm(lowered.instrs + posts)


# ------------------------------------------------------------------------------------------- the plan


def _f32_word(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


# where a product instruction's bias buffer and bias mode sit in its body (words after opcode and length)
_BIAS_AT = {cf.SGEMM: (14, 15), cf.SGEMM_PACKED: (9, 10)}


def _check_bias(code: int, body: Sequence[int]) -> None:
    """A product reads a bias only with a bias mode and a buffer both given (the wrappers' rule)."""
    if code in _BIAS_AT:
        b, mode = _BIAS_AT[code]
        if (body[b] < 0) != (body[mode] == native.BIAS_NONE) or body[mode] not in (
                native.BIAS_NONE, native.BIAS_PER_ROW, native.BIAS_PER_COL):
            raise PlanError("plan: a product's bias and bias mode disagree")


@dataclass
class Segment:
    """One run of consecutive C steps: words, and what each run writes into the table and publishes."""

    first: int  # step indices [first, last]
    last: int
    words: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    words_at: int = 0  # the words' address
    # (slot, table index, shape) of values made before the segment that it reads: written per run, checked
    reads: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    # (slot, table index, shape) of graph outputs it computes: a new array per run
    fresh: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    # (slot, array) of values it computes in the plan's buffers that Python steps read later
    publish: list[tuple[int, np.ndarray]] = field(default_factory=list)
    # (slot, source slot, shape, table index) of reshapes of arrays the plan does not own (inputs, constants,
    # Python results, graph outputs): made per run before the call, in order
    views: list[tuple[int, int, tuple[int, ...], int]] = field(default_factory=list)
    release: tuple[int, ...] = ()
    ops: list[str] = field(default_factory=list)


@dataclass
class DirectRun:
    """A graph that is one C segment, run with no Python at all: the worker writes each input's bytes at its
    address, calls `fn` (wk_run_plan: a function-table index in wasm, `Module.wasmTable.get(fn)`, arguments
    (words, BigInt(count), table)) and copies each output's bytes out at once; it returns 0 (BigInt in JS), else
    the plan refused an instruction (never, by construction).  The input and output buffers are this object's
    own, reused by every call: a caller must copy outputs out before the next call, and must not call it from
    two threads.  Hold the object (and its executable) as long as the addresses are used."""

    fn: int
    words: int
    count: int
    table: int
    inputs: dict[str, tuple[int, int]]  # name -> (address, bytes)
    outputs: dict[str, tuple[int, int]]
    keep: list[np.ndarray] = field(default_factory=list)
    call: Callable[..., int] | None = None
    # name -> the indices of the table's entries that hold that input's (output's) address: a caller may write
    # the address of a buffer of its own there instead of copying (in place: the worker points them at its tensors'
    # arrays), as long as no output's buffer overlaps another's or an input's; `run` points them back at its own
    input_entries: dict[str, tuple[int, ...]] = field(default_factory=dict)
    output_entries: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The same call from Python (tests, CPython): inputs copied in, outputs copied out."""
        table = self.keep[0]
        for side, entries in ((self.inputs, self.input_entries), (self.outputs, self.output_entries)):
            for name, idxs in entries.items():
                table[list(idxs)] = side[name][0]
        arrays = {id(a): a for a in self.keep}
        by_address = {a.__array_interface__["data"][0]: a for a in arrays.values()}
        for name, (at, _) in self.inputs.items():
            np.copyto(by_address[at], np.asarray(inputs[name], F32_DTYPE).reshape(by_address[at].shape))
        assert self.call is not None
        if self.call(self.words, self.count, self.table):
            raise PlanError("plan: C refused an instruction")
        return {name: by_address[at].copy() for name, (at, _) in self.outputs.items()}


class CompiledPlan:
    """The C segments of an executable, its address table and the arrays the table points into."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.keep: list[np.ndarray] = []  # every array whose address is in the table (held for the plan's life)
        self.addresses: list[int] = []
        self.table = np.zeros(0, np.int64)
        self.table_at = 0  # its address
        self.buffer_bytes = 0  # the plan's own intermediates
        self.copy_out: set[int] = set()  # output slots that may alias the plan's buffers: copied per run
        self.fn: Callable[..., int] | None = None

    def entry(self, arr: np.ndarray | None = None) -> int:
        """A new table entry: fixed at `arr`'s address, or written per run (arr None)."""
        if arr is not None:
            if arr.dtype not in (F32_DTYPE, np.int32) or not arr.flags.c_contiguous:
                raise PlanError("plan: a fixed buffer must be contiguous float32 (or int32: resample's tables)")
            self.keep.append(arr)
            self.addresses.append(arr.__array_interface__["data"][0])
        else:
            self.addresses.append(0)
        return len(self.addresses) - 1

    def direct(self, n_steps: int, input_slots: dict[str, int], output_slots: dict[str, int],
               shapes: dict[int, tuple[int, ...]]) -> DirectRun | None:
        """What a worker needs to run the whole graph with one call and no Python (DirectRun), or None unless the
        plan is one segment holding every step, reading only graph inputs and writing every output.  `shapes`:
        slot -> shape of the graph's inputs and outputs."""
        if len(self.segments) != 1 or self.steps_in_c != n_steps or self.fn is None:
            return None
        seg = self.segments[0]
        fresh = {slot: (idx, shape) for slot, idx, shape in seg.fresh}
        if set(fresh) != set(output_slots.values()) or len(fresh) != len(output_slots):
            return None
        ins = set(input_slots.values())
        if any(slot not in ins for slot, _, _ in seg.reads) or any(src not in ins for _, src, _, _ in seg.views):
            return None
        table = self.table.copy()
        keep: list[np.ndarray] = [table]
        arrays: dict[int, np.ndarray] = {}
        for slot in ins:
            arrays[slot] = np.zeros(shapes[slot], F32_DTYPE)
        for slot, idx, _ in seg.reads:
            table[idx] = arrays[slot].__array_interface__["data"][0]
        for _, src, _shape, idx in seg.views:
            table[idx] = arrays[src].__array_interface__["data"][0]  # a reshape of a contiguous array: same bytes
        for slot, (idx, shape) in fresh.items():
            arrays[slot] = np.zeros(shape, F32_DTYPE)
            table[idx] = arrays[slot].__array_interface__["data"][0]
        keep += list(arrays.values())
        fn = self.fn
        address = ctypes.cast(fn, ctypes.c_void_p).value or 0

        def where(slot: int) -> tuple[int, int]:
            return arrays[slot].__array_interface__["data"][0], int(arrays[slot].nbytes)

        entries: dict[int, list[int]] = {}
        for slot, idx, _ in seg.reads:
            entries.setdefault(slot, []).append(idx)
        for _, src, _shape, idx in seg.views:
            entries.setdefault(src, []).append(idx)
        for slot, (idx, _) in fresh.items():
            entries.setdefault(slot, []).append(idx)
        return DirectRun(address, seg.words_at, int(seg.words.size), table.__array_interface__["data"][0],
                         {name: where(s) for name, s in input_slots.items()},
                         {name: where(s) for name, s in output_slots.items()}, keep + [seg.words], fn,
                         {name: tuple(entries.get(s, ())) for name, s in input_slots.items()},
                         {name: tuple(entries.get(s, ())) for name, s in output_slots.items()})

    @property
    def steps_in_c(self) -> int:
        return sum(s.last - s.first + 1 for s in self.segments)

    def run_segment(self, seg: Segment, vals: list[Any]) -> None:
        """Write the per-run addresses, call C once, hand the values later steps read back to Python."""
        tab = self.table
        hold = []  # contiguous copies, alive until the call returns
        for slot, idx, shape in seg.fresh:
            arr = np.empty(shape, F32_DTYPE)
            vals[slot] = arr
            tab[idx] = arr.__array_interface__["data"][0]
        for slot, src, shape, idx in seg.views:
            arr = vals[slot] = vals[src].reshape(shape)
            if not (arr.dtype == F32_DTYPE and arr.flags.c_contiguous):
                arr = np.ascontiguousarray(arr, dtype=F32_DTYPE)
                hold.append(arr)
            tab[idx] = arr.__array_interface__["data"][0]
        for slot, idx, shape in seg.reads:
            arr = vals[slot]
            if not (type(arr) is np.ndarray and arr.dtype == F32_DTYPE and arr.flags.c_contiguous):
                arr = np.ascontiguousarray(arr, dtype=F32_DTYPE)
                hold.append(arr)
            if arr.shape != shape:
                raise PlanError(f"plan: a value is {list(arr.shape)}, the plan expects {list(shape)}")
            tab[idx] = arr.__array_interface__["data"][0]
        if seg.words_at:
            bad = self.fn(seg.words_at, seg.words.size, self.table_at)  # type: ignore[misc]
            if bad:
                raise PlanError(f"plan: C refused instruction word {bad - 1}")
        for slot, arr in seg.publish:
            vals[slot] = arr
        for slot in seg.release:
            vals[slot] = None


def build_plan(prog: Program, release: Sequence[Sequence[int]], slot: dict[int, int]) -> CompiledPlan | None:
    """Lower the program's C-capable steps into segments (None when no step lowers or the C kernels are off).

    `release[s]`: operand ids whose last reader is node s (the memory plan); `slot`: operand id -> the executor's
    value slot."""
    if not native.available() or native.run_plan_fn() is None:
        return None
    nodes = prog.nodes
    forms: list[CForm | None] = []
    for node in nodes:
        try:
            forms.append(lower_node(node, prog))
        except PlanError:
            forms.append(None)
    # a lone step on a small array gains nothing from the plan (one call either way, and its Python kernel may
    # run NumPy below the C kernels' call cost): it stays Python.  Unless it is the whole graph: then the worker
    # runs it with no Python at all (Executable.direct), which beats NumPy at any size
    for s, form in enumerate(forms if len(nodes) > 1 else ()):
        lone = (s == 0 or forms[s - 1] is None) and (s + 1 == len(forms) or forms[s + 1] is None)
        if form is not None and lone and sum(math.prod(prog.shape(o)) for o in nodes[s].outputs) < SMALL:
            forms[s] = None
    if not any(f is not None for f in forms):
        return None
    outputs = set(prog.outputs.values())
    pinned = set(prog.constants) | set(prog.inputs.values())
    n_nodes = len(nodes)
    # last reader of every value; graph outputs live to the end
    last: dict[int, int] = {}
    for s, node in enumerate(nodes):
        for i in node.input_ids():
            last[i] = s
    for o in outputs:
        last[o] = n_nodes
    # alias groups: a value and every view of it (C reshapes, Python steps that may return views or write in
    # place) share one buffer, which is free only when the whole group is dead
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    group_last: dict[int, int] = {}
    buffer_of: dict[int, list[int]] = {}  # group root -> the pool buffers its values live in

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            group_last[rb] = max(group_last.get(rb, -1), group_last.get(ra, -1), last.get(a, -1), last.get(b, -1))
            if ra in buffer_of:
                buffer_of.setdefault(rb, []).extend(buffer_of.pop(ra))

    for node in nodes:
        for o in node.outputs:
            group_last[find(o)] = max(group_last.get(find(o), -1), last.get(o, -1))

    plan = CompiledPlan()
    pool: list[np.ndarray] = []
    pool_entry: list[int] = []
    free: list[int] = []
    entry_of: dict[int, int] = {}  # operand id -> table index (fixed or per run)
    alias_of: dict[int, int] = {}  # a C reshape's output -> the value whose bytes it is
    dynamic: set[int] = set()  # operand ids whose entry is written per run
    made_by_c: set[int] = set()
    const_entry: dict[int, int] = {}  # id(array) -> table index
    scratch = {"cols": 0, "work": 0}
    scratch_entry = {"cols": plan.entry(), "work": plan.entry()}  # fixed once the sizes are known
    in_pool: set[int] = set()  # values the C steps wrote into a pool buffer

    def const(arr: np.ndarray) -> int:
        key = id(arr)
        if key not in const_entry:
            # int32 stays int32 (resample's source-index tables); anything else is a float32 operand
            a = np.ascontiguousarray(arr, dtype=np.int32 if arr.dtype == np.int32 else F32_DTYPE)
            const_entry[key] = plan.entry(a)
            plan.keep.append(arr)  # id() stays unique while the original lives
        return const_entry[key]

    def value_entry(oid: int) -> int:
        """The table entry of a value a C step reads."""
        if oid in entry_of:
            return entry_of[oid]
        if oid in prog.constants:
            e = const(prog.constants[oid])
        else:  # a graph input or a Python step's result: written per run
            e = plan.entry()
            dynamic.add(oid)
        entry_of[oid] = e
        return e

    def alloc(oid: int, floats: int) -> int:
        best = None
        for b in free:
            if pool[b].size >= floats and (best is None or pool[b].size < pool[best].size):
                best = b
        if best is None:
            pool.append(np.empty(max(floats, 1), F32_DTYPE))
            pool_entry.append(plan.entry(pool[-1]))
            best = len(pool) - 1
        else:
            free.remove(best)
        buffer_of.setdefault(find(oid), []).append(best)
        return best

    def free_dead(s: int, oids: Sequence[int]) -> None:
        for i in oids:
            r = find(i)
            if r in buffer_of and group_last.get(r, -1) <= s:
                free.extend(buffer_of.pop(r))

    seg: Segment | None = None
    words: list[int] = []
    for s, node in enumerate(nodes):
        form = forms[s]
        if form is None:
            if seg is not None:
                seg.words = np.array(words, np.int64)
                plan.segments.append(seg)
                seg, words = None, []
            # a Python step's result may be a view of (or written into) what it read
            fresh = (node.fresh or (node.kernel is None and traits(node.op).fresh)) and node.variant != "in-place"
            if not fresh:
                for o in node.outputs:
                    for i in node.input_ids():
                        union(o, i)
            free_dead(s, node.input_ids() + list(node.outputs))
            continue
        if seg is None:
            seg = Segment(first=s, last=s)
        seg.last = s
        seg.ops.append(node.op)
        seg.release = seg.release + tuple(slot[i] for i in release[s])
        out = node.outputs[0]
        made_by_c.add(out)
        out_shape = prog.shape(out)
        count = math.prod(out_shape)
        if form.alias is not None:
            src = node.operands[form.alias]
            assert isinstance(src, int)
            if math.prod(prog.shape(src)) != count:
                raise PlanError("plan: an alias changes the element count")
            if out in outputs:  # a caller's result is its own array: copy
                e_out = plan.entry()
                entry_of[out] = e_out
                seg.fresh.append((slot[out], e_out, out_shape))
                words += [cf.COPY, 5, value_entry(src), e_out, count]
            elif src in in_pool:  # the same plan buffer
                entry_of[out] = entry_of[src]
                in_pool.add(out)
                union(out, src)
            else:  # a view Python makes per run of an array the plan does not own
                root = alias_of.get(src, src)
                e_out = plan.entry()
                entry_of[out], alias_of[out] = e_out, root
                dynamic.add(out)
                seg.views.append((slot[out], slot[root], out_shape, e_out))
                union(out, src)
            free_dead(s, node.input_ids() + [out])
            continue
        # each output's buffer: a new array per run for a graph output, else the plan's own
        e_outs = []
        for extra in node.outputs[1:]:  # (multi-output forms are never in place)
            made_by_c.add(extra)
            shape = prog.shape(extra)
            if extra in outputs:
                e = plan.entry()
                seg.fresh.append((slot[extra], e, shape))
            else:
                e = pool_entry[alloc(extra, math.prod(shape))]
                in_pool.add(extra)
            entry_of[extra] = e
            e_outs.append(e)
        if out in outputs:
            e_out = plan.entry()
            seg.fresh.append((slot[out], e_out, out_shape))
        else:
            reuse = None
            if form.in_place and len(node.outputs) == 1:  # element-wise: element j is read before it is written
                for i in node.input_ids():
                    r = find(i)
                    if (i in in_pool and group_last.get(r, -1) == s and len(buffer_of.get(r, ())) == 1
                            and entry_of.get(i) == pool_entry[buffer_of[r][0]]
                            and math.prod(prog.shape(i)) == count):
                        reuse = r
                        break
            if reuse is not None:
                b = buffer_of.pop(reuse)[0]
                parent[reuse] = out  # the output now owns the buffer (the input's group is dead)
                buffer_of[out] = [b]
            else:
                b = alloc(out, count)
            in_pool.add(out)
            e_out = pool_entry[b]
        entry_of[out] = e_out
        e_outs.insert(0, e_out)
        for code, args in form.instrs:
            body: list[int] = []
            for a in args:
                if a is None:
                    body.append(-1)
                elif isinstance(a, F32):
                    body.append(_f32_word(a.value))
                elif isinstance(a, Buf):
                    if a.kind == "out":
                        body.append(e_outs[a.key or 0])
                    elif a.kind == "in":
                        if isinstance(a.key, tuple):  # one of a list operand's arrays
                            refs = node.operands.get(a.key[0])
                            ref = refs[a.key[1]] if isinstance(refs, list) and a.key[1] < len(refs) else None
                        else:
                            ref = node.operands.get(a.key)
                        if not isinstance(ref, int):
                            raise PlanError(f"plan: {node.op} has no operand {a.key}")
                        body.append(value_entry(ref))
                    elif a.kind == "const":
                        body.append(const(a.key))
                    elif a.kind in scratch:
                        scratch[a.kind] = max(scratch[a.kind], int(a.key))
                        body.append(scratch_entry[a.kind])
                    else:
                        raise PlanError(f"plan: unknown buffer kind {a.kind}")
                else:
                    v = int(a)
                    if not -native.LIMIT < v < native.LIMIT:
                        raise PlanError(f"plan: {node.op}: value {v} out of range")
                    body.append(v)
            _check_bias(code, body)
            words += [code, len(body) + 2, *body]
        free_dead(s, node.input_ids() + list(node.outputs))
    if seg is not None:
        seg.words = np.array(words, np.int64)
        plan.segments.append(seg)
    for kind, floats in scratch.items():
        if floats:
            arr = np.empty(floats, F32_DTYPE)
            plan.keep.append(arr)
            plan.addresses[scratch_entry[kind]] = arr.__array_interface__["data"][0]
    # which values each segment reads per run, publishes for Python, and views
    py_readers: dict[int, list[int]] = {}
    for s, node in enumerate(nodes):
        for i in node.input_ids():
            if forms[s] is None:
                py_readers.setdefault(i, []).append(s)
    pool_of_entry = {e: p for p, e in zip(pool, pool_entry, strict=True)}
    for seg in plan.segments:
        produced: list[int] = []
        reads: dict[int, int] = {}
        for s in range(seg.first, seg.last + 1):
            for i in nodes[s].input_ids():
                if i not in produced and i in dynamic and i not in reads:
                    reads[i] = entry_of[i]
            produced.extend(nodes[s].outputs)
        seg.reads = [(slot[i], e, prog.shape(i)) for i, e in reads.items()]
        for o in produced:
            if o in outputs or not any(s > seg.last for s in py_readers.get(o, [])):
                continue
            shape = prog.shape(o)
            if o in in_pool:  # in a plan buffer (maybe through a reshape)
                arr = pool_of_entry[entry_of[o]]
                seg.publish.append((slot[o], arr[:math.prod(shape)].reshape(shape)))
            elif o in alias_of:  # a view run_segment made
                pass
            else:
                raise PlanError("plan: a value Python reads has no buffer")
    # a graph output a Python step computed from a plan buffer (a view of it, or written in place) may alias it
    for o in outputs:
        if o not in made_by_c and o not in pinned and any(find(m) == find(o) for m in in_pool):
            plan.copy_out.add(slot[o])
    plan.table = np.array(plan.addresses, np.int64)
    plan.table_at = plan.table.__array_interface__["data"][0]
    for seg in plan.segments:
        seg.words_at = seg.words.__array_interface__["data"][0] if seg.words.size else 0
    plan.buffer_bytes = sum(int(p.nbytes) for p in pool)
    plan.fn = native.run_plan_fn()
    prog.note(f"plan: {plan.steps_in_c} of {n_nodes} steps in {len(plan.segments)} C segment(s), "
              f"{plan.buffer_bytes} bytes of buffers")
    return plan

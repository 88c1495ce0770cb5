"""What the compiler may do with each operator's kernel, registered beside the kernel in its family module.

Every family module (py_core/kernels/<family>.py) exports `TRAITS: dict[str, KernelTraits]` next to `KERNELS`;
py_core.kernels merges them and `traits(op)` looks one up (an operator without an entry gets `NO_TRAITS`: the
compiler leaves it as built).  The passes in py_core/compiler/ read only these fields, never an operator's name
(tests/core/test_compiler_traits.py checks that), so a new operator or a new fast kernel becomes foldable,
fusable, in-place or packed by registering traits here, not by editing a pass.  The guide:
docs/adding-a-fast-kernel.md.

Shapes passed to the trait functions are tuples of ints; options are the node's validated option values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

Options = Mapping[str, Any]
Shape = tuple[int, ...]
# writes the operator's result into its (float32) argument, in place
InPlace = Callable[[np.ndarray], None]
# the C kernels' store-time activation (py_core.kernels.native.ACT_*, lo, hi)
NativeAct = tuple[int, float, float]


@dataclass(frozen=True)
class Epilogue:
    """One element-wise operation run in place on a product's float32 output (fused by the compiler).

    `apply` is the NumPy in-place version; `native`, when set, is the same operation as the C kernels' fused
    store (only an epilogue directly after the product, or after its bias, can take it)."""

    op: str
    apply: InPlace
    native: NativeAct | None = None
    # a binary epilogue's ufunc and constant operand (y = ufunc(y, constant)): what a compiled plan lowers
    ufunc: np.ufunc | None = None
    constant: np.ndarray | None = None


@dataclass(frozen=True)
class PackSite:
    """What a pack function sees of a product node: its constant operands (None where the operand is
    computed at run time or absent), shapes, options and the epilogues fused into it."""

    constants: Mapping[str, np.ndarray | None]
    shapes: Mapping[str, Shape]
    out_shape: Shape
    options: Options
    epilogue: Sequence[Epilogue]


@dataclass(frozen=True)
class Packed:
    """A kernel a pack function bound: called with the operands in `operands` only (the packed weights live
    inside it), returns a new float32 array with the node's epilogue applied (a list of them for an operator with
    several outputs).  `variant` names it in notes, profiles and tests (e.g. "im2col")."""

    kernel: Callable[..., np.ndarray | list[np.ndarray]]
    operands: tuple[str, ...]
    variant: str


@dataclass(frozen=True)
class BatchSite:
    """What a batch rule sees of a node of a graph that may be split over its batch (compiler/split.py): each
    operand's shapes (a list operand such as concat's `inputs` has several) and whether each carries the graph's
    batch on axis 0 (computed from a graph input; False: a constant or computed from constants only), the
    output shapes, options, the whole batch and one part's batch."""

    shapes: Mapping[str, Sequence[Shape]]
    batched: Mapping[str, Sequence[bool]]
    out_shapes: Sequence[Shape]
    options: Options
    batch: int
    part: int


# the node's options for a graph over one part of the batch when batch item i of every output depends only on
# batch item i of the batched operands, all outputs carrying the batch on axis 0; None when it may not split
BatchRule = Callable[[BatchSite], "Options | None"]


@dataclass(frozen=True)
class KernelTraits:
    """An operator kernel's traits.  Every field defaults to "no": an empty KernelTraits lets a pass do nothing
    but fold it (folding needs only the reference kernel)."""

    # float32 results are new arrays, never views of an input (so a later node may write into them)
    fresh: bool = False
    # unary element-wise (operand "input"): options -> the in-place version, same rounding as the reference
    in_place: Callable[[Options], InPlace] | None = None
    # binary element-wise (operands "a", "b"): the ufunc computing it with out= into either operand
    ufunc: np.ufunc | None = None
    commutative: bool = False
    # may run as an epilogue of a product: unary ones through `in_place`, binary ones with a constant operand
    # (the other one the product's output) through `ufunc`
    epilogue: bool = False
    # the C kernels' fused store for this activation, from its options (None: NumPy only)
    native_act: Callable[[Options], NativeAct] | None = None
    # a product that takes epilogues (fused by fuse.py, bound by pack.py)
    epilogue_host: bool = False
    # the packed kernel for a float32 node of this operator with constant weights, or None (keep the reference)
    pack: Callable[[PackSite], Packed | None] | None = None
    # single-output node whose output has its input's shape and type: does it equal its input ("input")?
    noop: Callable[[Options], bool] | None = None
    # op after op of the same operator: the options of one node reading the first one's input, or None
    merge: Callable[[Options, Options], Options | None] | None = None
    # floating-point operations per run of a float node: (input shapes by operand name, output shape, options)
    flops: Callable[[Mapping[str, Shape], Shape, Options], float] | None = None
    # the input layouts ("nchw", "nhwc") this operator's fast kernels run natively, best (measured fastest)
    # first, and the option that names the layout of its "input" operand (its output has the same layout):
    # the layout pass (compiler/layout.py) switches a node between them to drop the transposes around it, and
    # opSupportLimits().preferredInputLayout is the layout most of them put first (bridge/limits.py)
    layouts: tuple[str, ...] = ()
    layout_option: str = ""
    # single-input node that only reorders its input's axes: output axis i is input axis permutation[i]
    permutation: Callable[[Options], Sequence[int]] | None = None
    # batch separability (one graph over both cores, compiler/split.py): see BatchRule; None: never splits
    batch: BatchRule | None = None

    def epilogue_of(self, op: str, options: Options, constant: np.ndarray | None = None) -> Epilogue:
        """This operator as an epilogue: unary from its options, binary with its constant operand (the
        product's output on the left: callers check `commutative` before swapping)."""
        if self.in_place is not None:
            native = self.native_act(options) if self.native_act is not None else None
            return Epilogue(op, self.in_place(options), native)
        fn, c = self.ufunc, constant
        if fn is None or c is None:
            raise ValueError(f"{op} is not an epilogue")

        def apply(y: np.ndarray) -> None:
            fn(y, c, out=y)

        return Epilogue(op, apply, ufunc=fn, constant=c)


NO_TRAITS = KernelTraits()


def unary_in_place(fn: InPlace) -> Callable[[Options], InPlace]:
    """`in_place` for an operator without options."""
    return lambda options: fn


def always(options: Options) -> bool:
    """`noop` of an operator that is the identity whenever its output has its input's shape and type."""
    return True


# ------------------------------------------------------------------ batch rules (compiler/split.py)
# Conservative: a rule says yes only where each output's batch item i is a function of the batched operands'
# item i alone; anything it does not recognise keeps the whole graph on one worker.


def _outputs_batched(site: BatchSite) -> bool:
    return all(len(s) >= 1 and s[0] == site.batch for s in site.out_shapes)


def _broadcasts_over_batch(shape: Shape, out_rank: int) -> bool:
    """An operand without the batch that a broadcast repeats along the output's axis 0 (right-aligned)."""
    return len(shape) < out_rank or shape[0] == 1


def batch_elementwise(site: BatchSite) -> Options | None:
    """Element-wise with broadcasting (unary, binary, where, prelu, cast): every batched operand has the
    output's rank, every other one broadcasts over axis 0."""
    if not _outputs_batched(site):
        return None
    rank = len(site.out_shapes[0])
    for name, shapes in site.shapes.items():
        for shape, batched in zip(shapes, site.batched[name], strict=True):
            if batched and len(shape) != rank:
                return None
            if not batched and not _broadcasts_over_batch(shape, rank):
                return None
    return site.options


def _axes(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def batch_per_sample(*axis_options: str, main: str = "input") -> BatchRule:
    """Operand `main` batched, every other operand (weights, indices, statistics) without the batch, and none
    of `axis_options` (the axes the operator works across) naming axis 0: convolutions, pooling, normalization,
    softmax, reductions over other axes."""

    def rule(site: BatchSite) -> Options | None:
        if not _outputs_batched(site):
            return None
        for name, flags in site.batched.items():
            if any(flags) != (name == main) or (name == main and not all(flags)):
                return None
        for option in axis_options:
            if option not in site.options or 0 in _axes(site.options[option]):
                return None
        return site.options

    return rule


def batch_concat(site: BatchSite) -> Options | None:
    """concat along another axis than 0, every input batched."""
    if not _outputs_batched(site) or int(site.options["axis"]) == 0:
        return None
    return site.options if all(all(f) for f in site.batched.values()) else None


def batch_reshape(site: BatchSite) -> Options | None:
    """reshape keeping axis 0 (so each item keeps its own elements, in order): newShape[0] is the part."""
    shape = list(site.options["newShape"])
    if not _outputs_batched(site) or not shape or shape[0] != site.batch:
        return None
    return {**site.options, "newShape": [site.part, *shape[1:]]}


def batch_transpose(site: BatchSite) -> Options | None:
    perm = list(site.options["permutation"])
    return site.options if _outputs_batched(site) and perm and perm[0] == 0 else None


def batch_slice(site: BatchSite) -> Options | None:
    """slice taking all of axis 0, step 1: sizes[0] is the part."""
    o = site.options
    if not _outputs_batched(site) or o["starts"][0] != 0 or o["sizes"][0] != site.batch or o["strides"][0] != 1:
        return None
    return {**o, "sizes": [site.part, *list(o["sizes"])[1:]]}


def batch_pad(site: BatchSite) -> Options | None:
    o = site.options
    ok = _outputs_batched(site) and o["beginningPadding"][0] == 0 and o["endingPadding"][0] == 0
    return batch_per_sample()(site) if ok else None


def batch_tile(site: BatchSite) -> Options | None:
    return batch_per_sample()(site) if site.options["repetitions"][0] == 1 else None


def batch_gemm(site: BatchSite) -> Options | None:
    """gemm: A's rows are the batch (aTranspose false), B and C without it, C broadcasting over the rows."""
    o = site.options
    if not _outputs_batched(site) or o.get("aTranspose") or not all(site.batched["a"]):
        return None
    if any(site.batched.get("b", [False])) or any(site.batched.get("c", [False])):
        return None
    c = site.shapes.get("c")
    return o if not c or _broadcasts_over_batch(c[0], 2) else None


def batch_matmul(site: BatchSite) -> Options | None:
    """matmul: A batched (its rows when 2-D, its first batch axis otherwise) with B without the batch
    broadcasting over it, or both batched with the same rank of 3 or more."""
    if not _outputs_batched(site) or not all(site.batched["a"]):
        return None
    a, b = site.shapes["a"][0], site.shapes["b"][0]
    if all(site.batched["b"]):
        return site.options if len(a) == len(b) >= 3 else None
    if len(a) == 2:
        return site.options
    return site.options if len(b) < len(a) or b[0] == 1 else None


def with_batch(table: Mapping[str, KernelTraits], rules: Mapping[str, BatchRule]) -> dict[str, KernelTraits]:
    """`table` with each operator in `rules` given its batch rule (an operator without traits gets a row)."""
    out = dict(table)
    for op, rule in rules.items():
        out[op] = replace(out.get(op, NO_TRAITS), batch=rule)
    return out

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
from dataclasses import dataclass
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
    inside it), returns a new float32 array with the node's epilogue applied.  `variant` names it in notes,
    profiles and tests (e.g. "im2col")."""

    kernel: Callable[..., np.ndarray]
    operands: tuple[str, ...]
    variant: str


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

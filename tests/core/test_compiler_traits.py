"""The kernel traits (py_core/kernels/traits.py) and the rule that compiler passes read them: no module in
py_core/compiler/ names an operator, and every trait agrees with the reference kernel it describes."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from py_core.kernels import KERNELS, TRAITS, traits
from py_core.kernels.traits import NO_TRAITS
from py_core.spec import OPS

COMPILER = Path(__file__).resolve().parents[2] / "py_core" / "compiler"
OPERATORS = frozenset(OPS) | frozenset(KERNELS)


def operator_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every string constant in `source` that is an operator's name."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in OPERATORS]


def test_the_check_finds_an_operator_name() -> None:
    source = 'def f(node):\n    """relu after conv2d"""\n    return node.op in ("conv2d", "gemm") or "x"\n'
    assert operator_names(source) == [(3, "conv2d"), (3, "gemm")]


@pytest.mark.parametrize("path", sorted(COMPILER.glob("*.py")), ids=lambda p: p.name)
def test_no_compiler_module_names_an_operator(path: Path) -> None:
    found = operator_names(path.read_text())
    assert not found, f"{path.name} names operators {found}: register a trait in py_core/kernels/<family>.py"


def test_every_operator_has_a_kernel_and_traits_only_for_kernels() -> None:
    assert set(OPS) == set(KERNELS)
    assert set(TRAITS) <= set(KERNELS)
    assert traits("no such operator") is NO_TRAITS


def test_epilogues_and_in_place_traits_are_complete() -> None:
    for op, t in TRAITS.items():
        if t.epilogue:
            assert (t.in_place is None) != (t.ufunc is None), op
        if t.native_act is not None:
            assert t.in_place is not None, op
        if t.pack is not None:  # a packed kernel returns new arrays (and applies the epilogues of a host)
            assert t.fresh, op


# inputs around every branch of the activations: signs, zero, the clamp bounds, sigmoid's overflow, inf, NaN
SPECIAL = np.array([-np.inf, -100.0, -88.5, -87.0, -6.0, -3.0, -1.5, -0.0, 0.0, 0.25, 3.0, 6.0, 20.0, np.inf,
                    np.nan], np.float32)
OPTIONS = {"clamp": {"minValue": -1.0, "maxValue": 6.0}, "leakyRelu": {"alpha": 0.1}}


@pytest.mark.parametrize("op", sorted(op for op, t in TRAITS.items() if t.in_place is not None))
def test_in_place_version_equals_the_reference_kernel(op: str) -> None:
    x = np.concatenate([SPECIAL, np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 8])
    options = OPTIONS.get(op, {})
    with np.errstate(all="ignore"):  # the executor runs kernels so too
        want = KERNELS[op](x.copy(), **options)
        y = x.copy()
        traits(op).in_place(options)(y)  # type: ignore[misc]
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=0, equal_nan=True, err_msg=op)


@pytest.mark.parametrize("op", sorted(op for op, t in TRAITS.items() if t.ufunc is not None))
def test_binary_ufunc_equals_the_reference_kernel(op: str) -> None:
    rng = np.random.default_rng(1)
    a = np.concatenate([SPECIAL, rng.standard_normal(100).astype(np.float32)])
    b = np.concatenate([SPECIAL[::-1], rng.standard_normal(100).astype(np.float32)])
    with np.errstate(all="ignore"):
        want = KERNELS[op](a, b)
        got = traits(op).ufunc(a, b, out=np.empty_like(a))  # type: ignore[misc]
        swapped = KERNELS[op](b, a)
    np.testing.assert_array_equal(got, want, err_msg=op)
    if traits(op).commutative:
        np.testing.assert_array_equal(swapped, want, err_msg=op)


def test_native_epilogue_matches_the_in_place_version() -> None:
    from py_core.kernels import native

    if not native.available():
        pytest.skip("C kernels not built (make build)")
    x = np.concatenate([SPECIAL, np.random.default_rng(2).standard_normal(1000).astype(np.float32) * 8])
    for op, t in TRAITS.items():
        if t.native_act is None:
            continue
        options = OPTIONS.get(op, {})
        act, lo, hi = t.native_act(options)
        y = x.copy()
        with np.errstate(all="ignore"):
            t.in_place(options)(y)  # type: ignore[misc]
        np.testing.assert_array_equal(native.activation(x, act, lo, hi), y, err_msg=op)

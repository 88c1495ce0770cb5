"""Shared check for the compiler-pass tests: a graph prepared with one pass (or all) against the same graph
run by the reference kernels, on seeded random inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from py_core.builder import GraphBuilder
from py_core.compiler import CompileOptions
from py_core.runtime.executor import Executable, prepare

NONE = CompileOptions.none()


def only(**passes: bool) -> CompileOptions:
    """Options with just the named passes on."""
    return CompileOptions(**{**{f: False for f in NONE.__dataclass_fields__}, **passes})


def random_inputs(exe: Executable, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(d.shape).astype(d.data_type.numpy_name)
            for name, d in exe.input_descs.items()}


def compare(make: Callable[[GraphBuilder], dict[str, Any]], options: CompileOptions, *, rtol: float = 1e-5,
            atol: float = 1e-5, runs: int = 2) -> Executable:
    """Build the graph twice (builders are single-use), run both, require equal outputs; return the
    optimized executable."""
    ref_b, opt_b = GraphBuilder(), GraphBuilder()
    ref = prepare(ref_b.build(make(ref_b)), NONE)
    opt = prepare(opt_b.build(make(opt_b)), options)
    for seed in range(runs):  # twice: a memory plan must leave nothing behind that changes the next run
        feeds = random_inputs(ref, seed)
        want = ref.run({k: v.copy() for k, v in feeds.items()})
        got = opt.run(feeds)
        for name in want:
            assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
            np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)
        for name, arr in feeds.items():  # graph inputs are never written
            np.testing.assert_array_equal(arr, random_inputs(ref, seed)[name])
    return opt


def const(b: GraphBuilder, shape: tuple[int, ...], seed: int = 1, dtype: str = "float32") -> Any:
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return b.constant({"dataType": dtype, "shape": list(shape)}, data)


def ops_of(exe: Executable) -> list[str]:
    """Each step's operator, with the compiler's bound kernel in brackets: "conv2d[im2col]", "add[in-place]"."""
    return [f"{s.op}[{s.variant}]" if s.variant else s.op for s in exe.steps]

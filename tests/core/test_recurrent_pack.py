"""gru and lstm with constant weights (the `pack` trait of py_core/kernels/recurrent.py: constant and absent weight
operands made canonical float64 once, at build; with every weight constant and the C kernels loaded, the C calls
bound to fixed buffers) against the same graphs on the reference kernels: bit for bit, with the C kernels and
without, weights changed after the build unseen, weights computed at run time read at every run.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from compiler_check import NONE, compare, only, ops_of

from py_core.builder import GraphBuilder
from py_core.kernels import native
from py_core.runtime.executor import prepare

PACK = only(pack=True)
STEPS, BATCH, SIZE, HIDDEN = 4, 2, 3, 5
LAYOUTS = {"gru": ["zrn", "rzn"], "lstm": ["iofg", "ifgo"]}


def weights(kind: str, dirs: int, seed: int = 1) -> dict[str, np.ndarray]:
    gates = 3 if kind == "gru" else 4
    rng = np.random.default_rng(seed)
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    w = {"weight": u(dirs, gates * HIDDEN, SIZE), "recurrentWeight": u(dirs, gates * HIDDEN, HIDDEN),
         "bias": u(dirs, gates * HIDDEN), "recurrentBias": u(dirs, gates * HIDDEN),
         "initialHiddenState": u(dirs, BATCH, HIDDEN)}
    if kind == "lstm":
        w.update(peepholeWeight=u(dirs, 3 * HIDDEN), initialCellState=u(dirs, BATCH, HIDDEN))
    return w


def recurrent(b: GraphBuilder, kind: str, w: dict[str, np.ndarray], inputs: tuple[str, ...] = (),
              **options: Any) -> dict[str, Any]:
    """`kind` over an input x with the operands of `w`: graph inputs for the names in `inputs`, constants else."""
    ops = {n: b.input(n, {"dataType": "float32", "shape": list(a.shape)}) if n in inputs
           else b.constant({"dataType": "float32", "shape": list(a.shape)}, a) for n, a in w.items()}
    x = b.input("x", {"dataType": "float32", "shape": [STEPS, BATCH, SIZE]})
    outs = getattr(b, kind)(x, ops.pop("weight"), ops.pop("recurrentWeight"), STEPS, HIDDEN, **ops, **options)
    return {f"o{i}": o for i, o in enumerate(outs)}


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
@pytest.mark.parametrize("absent", [(), ("bias", "initialHiddenState"), ("recurrentBias", "peepholeWeight")])
def test_packed_recurrent_is_bit_identical(kind: str, direction: str, absent: tuple[str, ...]) -> None:
    dirs = 2 if direction == "both" else 1
    for layout in LAYOUTS[kind]:
        w = {n: a for n, a in weights(kind, dirs).items() if n not in absent}
        exe = compare(lambda b, w=w, layout=layout: recurrent(b, kind, w, direction=direction, layout=layout,
                                                              returnSequence=True), PACK, rtol=0, atol=0)
        assert ops_of(exe) == [f"{kind}[prepacked]"]


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_a_constant_changed_after_the_build_is_not_seen(kind: str) -> None:
    w = weights(kind, 1)
    b = GraphBuilder()
    exe = prepare(b.build(recurrent(b, kind, w)), PACK)
    x = np.random.default_rng(2).uniform(-1, 1, (STEPS, BATCH, SIZE)).astype(np.float32)
    before = exe.run({"x": x})
    for name, a in w.items():  # the builder keeps these arrays (no copy in CPython): the prepared weights are copies
        if "State" not in name:
            a *= 3
    after = exe.run({"x": x})
    assert ops_of(exe) == [f"{kind}[prepacked]"]
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("inputs", [("weight",), ("recurrentWeight", "bias"), ("peepholeWeight", "recurrentBias")])
def test_weights_computed_at_run_time_are_read_at_every_run(kind: str, inputs: tuple[str, ...]) -> None:
    w = weights(kind, 2)
    inputs = tuple(n for n in inputs if n in w)
    b, ref_b = GraphBuilder(), GraphBuilder()
    exe = prepare(b.build(recurrent(b, kind, w, inputs, direction="both")), PACK)
    ref = prepare(ref_b.build(recurrent(ref_b, kind, w, inputs, direction="both")), NONE)
    assert ops_of(exe) == [f"{kind}[prepacked]"]
    x = np.random.default_rng(2).uniform(-1, 1, (STEPS, BATCH, SIZE)).astype(np.float32)
    seen = []
    for seed in (3, 4):  # other values of the run-time weights at each run
        feeds = {"x": x, **{n: weights(kind, 2, seed)[n] for n in inputs}}
        got, want = exe.run(feeds), ref.run(feeds)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        seen.append(got["o0"])
    assert not np.array_equal(seen[0], seen[1])


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_every_weight_at_run_time_keeps_the_reference_kernel(kind: str) -> None:
    w = weights(kind, 1)
    b = GraphBuilder()
    exe = prepare(b.build(recurrent(b, kind, w, tuple(n for n in w if "State" not in n))), PACK)
    assert ops_of(exe) == [kind]


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_the_c_kernels_switched_off_and_on_after_the_build(kind: str) -> None:
    w = weights(kind, 2)
    b, ref_b = GraphBuilder(), GraphBuilder()
    exe = prepare(b.build(recurrent(b, kind, w, direction="both", returnSequence=True)), PACK)
    ref = prepare(ref_b.build(recurrent(ref_b, kind, w, direction="both", returnSequence=True)), NONE)
    x = np.random.default_rng(2).uniform(-1, 1, (STEPS, BATCH, SIZE)).astype(np.float32)
    loaded = native.available()
    for on in (True, False, True):  # the bound C calls, the NumPy steps, the C calls bound again
        native.use_native(on)
        try:
            got, want = exe.run({"x": x}), ref.run({"x": x})
        finally:
            native.use_native(True)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        assert (exe.steps[0].call.bound is not None) == (on and loaded)


def test_the_held_weights_are_what_the_executable_reports() -> None:
    w = weights("lstm", 2)
    b = GraphBuilder()
    exe = prepare(b.build(recurrent(b, "lstm", w, direction="both")), PACK)
    held = sum(a.nbytes for n, a in w.items() if "State" not in n)
    # float64 copies in place of the float32 constants, which are dropped; the states stay constants
    assert exe.memory() == {"constants": w["initialHiddenState"].nbytes * 2, "weights": 2 * held, "plan": 0}

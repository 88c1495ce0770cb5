"""The C time loops of gru, lstm, gruCell and lstmCell (native.gru_loop, native.lstm_loop) against the NumPy steps
of py_core/kernels/recurrent.py, the same kernels with the C kernels off.  Inputs are float64, so the kernels'
outputs are their float64 results, unrounded.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru

The float64 exp, tanh and sigmoid of the loops are checked against Python's math in
py_core.testing.native_check (tests/core/test_native_kernels.py, and the wasm builds in tests/pyodide)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from py_core.kernels import native, recurrent

pytestmark = pytest.mark.skipif(not native.available(), reason="C kernels not built (make build)")

HIDDEN, SIZE = 5, 3
F64 = np.float64


def operands(rng: np.random.Generator, kind: str, steps: int, batch: int, dirs: int, scale: float,
             absent: bool) -> dict[str, np.ndarray]:
    """Random operands of gru / lstm (absent: no biases and no initial states)."""
    gates = 3 if kind == "gru" else 4
    u = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    a = {"input": u(steps, batch, SIZE) * scale, "weight": u(dirs, gates * HIDDEN, SIZE),
         "recurrentWeight": u(dirs, gates * HIDDEN, HIDDEN)}
    if not absent:
        a.update(bias=u(dirs, gates * HIDDEN), recurrentBias=u(dirs, gates * HIDDEN),
                 initialHiddenState=u(dirs, batch, HIDDEN))
        if kind == "lstm":
            a["initialCellState"] = u(dirs, batch, HIDDEN) * 3
    return a


def both_ways(monkeypatch: pytest.MonkeyPatch, kernel: Callable[[], list[np.ndarray]],
              loop: str) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """The kernel's outputs with the C kernels on and off, and how many times the C loop ran."""
    calls = []
    real = getattr(native, loop)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(native, loop, counted)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf and inf * 0 in the NaN cases, in both alike
        fast = kernel()
        native.use_native(False)
        try:
            slow = kernel()
        finally:
            native.use_native(True)
    return fast, slow, len(calls)


def assert_close(fast: list[np.ndarray], slow: list[np.ndarray]) -> None:
    """Equal NaN positions; elsewhere within 1e-13 relative, or 1e-15 of the largest magnitude near zero (the
    recurrent products sum in another order; exp and tanh are within a few ulp of libm's)."""
    assert len(fast) == len(slow)
    for f, s in zip(fast, slow, strict=True):
        assert f.dtype == s.dtype == F64 and f.shape == s.shape
        np.testing.assert_array_equal(np.isnan(f), np.isnan(s))
        scale = np.nanmax(np.abs(np.where(np.isinf(s), np.nan, s)), initial=0.0)
        np.testing.assert_allclose(f, s, rtol=1e-13, atol=1e-15 * scale)


@pytest.mark.parametrize("kind,direction,ret,batch,steps", list(itertools.product(
    ["gru", "lstm"], ["forward", "backward", "both"], [True, False], [1, 3], [1, 4])))
def test_sequence_loop_matches_numpy(monkeypatch, kind, direction, ret, batch, steps):
    rng = np.random.default_rng([steps, batch, ret, len(direction), len(kind)])
    dirs = 2 if direction == "both" else 1
    absent = bool(rng.integers(2))
    a = operands(rng, kind, steps, batch, dirs, 1.0 + 20 * rng.integers(2), absent)
    acts = [str(v) for v in rng.choice(["sigmoid", "tanh", "relu"], 2 if kind == "gru" else 3)]
    args: dict[str, object] = {"returnSequence": ret, "direction": direction, "activations": acts}
    if kind == "gru":
        args.update(layout=str(rng.choice(["zrn", "rzn"])), resetAfter=bool(rng.integers(2)))
        fn, loop = recurrent.gru, "gru_loop"
    else:
        args["layout"] = str(rng.choice(["iofg", "ifgo"]))
        if rng.integers(2):
            a["peepholeWeight"] = rng.uniform(-1, 1, (dirs, 3 * HIDDEN))
        fn, loop = recurrent.lstm, "lstm_loop"
    fast, slow, calls = both_ways(monkeypatch, lambda: fn(steps=steps, hiddenSize=HIDDEN, **a, **args), loop)
    assert calls == dirs  # one C call per direction
    assert_close(fast, slow)


@pytest.mark.parametrize("layout,reset_after", [("zrn", True), ("rzn", False)])
@pytest.mark.parametrize("batch", [1, 4])
def test_gru_cell_matches_numpy(monkeypatch, layout, reset_after, batch):
    rng = np.random.default_rng(batch)
    u = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    a = {"input": u(batch, SIZE), "weight": u(3 * HIDDEN, SIZE), "recurrentWeight": u(3 * HIDDEN, HIDDEN),
         "hiddenState": u(batch, HIDDEN), "bias": u(3 * HIDDEN)}
    fast, slow, calls = both_ways(monkeypatch, lambda: [recurrent.gru_cell(
        hiddenSize=HIDDEN, resetAfter=reset_after, layout=layout, activations=["tanh", "relu"], **a)], "gru_loop")
    assert calls == 1
    assert_close(fast, slow)


@pytest.mark.parametrize("layout,peephole", [("iofg", True), ("ifgo", False)])
def test_lstm_cell_matches_numpy(monkeypatch, layout, peephole):
    rng = np.random.default_rng(9)
    u = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    a = {"input": u(2, SIZE), "weight": u(4 * HIDDEN, SIZE), "recurrentWeight": u(4 * HIDDEN, HIDDEN),
         "hiddenState": u(2, HIDDEN), "cellState": u(2, HIDDEN) * 3, "recurrentBias": u(4 * HIDDEN)}
    if peephole:
        a["peepholeWeight"] = u(3 * HIDDEN)
    fast, slow, calls = both_ways(monkeypatch, lambda: recurrent.lstm_cell(
        hiddenSize=HIDDEN, layout=layout, activations=["sigmoid", "tanh", "relu"], **a), "lstm_loop")
    assert calls == 1
    assert_close(fast, slow)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("special", ["nan", "inf", "huge", "tiny"])
def test_special_values_match_numpy(monkeypatch, kind, special):
    """NaN and inf inputs, magnitudes where exp(x) itself would overflow (the gates saturate), and inputs near 1e-300
    where tanh and relu must keep their relative precision."""
    rng = np.random.default_rng(3)
    a = operands(rng, kind, 4, 2, 2, 1.0, False)
    x = a["input"]
    if special == "nan":
        x[1, 0, 0] = np.nan
    elif special == "inf":
        x[0, 1, :] = [np.inf, -np.inf, np.inf]
    elif special == "huge":
        a["input"] = x * 1e4
    else:
        for k in ("input", "bias", "recurrentBias", "initialHiddenState", "initialCellState"):
            if k in a:
                a[k] = a[k] * 1e-300
    if kind == "gru":
        fn, loop = recurrent.gru, "gru_loop"
        args = {"activations": ["tanh", "relu"], "layout": "zrn", "resetAfter": False}
    else:
        fn, loop = recurrent.lstm, "lstm_loop"
        args = {"activations": ["sigmoid", "tanh", "tanh"], "layout": "iofg"}
    fast, slow, calls = both_ways(monkeypatch, lambda: fn(steps=4, hiddenSize=HIDDEN, returnSequence=True,
                                                          direction="both", **a, **args), loop)
    assert calls == 2
    assert_close(fast, slow)
    if special == "tiny":
        assert 0 < np.abs(fast[-1]).max() < 1e-290  # the results stay tiny and nonzero


def test_wrappers_refuse_what_the_loops_cannot_read() -> None:
    rng = np.random.default_rng(0)
    xw, r_w, h = rng.uniform(size=(2, 1, 3 * HIDDEN)), rng.uniform(size=(3 * HIDDEN, HIDDEN)), np.zeros((1, HIDDEN))
    seq = np.zeros((2, 1, 1, HIDDEN))
    acts = ["sigmoid", "tanh"]
    native.gru_loop(xw, r_w, None, h, seq, 0, False, True, acts)  # the valid call these variations break
    bad = [dict(xw=xw.astype(np.float32)), dict(xw=np.asfortranarray(xw)), dict(r_w=r_w[:, :-1]),
           dict(r_b=np.zeros(4)), dict(h=np.zeros((2, HIDDEN))), dict(h=np.zeros((1, 2 * HIDDEN))[:, ::2]), dict(d=1),
           dict(seq=np.zeros((3, 1, 1, HIDDEN))), dict(acts=["sigmoid", "gelu"])]
    for change in bad:
        call = dict(xw=xw, r_w=r_w, r_b=None, h=h, seq=seq, d=0, backward=False, reset_after=True, acts=acts)
        call.update(change)
        with pytest.raises(native.NativeRangeError):
            native.gru_loop(**call)  # type: ignore[arg-type]
    c = np.zeros((1, HIDDEN))
    with pytest.raises(native.NativeRangeError):  # gru's operands are not lstm's
        native.lstm_loop(xw, r_w, None, None, h, c, None, 0, False, ["sigmoid", "tanh", "tanh"])
    with pytest.raises(native.NativeRangeError):
        native.map_f64(np.zeros(3, np.float32), native.F64_EXP)

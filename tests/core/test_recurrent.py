"""gru, gruCell, lstm, lstmCell against torch (float64), onnxruntime (ONNX GRU/LSTM, float32) and a float64
formula written from the spec text (peepholes, which neither torch nor ONNX share with WebNN).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru"""

from __future__ import annotations

import itertools

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from py_core.builder import GraphBuilder
from py_core.errors import WebNNTypeError
from py_core.runtime.executor import prepare
from py_core.testing import reference

ACTS = ["relu", "sigmoid", "tanh"]
F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
OPERAND_NAMES = {"input", "weight", "recurrentWeight", "hiddenState", "cellState", "bias", "recurrentBias",
                 "peepholeWeight", "initialHiddenState", "initialCellState"}


def run(op: str, arrays: dict[str, np.ndarray], label: str = "", **args) -> list[np.ndarray]:
    """Build graph inputs for `arrays`, call `op`, run it through the executor (which checks dtype/shape)."""
    b = GraphBuilder()
    ops = {k: b.input(k, {"dataType": a.dtype.name, "shape": list(a.shape)}) for k, a in arrays.items()}
    out = getattr(b, op)(label=label, **ops, **args)
    outs = out if isinstance(out, list) else [out]
    res = prepare(b.build({f"o{i}": o for i, o in enumerate(outs)})).run(arrays)
    return [res[f"o{i}"] for i in range(len(outs))]


def close(actual: np.ndarray, expected: np.ndarray, dtype: np.dtype, ulps: float = 1, atol: float = 1e-9):
    """Within `ulps` units in the last place of `dtype` (plus a tiny atol for values near zero)."""
    assert actual.dtype == dtype
    exp = np.asarray(expected, np.float64)
    tol = ulps * np.spacing(np.abs(exp).astype(dtype)).astype(np.float64) + atol
    err = np.abs(actual.astype(np.float64) - exp)
    both_nan = np.isnan(actual) & np.isnan(exp)
    assert np.all((err <= tol) | both_nan), f"max error {np.nanmax(err)} (tol {tol.max()})"


def data(rng: np.random.Generator, shape, dtype, scale: float = 1.0) -> np.ndarray:
    return (rng.uniform(-1, 1, shape) * scale).astype(dtype)


def blocks(a: np.ndarray, src: str, dst: str, axis: int = 1) -> np.ndarray:
    """Reorder gate blocks along `axis` from layout `src` to layout `dst` (e.g. 'rzn' -> 'zrn')."""
    parts = dict(zip(src, np.split(a, len(src), axis=axis), strict=True))
    return np.concatenate([parts[c] for c in dst], axis=axis)


# ---------------------------------------------------------------------------------------- oracles

def ort_rnn(op: str, x, w, r, b, h0, c0, hidden, direction, acts, reset_after=True):
    """ONNX GRU (gates z,r,h) / LSTM (gates i,o,f,c): returns [Y_h, (Y_c), Y] in float32."""
    ins = {"X": x, "W": w, "R": r, "B": b, "sequence_lens": None, "initial_h": h0, "initial_c": c0}
    if op == "GRU":
        del ins["initial_c"]
    names = [k if v is not None else "" for k, v in ins.items()]
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    dirs = {"forward": "forward", "backward": "reverse", "both": "bidirectional"}[direction]
    attrs = {"linear_before_reset": int(reset_after)} if op == "GRU" else {}
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=dirs,
                            activations=[a.capitalize() for a in acts] * (2 if direction == "both" else 1),
                            **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names if n],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {k: v.astype(np.float32) for k, v in ins.items() if v is not None}
    y, *states = sess.run(None, feed)
    return states + [y]


def torch_rnn(kind: str, x, w, r, b, rb, h0, c0, hidden, direction):
    """torch.nn.GRU (gates r,z,n; reset after) / LSTM (gates i,f,g,o) in float64, as [h, (c), sequence]."""
    both = direction == "both"
    mod = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind](x.shape[2], hidden, bidirectional=both).double()
    t = lambda a: torch.from_numpy(np.asarray(a, np.float64))  # noqa: E731
    with torch.no_grad():
        for d, sfx in enumerate(["", "_reverse"][: 1 + both]):
            getattr(mod, f"weight_ih_l0{sfx}").copy_(t(w[d]))
            getattr(mod, f"weight_hh_l0{sfx}").copy_(t(r[d]))
            getattr(mod, f"bias_ih_l0{sfx}").copy_(t(b[d]))
            getattr(mod, f"bias_hh_l0{sfx}").copy_(t(rb[d]))
        xs = t(x).flip(0) if direction == "backward" else t(x)
        y, state = mod(xs, (t(h0), t(c0)) if kind == "lstm" else t(h0))
    y = y.flip(0) if direction == "backward" else y
    dirs = 2 if both else 1
    seq = y.numpy().reshape(x.shape[0], x.shape[1], dirs, hidden).transpose(0, 2, 1, 3)
    states = [s.numpy() for s in state] if kind == "lstm" else [state.numpy()]
    return states + [seq]


# ---------------------------------------------------------------------------------------- gru / lstm

def make(kind, rng, dtype, direction, steps=3, batch=2, size=3, hidden=4, scale=1.0):
    gates = 3 if kind == "gru" else 4
    dirs = 2 if direction == "both" else 1
    return dict(input=data(rng, (steps, batch, size), dtype, scale),
                weight=data(rng, (dirs, gates * hidden, size), dtype),
                recurrentWeight=data(rng, (dirs, gates * hidden, hidden), dtype),
                bias=data(rng, (dirs, gates * hidden), dtype),
                recurrentBias=data(rng, (dirs, gates * hidden), dtype),
                initialHiddenState=data(rng, (dirs, batch, hidden), dtype),
                initialCellState=data(rng, (dirs, batch, hidden), dtype))


CASES = list(itertools.product([F32, F16], ["forward", "backward", "both"], [0, 1]))


@pytest.mark.parametrize("dtype,direction,seed", CASES)
@pytest.mark.parametrize("layout", ["zrn", "rzn"])
def test_gru_vs_torch(dtype, direction, seed, layout):
    rng = np.random.default_rng(seed)
    a = make("gru", rng, dtype, direction, scale=[1, 30][seed])  # seed 1: saturating gates
    del a["initialCellState"]
    if seed:
        del a["initialHiddenState"]
    got = run("gru", a, steps=3, hiddenSize=4, direction=direction, layout=layout, returnSequence=True)
    z = lambda k: blocks(a[k], layout, "rzn")  # noqa: E731 - torch gate order is r, z, n
    h0 = a.get("initialHiddenState", np.zeros((2 if direction == "both" else 1, 2, 4)))
    want = torch_rnn("gru", a["input"], z("weight"), z("recurrentWeight"), z("bias"), z("recurrentBias"),
                     h0, None, 4, direction)
    for g, w in zip(got, want, strict=True):
        close(g, w, dtype)


@pytest.mark.parametrize("dtype,direction,seed", CASES)
@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_vs_onnxruntime(dtype, direction, seed, reset_after):
    rng = np.random.default_rng(10 + seed)
    a = make("gru", rng, dtype, direction)
    del a["initialCellState"]
    acts = [str(v) for v in rng.choice(ACTS, 2)]
    ret = bool(seed)
    if seed:
        del a["bias"]
    got = run("gru", a, steps=3, hiddenSize=4, direction=direction, resetAfter=reset_after,
              returnSequence=ret, activations=acts, label="g")
    bb = np.concatenate([a.get("bias", np.zeros_like(a["recurrentBias"])), a["recurrentBias"]], -1)
    want = ort_rnn("GRU", a["input"], a["weight"], a["recurrentWeight"], bb, a["initialHiddenState"], None,
                   4, direction, acts, reset_after)
    assert len(got) == 1 + ret
    for g, w in zip(got, want, strict=False):
        close(g, w, dtype, ulps=1 if dtype == F16 else 0, atol=2e-5)  # ORT computes in float32


@pytest.mark.parametrize("dtype,direction,seed", CASES)
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
def test_lstm_vs_torch(dtype, direction, seed, layout):
    rng = np.random.default_rng(20 + seed)
    a = make("lstm", rng, dtype, direction, scale=[1, 30][seed])
    got = run("lstm", a, steps=3, hiddenSize=4, direction=direction, layout=layout, returnSequence=True)
    z = lambda k: blocks(a[k], layout, "ifgo")  # noqa: E731 - torch gate order is i, f, g, o
    want = torch_rnn("lstm", a["input"], z("weight"), z("recurrentWeight"), z("bias"), z("recurrentBias"),
                     a["initialHiddenState"], a["initialCellState"], 4, direction)
    for g, w in zip(got, want, strict=True):
        close(g, w, dtype)


@pytest.mark.parametrize("dtype,direction,seed", CASES)
def test_lstm_vs_onnxruntime(dtype, direction, seed):
    rng = np.random.default_rng(30 + seed)
    a = make("lstm", rng, dtype, direction)
    acts = [str(v) for v in rng.choice(ACTS, 3)]
    if seed:
        for k in ("recurrentBias", "initialHiddenState", "initialCellState"):
            del a[k]
    got = run("lstm", a, steps=3, hiddenSize=4, direction=direction, activations=acts,
              returnSequence=not seed)
    rb = a.get("recurrentBias", np.zeros_like(a["bias"]))
    want = ort_rnn("LSTM", a["input"], a["weight"], a["recurrentWeight"], np.concatenate([a["bias"], rb], -1),
                   a.get("initialHiddenState"), a.get("initialCellState"), 4, direction, acts)
    assert len(got) == 3 - seed
    for g, w in zip(got, want[:2] + want[2:] * (1 - seed), strict=True):
        close(g, w, dtype, ulps=1 if dtype == F16 else 0, atol=2e-5)  # ORT computes in float32


@pytest.mark.parametrize("dtype,direction", [(F32, "forward"), (F32, "both"), (F16, "backward")])
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
def test_lstm_peephole_vs_spec_formula(dtype, direction, layout):
    rng = np.random.default_rng(40)
    a = make("lstm", rng, dtype, direction)
    a["peepholeWeight"] = data(rng, (a["weight"].shape[0], 12), dtype)
    acts = [str(v) for v in rng.choice(ACTS, 3)]
    got = run("lstm", a, steps=3, hiddenSize=4, direction=direction, layout=layout, activations=acts,
              returnSequence=True)
    want = reference.lstm(a["input"], a["weight"], a["recurrentWeight"], 4, a["bias"], a["recurrentBias"],
                          a["peepholeWeight"], a["initialHiddenState"], a["initialCellState"], direction, layout,
                          acts)
    for g, w in zip(got, want, strict=True):
        close(g, w, dtype)


def test_nan_and_inf_propagate():
    rng = np.random.default_rng(5)
    a = make("gru", rng, F32, "forward")
    del a["initialCellState"]
    a["input"][1, 0, 0] = np.nan
    a["input"][0, 1, 0] = np.inf
    h, seq = run("gru", a, steps=3, hiddenSize=4, returnSequence=True)
    assert np.isnan(seq[1:, 0, 0]).all() and not np.isnan(seq[0, 0, 0]).any()
    assert np.isfinite(seq[:, 0, 1]).all()  # +inf saturates the gates instead of producing NaN


# ---------------------------------------------------------------------------------------- cells

@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("layout,reset_after", [("zrn", True), ("rzn", True), ("zrn", False), ("rzn", False)])
def test_gru_cell(dtype, layout, reset_after):
    rng = np.random.default_rng(50)
    a = {"input": data(rng, (3, 5), dtype), "weight": data(rng, (12, 5), dtype),
         "recurrentWeight": data(rng, (12, 4), dtype), "hiddenState": data(rng, (3, 4), dtype),
         "bias": data(rng, (12,), dtype), "recurrentBias": data(rng, (12,), dtype)}
    acts = [str(v) for v in rng.choice(ACTS, 2)]
    (got,) = run("gruCell", a, hiddenSize=4, layout=layout, resetAfter=reset_after, activations=acts)
    z = {k: blocks(a[k], layout, "zrn", 0) for k in ("weight", "recurrentWeight", "bias", "recurrentBias")}
    want = ort_rnn("GRU", a["input"][None], z["weight"][None], z["recurrentWeight"][None],
                   np.concatenate([z["bias"], z["recurrentBias"]])[None], a["hiddenState"][None], None, 4,
                   "forward", acts, reset_after)[0][0]
    close(got, want, dtype, ulps=1 if dtype == F16 else 0, atol=2e-5)
    if reset_after:  # torch.nn.GRUCell: default activations, float64
        (got,) = run("gruCell", a, hiddenSize=4, layout=layout)
        cell = torch.nn.GRUCell(5, 4).double()
        with torch.no_grad():
            for name, k in [("weight_ih", "weight"), ("weight_hh", "recurrentWeight"), ("bias_ih", "bias"),
                            ("bias_hh", "recurrentBias")]:
                getattr(cell, name).copy_(torch.from_numpy(blocks(a[k], layout, "rzn", 0).astype(np.float64)))
            want = cell(*(torch.from_numpy(a[k].astype(np.float64)) for k in ("input", "hiddenState")))
        close(got, want.numpy(), dtype)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
@pytest.mark.parametrize("peephole", [False, True])
def test_lstm_cell(dtype, layout, peephole):
    rng = np.random.default_rng(60)
    a = {"input": data(rng, (2, 3), dtype), "weight": data(rng, (20, 3), dtype),
         "recurrentWeight": data(rng, (20, 5), dtype), "hiddenState": data(rng, (2, 5), dtype),
         "cellState": data(rng, (2, 5), dtype, 3), "bias": data(rng, (20,), dtype)}
    if peephole:
        a["peepholeWeight"] = data(rng, (15,), dtype)
    acts = [str(v) for v in rng.choice(ACTS, 3)]
    got = run("lstmCell", a, hiddenSize=5, layout=layout, activations=acts)
    want = reference.lstm_cell(a["input"], a["weight"], a["recurrentWeight"], a["hiddenState"], a["cellState"], 5,
                          a["bias"], None, a.get("peepholeWeight"), layout, acts)
    for g, w in zip(got, want, strict=True):
        close(g, w, dtype)
    if not peephole:  # torch.nn.LSTMCell, default activations
        got = run("lstmCell", a, hiddenSize=5, layout=layout)
        cell = torch.nn.LSTMCell(3, 5).double()
        t = lambda v: torch.from_numpy(np.asarray(v, np.float64))  # noqa: E731
        with torch.no_grad():
            cell.weight_ih.copy_(t(blocks(a["weight"], layout, "ifgo", 0)))
            cell.weight_hh.copy_(t(blocks(a["recurrentWeight"], layout, "ifgo", 0)))
            cell.bias_ih.copy_(t(blocks(a["bias"], layout, "ifgo", 0)))
            cell.bias_hh.zero_()
            want = cell(t(a["input"]), (t(a["hiddenState"]), t(a["cellState"])))
        for g, w in zip(got, want, strict=True):
            close(g, w.numpy(), dtype)


def test_defaults_filled_into_options():
    b = GraphBuilder()
    x = b.input("x", ("float32", [2, 1, 3]))
    w = b.input("w", ("float32", [1, 12, 3]))
    r = b.input("r", ("float32", [1, 12, 4]))
    outs = b.gru(x, w, r, 2, 4)
    assert [o.shape for o in outs] == [[1, 1, 4]]
    opts = b.graph.operations[-1].options
    assert opts["activations"] == ["sigmoid", "tanh"] and opts["resetAfter"] is True
    assert opts["layout"] == "zrn" and opts["direction"] == "forward" and opts["returnSequence"] is False
    outs = b.lstm(x, b.input("w2", ("float32", [2, 16, 3])), b.input("r2", ("float32", [2, 16, 4])), 2, 4,
                  direction="both", returnSequence=True)
    assert [o.shape for o in outs] == [[2, 1, 4], [2, 1, 4], [2, 2, 1, 4]]
    assert b.graph.operations[-1].options["activations"] == ["sigmoid", "tanh", "tanh"]


# ---------------------------------------------------------------------------------------- validation

def _descs(op: str) -> dict[str, tuple[str, list[int]]]:
    """Valid descriptors for each op (steps 2, batch 3, input 4, hidden 5; one direction)."""
    g = 3 if op.startswith("gru") else 4
    if op in ("gru", "lstm"):
        d = {"input": [2, 3, 4], "weight": [1, g * 5, 4], "recurrentWeight": [1, g * 5, 5],
             "bias": [1, g * 5], "recurrentBias": [1, g * 5], "initialHiddenState": [1, 3, 5]}
        if op == "lstm":
            d.update(peepholeWeight=[1, 15], initialCellState=[1, 3, 5])
    else:
        d = {"input": [3, 4], "weight": [g * 5, 4], "recurrentWeight": [g * 5, 5], "hiddenState": [3, 5],
             "bias": [g * 5], "recurrentBias": [g * 5]}
        if op == "lstmCell":
            d.update(cellState=[3, 5], peepholeWeight=[15])
    return {k: ("float32", v) for k, v in d.items()}


def _build(op: str, descs: dict, **args):
    b = GraphBuilder()
    ops = {k: b.input(k, v) for k, v in descs.items()}
    scalars = {"hiddenSize": 5} | ({"steps": 2} if op in ("gru", "lstm") else {})
    return getattr(b, op)(label="rnn1", **ops, **(scalars | args))


@pytest.mark.parametrize("op", ["gru", "gruCell", "lstm", "lstmCell"])
def test_valid_descriptors_build(op):
    outs = _build(op, _descs(op))
    assert outs is not None


BAD = [
    ("input", lambda d: ("int32", d[1])), ("input", lambda d: ("float32", d[1] + [1])),
    ("weight", lambda d: ("float16", d[1])), ("weight", lambda d: ("float32", [d[1][0] + 1] + d[1][1:])),
    ("recurrentWeight", lambda d: ("float32", d[1][:-1] + [6])),
    ("bias", lambda d: ("float32", d[1][:-1] + [7])),
    ("recurrentBias", lambda d: ("float32", d[1] + [1])), ("bias", lambda d: ("float16", d[1])),
]
STATE = {"gru": ["initialHiddenState"], "lstm": ["initialHiddenState", "initialCellState", "peepholeWeight"],
         "gruCell": ["hiddenState"], "lstmCell": ["hiddenState", "cellState", "peepholeWeight"]}


@pytest.mark.parametrize("op", ["gru", "gruCell", "lstm", "lstmCell"])
def test_bad_operands(op):
    cases = BAD + [(k, lambda d: ("float32", d[1][:-1] + [d[1][-1] + 1])) for k in STATE[op]]
    for name, change in cases:
        descs = _descs(op)
        descs[name] = change(descs[name])
        with pytest.raises(WebNNTypeError, match=rf"\[rnn1\] {op}: .*{name}"):
            _build(op, descs)


@pytest.mark.parametrize("op", ["gru", "gruCell", "lstm", "lstmCell"])
@pytest.mark.parametrize("args,match", [
    ({"hiddenSize": 0}, "hiddenSize"), ({"hiddenSize": 2**31}, "hiddenSize"),
    ({"hiddenSize": -1}, "hiddenSize"),
    ({"activations": ["sigmoid"]}, "activations"), ({"activations": ["sigmoid", "gelu", "tanh"]}, "gelu"),
    ({"layout": "nzr"}, "layout"),
])
def test_bad_values(op, args, match):
    with pytest.raises(WebNNTypeError, match=rf"\[rnn1\] {op}: .*{match}"):
        _build(op, _descs(op), **args)


@pytest.mark.parametrize("op", ["gru", "lstm"])
@pytest.mark.parametrize("args,match", [
    ({"steps": 3}, "steps"), ({"steps": 0}, "steps"), ({"direction": "both"}, "weight"),
    ({"direction": "sideways"}, "direction"), ({"returnSequence": 1}, "returnSequence"),
])
def test_bad_sequence_values(op, args, match):
    with pytest.raises(WebNNTypeError, match=rf"\[rnn1\] {op}: .*{match}"):
        _build(op, _descs(op), **args)


def test_gru_layout_names_are_not_lstm_layouts():
    with pytest.raises(WebNNTypeError, match=r"gru: .*'iofg'.*MLGruWeightLayout"):
        _build("gru", _descs("gru"), layout="iofg")
    with pytest.raises(WebNNTypeError, match=r"lstmCell: .*'zrn'.*MLLstmWeightLayout"):
        _build("lstmCell", _descs("lstmCell"), layout="zrn")

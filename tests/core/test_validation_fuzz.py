"""Property: validating ANY call of ANY operator row returns valid descriptors or raises WebNNTypeError.

Random descriptors (every data type, ranks 0-5, dimensions 1-5 and now and then huge) and random argument
values (integers negative and huge, floats with NaN/inf, enum strings real and bogus, sequences of any length,
values of the wrong kind) are fed to `py_core.spec.validate` for every row of `py_core.spec.OPS`.  An
IndexError, ValueError, ZeroDivisionError, OverflowError, AssertionError... from an `infer` is a bug: the
page would see an engine crash instead of the TypeError the spec requires.  A call that validates must also
keep its options as they were and infer the same outputs from its normalized options
(tests/core/normalization_check.py).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from normalization_check import check_normalization

from py_core.errors import WebNNTypeError
from py_core.spec import OPS, validate
from py_core.spec.table import (
    BOOLEAN,
    DATA_TYPE,
    DOUBLE,
    ENUM,
    ENUMS,
    FLOAT,
    FLOATS_SEQ,
    LONG,
    LONGS,
    NUMBER,
    OPERAND,
    OPERANDS,
    ULONG,
    ULONG_OR_ULONGS,
    ULONGS,
    OpSpec,
    Param,
)
from py_core.types import MAX_DIMENSION, DataType, OperandDescriptor

# modest by default; WEBNN_FUZZ_EXAMPLES=2000 for a deep run
MAX_EXAMPLES = int(os.environ.get("WEBNN_FUZZ_EXAMPLES", "30"))
# make test replays the same examples every run (a CI failure reproduces); a deep run explores afresh
DERANDOMIZE = "WEBNN_FUZZ_EXAMPLES" not in os.environ
ALL_TYPES = sorted(DataType, key=lambda t: t.value)
HUGE = [2**16, 2**20, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40, 2**63, -(2**31), -(2**63)]

small_dim = st.integers(1, 5)
dim = st.one_of(small_dim, small_dim, small_dim, small_dim, small_dim, small_dim,
                st.sampled_from([2**16, 2**31 - 1, 2**32 - 1]))
shape = st.lists(dim, min_size=0, max_size=5).map(tuple)
ints = st.one_of(st.integers(-3, 8), st.integers(-3, 8), st.integers(-(2**40), 2**40), st.sampled_from(HUGE))
floats = st.one_of(st.floats(-10, 10), st.floats(allow_nan=True, allow_infinity=True), ints)
junk = st.one_of(st.none(), st.text(max_size=4), st.lists(st.integers(0, 3), max_size=2), st.booleans(),
                 st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


def _value(p: Param) -> st.SearchStrategy[Any]:
    """Random values for a non-operand parameter, mostly of its kind, sometimes of the wrong kind."""
    k = p.kind
    enum_str = st.one_of(st.sampled_from(p.enum or ("x",)), st.sampled_from(p.enum or ("x",)),
                         st.text(max_size=6))
    by_kind: dict[str, st.SearchStrategy[Any]] = {
        ULONG: ints,
        LONG: ints,
        ULONGS: st.lists(ints, max_size=6),
        LONGS: st.lists(ints, max_size=6),
        ULONG_OR_ULONGS: st.one_of(ints, st.lists(ints, max_size=6)),
        DOUBLE: floats,
        FLOAT: floats,
        FLOATS_SEQ: st.lists(floats, max_size=6),
        BOOLEAN: st.booleans(),
        NUMBER: st.one_of(floats, st.sampled_from(HUGE), st.integers(-(2**70), 2**70)),
        ENUM: enum_str,
        ENUMS: st.lists(enum_str, max_size=4),
        DATA_TYPE: st.one_of(st.sampled_from([t.value for t in ALL_TYPES]), st.text(max_size=8)),
    }
    return st.one_of(*([by_kind[k]] * 9), junk)


def _sane_value(p: Param) -> st.SearchStrategy[Any]:
    """Plausible values (small, in range, valid enums) so that inference gets past the argument checks."""
    k = p.kind
    small = st.integers(0, 3)
    enum_ok = st.sampled_from(p.enum or ("x",))
    by_kind: dict[str, st.SearchStrategy[Any]] = {
        ULONG: small,
        LONG: st.integers(-3, 3),
        ULONGS: st.lists(small, max_size=5),
        LONGS: st.lists(st.integers(-3, 3), max_size=5),
        ULONG_OR_ULONGS: st.one_of(small, st.lists(small, max_size=4)),
        DOUBLE: st.floats(-4, 4),
        FLOAT: st.floats(-4, 4),
        FLOATS_SEQ: st.lists(st.floats(0.25, 4), max_size=4),
        BOOLEAN: st.booleans(),
        NUMBER: st.one_of(st.floats(-4, 4), st.integers(-4, 4)),
        ENUM: enum_ok,
        ENUMS: st.lists(enum_ok, max_size=3),
        DATA_TYPE: st.sampled_from([t.value for t in ALL_TYPES]),
    }
    return by_kind[k]


def _ranked_shape(p: Param) -> st.SearchStrategy[tuple[int, ...]]:
    lo, hi = p.ranks
    return st.lists(st.integers(1, 3), min_size=min(lo, 5), max_size=max(min(hi, 5), min(lo, 5))).map(tuple)


@st.composite
def _descriptor(draw: st.DrawFn, p: Param, base_type: DataType, base_shape: tuple[int, ...]
                ) -> OperandDescriptor:
    """Mostly the call's shared type/shape (so inference goes deep), otherwise anything."""
    allowed = sorted(p.types, key=lambda t: t.value) or ALL_TYPES
    dtype = draw(st.one_of(st.just(base_type), st.sampled_from(allowed), st.sampled_from(ALL_TYPES)))
    shp = draw(st.one_of(st.just(base_shape), st.just(base_shape), shape, _ranked_shape(p), _ranked_shape(p),
                         st.just(base_shape[-2:]), st.just(base_shape[:1])))
    return OperandDescriptor(dtype, tuple(shp))


@st.composite
def calls(draw: st.DrawFn, spec: OpSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(operand descriptors by name, argument values by name) for one random call of `spec`: either a
    plausible call (valid kinds, small values, ranks in range) or a wild one."""
    sane = draw(st.booleans())
    first = spec.operand_params[0] if spec.operand_params else None
    first_types = sorted(first.types, key=lambda t: t.value) if first and first.types else ALL_TYPES
    base_type = draw(st.sampled_from(first_types))
    base_shape = draw(_ranked_shape(first) if first and sane else shape)
    operands: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for p in spec.params + spec.options:
        present = True if p.required else draw(st.booleans())
        if not present:
            continue
        if p.kind == OPERAND:
            operands[p.name] = draw(_descriptor(p, base_type, base_shape))
        elif p.kind == OPERANDS:
            operands[p.name] = draw(st.lists(_descriptor(p, base_type, base_shape), min_size=0, max_size=4))
        else:
            values[p.name] = draw(_sane_value(p) if sane else _value(p))
    return operands, values


# Valid calls for the operators whose operands must agree on several dimensions at once (random shapes
# almost never get past their first checks); the fuzzer mutates them one to three times.
F, I = DataType.FLOAT32, DataType.INT32
SEEDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "batchNormalization": ({"input": (F, (2, 3, 4)), "mean": (F, (3,)), "variance": (F, (3,)),
                            "scale": (F, (3,)), "bias": (F, (3,))}, {"axis": 1, "epsilon": 1e-5}),
    "conv2d": ({"input": (F, (1, 2, 5, 5)), "filter": (F, (4, 1, 3, 3)), "bias": (F, (4,))},
               {"padding": [1, 1, 1, 1], "strides": [2, 2], "dilations": [1, 1], "groups": 2}),
    "convTranspose2d": ({"input": (F, (1, 2, 3, 3)), "filter": (F, (2, 3, 3, 3)), "bias": (F, (3,))},
                        {"padding": [1, 1, 1, 1], "strides": [2, 2], "outputPadding": [1, 1]}),
    "gemm": ({"a": (F, (2, 3)), "b": (F, (3, 4)), "c": (F, (4,))}, {"alpha": 2.0, "bTranspose": False}),
    "averagePool2d": ({"input": (F, (1, 2, 5, 5))}, {"windowDimensions": [3, 3], "strides": [2, 2]}),
    "l2Pool2d": ({"input": (F, (1, 2, 5, 5))}, {"windowDimensions": [2, 2], "padding": [1, 0, 1, 0]}),
    "maxPool2d": ({"input": (F, (1, 5, 5, 2))}, {"windowDimensions": [3, 3], "layout": "nhwc"}),
    "resample2d": ({"input": (F, (1, 1, 2, 3))}, {"mode": "linear", "sizes": [4, 6], "axes": [2, 3]}),
    "pad": ({"input": (F, (2, 3))}, {"beginningPadding": [1, 0], "endingPadding": [0, 2], "mode": "edge"}),
    "gru": ({"input": (F, (2, 1, 3)), "weight": (F, (1, 6, 3)), "recurrentWeight": (F, (1, 6, 2)),
             "bias": (F, (1, 6)), "recurrentBias": (F, (1, 6)), "initialHiddenState": (F, (1, 1, 2))},
            {"steps": 2, "hiddenSize": 2, "returnSequence": True}),
    "gruCell": ({"input": (F, (1, 3)), "weight": (F, (6, 3)), "recurrentWeight": (F, (6, 2)),
                 "hiddenState": (F, (1, 2)), "bias": (F, (6,)), "recurrentBias": (F, (6,))},
                {"hiddenSize": 2}),
    "lstm": ({"input": (F, (2, 1, 3)), "weight": (F, (1, 8, 3)), "recurrentWeight": (F, (1, 8, 2)),
              "bias": (F, (1, 8)), "recurrentBias": (F, (1, 8)), "peepholeWeight": (F, (1, 6)),
              "initialHiddenState": (F, (1, 1, 2)), "initialCellState": (F, (1, 1, 2))},
             {"steps": 2, "hiddenSize": 2, "returnSequence": True}),
    "lstmCell": ({"input": (F, (1, 3)), "weight": (F, (8, 3)), "recurrentWeight": (F, (8, 2)),
                  "hiddenState": (F, (1, 2)), "cellState": (F, (1, 2)), "bias": (F, (8,)),
                  "recurrentBias": (F, (8,)), "peepholeWeight": (F, (6,))}, {"hiddenSize": 2}),
    "scatterND": ({"input": (F, (4, 4)), "indices": (I, (2, 1)), "updates": (F, (2, 4))}, {}),
    "scatterElements": ({"input": (F, (3, 3)), "indices": (I, (2, 3)), "updates": (F, (2, 3))}, {"axis": 0}),
    "gatherND": ({"input": (F, (2, 3, 4)), "indices": (I, (5, 2))}, {}),
    "split": ({"input": (F, (6, 2))}, {"splits": [2, 4], "axis": 0}),
    "concat": ({"inputs": [(F, (2, 3)), (F, (4, 3))]}, {"axis": 0}),
    "dequantizeLinear": ({"input": (DataType.UINT8, (2, 4)), "scale": (F, (2, 4)),
                          "zeroPoint": (DataType.UINT8, (2, 4))}, {}),
    "quantizeLinear": ({"input": (F, (2, 4)), "scale": (F, (2, 4)),
                        "zeroPoint": (DataType.INT8, (2, 4))}, {}),
    "where": ({"condition": (DataType.UINT8, (2, 1)), "trueValue": (F, (2, 3)), "falseValue": (F, (3,))}, {}),
}


def _seed_operands(spec: OpSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    ops, values = SEEDS[spec.name]
    out: dict[str, Any] = {}
    for name, v in ops.items():
        out[name] = [OperandDescriptor(t, s) for t, s in v] if isinstance(v, list) else OperandDescriptor(*v)
    return out, dict(values)


@st.composite
def mutated(draw: st.DrawFn, spec: OpSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid seed call with one to three random changes: a dimension, a rank, a data type, an optional
    operand dropped, or an argument value replaced by a plausible or a wild one."""
    operands, values = _seed_operands(spec)
    params = {p.name: p for p in spec.params + spec.options}
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["dim", "rank", "type", "drop", "value", "value"]))
        if what in ("dim", "rank", "type", "drop") and operands:
            name = draw(st.sampled_from(sorted(operands)))
            d = operands[name]
            if isinstance(d, list):
                if not d:
                    continue
                i = draw(st.integers(0, len(d) - 1))
                target = d[i]
            else:
                target = d
            if what == "dim" and target.shape:
                j = draw(st.integers(0, len(target.shape) - 1))
                new_shape = list(target.shape)
                new_shape[j] = draw(dim)
                new = OperandDescriptor(target.data_type, tuple(new_shape))
            elif what == "rank":
                new = OperandDescriptor(target.data_type, draw(shape))
            elif what == "type":
                new = OperandDescriptor(draw(st.sampled_from(ALL_TYPES)), target.shape)
            else:
                if params[name].required:
                    continue
                del operands[name]
                continue
            if isinstance(d, list):
                d[i] = new
            else:
                operands[name] = new
        else:
            choices = [p for p in params.values() if not p.is_operand]
            if not choices:
                continue
            p = draw(st.sampled_from(choices))
            values[p.name] = draw(st.one_of(_sane_value(p), _value(p)))
    return operands, values


def _check_outputs(spec: OpSpec, outs: Any) -> None:
    assert isinstance(outs, list) and outs, f"{spec.name}: no outputs"
    if spec.returns == "operand":
        assert len(outs) == 1, f"{spec.name}: {len(outs)} outputs for a single-output operator"
    for d in outs:
        assert isinstance(d, OperandDescriptor), f"{spec.name}: output {d!r} is not a descriptor"
        assert isinstance(d.data_type, DataType)
        assert isinstance(d.shape, tuple) and all(type(x) is int for x in d.shape), d
        assert all(0 < x <= MAX_DIMENSION for x in d.shape), d
        assert d.element_count <= MAX_DIMENSION, d


def _validate(spec: OpSpec, operands: dict[str, Any], values: dict[str, Any]) -> None:
    try:
        outs = validate(spec, operands, values, "fuzz")
    except WebNNTypeError as e:
        assert str(e).startswith(f"[fuzz] {spec.name}:"), f"error does not name the op and label: {e}"
        return
    except Exception as e:
        print(f"VALIDATOR CRASH in {spec.name}: {type(e).__name__}: {e}\n  operands={operands}\n"
              f"  values={values}")
        raise
    _check_outputs(spec, outs)
    check_normalization(spec, operands, values)


@pytest.mark.parametrize("name", sorted(OPS))
def test_validation_only_raises_type_error(name: str) -> None:
    spec = OPS[name]

    strategy = st.one_of(calls(spec), mutated(spec)) if name in SEEDS else calls(spec)

    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=DERANDOMIZE,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(call=strategy)
    def run(call: tuple[dict[str, Any], dict[str, Any]]) -> None:
        _validate(spec, *call)

    run()


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_calls_are_valid(name: str) -> None:
    """The fuzzer's seeds must be valid calls, or mutating them explores nothing."""
    if name not in OPS:
        pytest.fail(f"{name} has no spec row")
    outs = validate(OPS[name], *_seed_operands(OPS[name]), "seed")
    _check_outputs(OPS[name], outs)

"""GraphBuilder behaviours the spec requires of MLGraphBuilder.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from py_core.builder import GraphBuilder, graph_from_json
from py_core.errors import InvalidStateError, WebNNTypeError
from py_core.runtime.executor import prepare

F32 = "float32"


def desc(*shape: int, dtype: str = F32) -> dict[str, object]:
    return {"dataType": dtype, "shape": list(shape)}


# ----------------------------------------------------------------------------------------- inputs

@pytest.mark.parametrize("name", ["", None, 3])
def test_input_name_must_be_a_non_empty_string(name: object) -> None:
    message = rf"^input: the name must be a non-empty string, got {re.escape(repr(name))}$"
    with pytest.raises(WebNNTypeError, match=message):
        GraphBuilder().input(name, desc(2))  # type: ignore[arg-type]


def test_duplicate_input_name() -> None:
    b = GraphBuilder()
    b.input("x", desc(2))
    with pytest.raises(WebNNTypeError, match="already exists"):
        b.input("x", desc(3))


def test_duplicate_input_name_refused_at_build_when_both_feed_the_outputs() -> None:
    """Chromium's rule (duplicate_names_at_build): input() accepts the name, build() names it."""
    b = GraphBuilder(duplicate_names_at_build=True)
    x1, x2 = b.input("x", desc(2)), b.input("x", desc(2))
    y = b.add(x1, x2)
    with pytest.raises(WebNNTypeError, match=r"^build: two inputs named 'x' feed the outputs"):
        b.build({"y": y})
    # only one of them reachable: it builds, under that name, and runs
    b = GraphBuilder(duplicate_names_at_build=True)
    b.input("x", desc(3))
    used = b.input("x", desc(2))
    g = b.build({"y": b.relu(used)})
    assert g.inputs == {"x": used.id}
    out = prepare(g).run({"x": np.array([-1, 2], np.float32)})["y"]
    np.testing.assert_array_equal(out, [0, 2])
    assert graph_from_json(g.to_json()).inputs == {"x": used.id}


def test_rank_above_the_limit_is_refused_by_input_and_constant() -> None:
    """"Check dimensions": rank 9 is more than opSupportLimits().input/constant rankRange.max (8)."""
    nine = {"dataType": "int8", "shape": [1] * 9}
    with pytest.raises(WebNNTypeError, match=r"^input 'x': int8\[1(, 1){8}\] has rank 9, more than the supported 8$"):
        GraphBuilder().input("x", nine)
    with pytest.raises(WebNNTypeError, match=r"^constant: .* has rank 9"):
        GraphBuilder().constant(nine, np.zeros([1] * 9, np.int8))
    assert GraphBuilder().input("x", {"dataType": "int8", "shape": [1] * 8}).shape == [1] * 8


def test_check_dimensions_order() -> None:
    """The draft's order: an invalid dimension before the rank, the rank before the element count."""
    with pytest.raises(WebNNTypeError, match=r"dimension 0 of"):
        GraphBuilder().input("x", {"dataType": "int8", "shape": [1] * 8 + [0]})
    with pytest.raises(WebNNTypeError, match=r"has rank 9"):
        GraphBuilder().input("x", {"dataType": "int8", "shape": [2**16] * 9})


def test_shape_is_required() -> None:
    """An earlier draft's `dimensions` is no member of MLOperandDescriptor: without `shape`, TypeError."""
    with pytest.raises(WebNNTypeError, match=r"^input 'x': required member shape is missing$"):
        GraphBuilder().input("x", {"dataType": "float16", "dimensions": [1]})


@pytest.mark.parametrize("shape", [[0], [2, 0, 3], [2**31], [2**32 - 1], [2**32], [1, 2**32 + 5], [-1]])
def test_invalid_dimensions(shape: list[int]) -> None:
    bad = next(d for d in shape if not 0 < d < 2**31)
    with pytest.raises(WebNNTypeError, match=rf"^input 'x': dimension {bad} of float32\[.*\] is not a valid "
                                             rf"dimension \(1 \.\. 2147483647\)"):
        GraphBuilder().input("x", {"dataType": F32, "shape": shape})


def test_largest_dimension_is_the_largest_long() -> None:
    # a valid dimension is "greater than zero and in the range of long" (Chromium: int32_t), not unsigned long;
    # uint8 keeps 2^31-1 elements exactly at maxTensorByteLength
    op = GraphBuilder().input("x", {"dataType": "uint8", "shape": [2**31 - 1]})
    assert op.shape == [2**31 - 1]
    with pytest.raises(WebNNTypeError, match=r"dimension 2147483648 of uint8\[2147483648\] is not a valid"):
        GraphBuilder().input("x", {"dataType": "uint8", "shape": [2**31]})
    with pytest.raises(WebNNTypeError, match=r"int32\[1073741824\] is 4294967296 bytes, more than maxTensorByteLength"):
        GraphBuilder().input("x", {"dataType": "int32", "shape": [2**30]})


@pytest.mark.parametrize("shape", [[2**16, 2**15], [2**16, 2**16], [2**11, 2**11, 2**11], [65536, 65537]])
def test_element_count_overflow(shape: list[int]) -> None:
    count = int(np.prod(shape, dtype=object))
    with pytest.raises(WebNNTypeError, match=rf"^input 'x': uint8\[.*\] has {count} elements, more than a "
                                             rf"valid dimension \(2147483647\)"):
        GraphBuilder().input("x", {"dataType": "uint8", "shape": shape})


def _offending(bad: object) -> object:
    """The value an invalid descriptor's message must quote: the bad member, or the whole non-dictionary."""
    if not isinstance(bad, dict):
        return bad
    return bad["dataType"] if bad["dataType"] != F32 else bad["shape"]


@pytest.mark.parametrize("bad", [{"dataType": "float64", "shape": [2]}, {"dataType": F32, "shape": "2"},
                                 {"dataType": F32, "shape": [True]}, {"dataType": F32, "shape": [2.5]},
                                 "float32", None])
def test_invalid_descriptor(bad: object) -> None:
    with pytest.raises(WebNNTypeError, match=rf"^input 'x'.*{re.escape(repr(_offending(bad)))}"):
        GraphBuilder().input("x", bad)


def test_constant_byte_length_must_match() -> None:
    with pytest.raises(WebNNTypeError, match=r"^constant: buffer has 20 bytes but float32\[2, 3\] needs 24$"):
        GraphBuilder().constant(desc(2, 3), np.zeros(5, np.float32))


# ------------------------------------------------------------------------------------- operations

def test_operand_from_another_builder() -> None:
    a, b = GraphBuilder(), GraphBuilder()
    x = a.input("x", desc(2))
    y = b.input("y", desc(2))
    with pytest.raises(WebNNTypeError, match="another MLGraphBuilder"):
        b.add(x, y)
    with pytest.raises(WebNNTypeError, match="another MLGraphBuilder"):
        b.concat([y, x], 0)
    with pytest.raises(WebNNTypeError, match="^gemm: operand 'c' was created by another MLGraphBuilder$"):
        b.gemm(b.reshape(y, [1, 2]), b.reshape(y, [2, 1]), options={"c": x})


def test_non_operand_argument() -> None:
    b = GraphBuilder()
    x = b.input("x", desc(2))
    with pytest.raises(WebNNTypeError, match=r"^add: 'b' must be an MLOperand, got float$"):
        b.add(x, 1.0)


def test_validation_error_names_op_and_label() -> None:
    b = GraphBuilder()
    x = b.input("x", desc(2, 3))
    y = b.input("y", desc(4, 5))
    with pytest.raises(WebNNTypeError, match=r"^\[enc/add1\] add: .*\[2, 3\].*\[4, 5\]"):
        b.add(x, y, label="enc/add1")


def test_unknown_operator() -> None:
    b = GraphBuilder()
    with pytest.raises(AttributeError, match="noSuchOp"):
        b.noSuchOp  # noqa: B018
    with pytest.raises(WebNNTypeError, match=r"^unknown operator 'noSuchOp'$"):
        b.call("noSuchOp", {})


# ------------------------------------------------------------------------------------------ build

def _small_graph() -> tuple[GraphBuilder, object, object]:
    b = GraphBuilder()
    x = b.input("x", desc(2, 3))
    c = b.constant(desc(2, 3), np.arange(6, dtype=np.float32))
    return b, x, c


def test_build_twice_is_invalid_state() -> None:
    b, x, c = _small_graph()
    out = b.add(x, c)
    b.build({"out": out})
    built = r"^MLGraphBuilder: build\(\) has already been called on this builder$"
    with pytest.raises(InvalidStateError, match=built):
        b.build({"out": out})
    with pytest.raises(InvalidStateError, match=built):
        b.input("z", desc(1))
    with pytest.raises(InvalidStateError, match=built):
        b.relu(x)


@pytest.mark.parametrize("which", ["input", "constant"])
def test_build_rejects_input_or_constant_as_output(which: str) -> None:
    b, x, c = _small_graph()
    b.add(x, c)
    with pytest.raises(WebNNTypeError, match=r"^build: output 'out' is an input or constant operand"):
        b.build({"out": x if which == "input" else c})
    # the failed build did not consume the builder
    assert b.build({"out": b.relu(x)}).outputs


def test_build_rejects_bad_outputs() -> None:
    b, x, c = _small_graph()
    out = b.add(x, c)
    with pytest.raises(WebNNTypeError, match=r"^build: at least one output is required$"):
        b.build({})
    with pytest.raises(WebNNTypeError, match=r"^build: output names must be non-empty strings, got ''$"):
        b.build({"": out})
    other = GraphBuilder()
    with pytest.raises(WebNNTypeError, match=r"^build: output 'o' is not an MLOperand of this builder$"):
        b.build({"o": other.relu(other.input("x", desc(1)))})


def test_build_prunes_unused_operations_and_inputs() -> None:
    b = GraphBuilder()
    x = b.input("x", desc(2, 3))
    unused_in = b.input("unused", desc(4))
    c = b.constant(desc(2, 3), np.ones(6, np.float32))
    dead_const = b.constant(desc(4), np.ones(4, np.float32))
    b.mul(unused_in, dead_const)  # dead branch
    keep = b.add(x, c)
    b.relu(keep)  # consumer of a kept value, itself unused
    out = b.sigmoid(keep)
    g = b.build({"out": out})
    assert [op.op for op in g.operations] == ["add", "sigmoid"]
    assert set(g.inputs) == {"x"}
    assert set(g.constants) == {c.id}
    exe = prepare(g)
    res = exe.run({"x": np.zeros((2, 3), np.float32)})
    np.testing.assert_allclose(res["out"], np.full((2, 3), 1 / (1 + np.exp(-1)), np.float32), rtol=1e-6)


def test_pruning_keeps_every_output_of_a_multi_output_op() -> None:
    b = GraphBuilder()
    x = b.input("x", desc(4, 2))
    first, second = b.split(x, 2)
    g = b.build({"first": first})
    (split_op,) = g.operations
    assert split_op.op == "split" and len(split_op.outputs) == 2
    assert all(i in g.operands for i in split_op.outputs)
    assert prepare(g).run({"x": np.arange(8, dtype=np.float32).reshape(4, 2)})["first"].shape == (2, 2)


# -------------------------------------------------------------------------------- JSON round trip

def _built() -> tuple[object, dict[int, np.ndarray]]:
    b = GraphBuilder()
    x = b.input("x", desc(1, 2, 4, 4))
    w = b.constant(desc(3, 2, 3, 3), np.linspace(-1, 1, 54, dtype=np.float32))
    bias = b.constant(desc(3), np.array([0.1, -0.2, 0.3], np.float32))
    y = b.conv2d(x, w, options={"padding": [1, 1, 1, 1], "bias": bias}, label="conv")
    z = b.reduceMean(b.relu(y), options={"axes": [2, 3], "keepDimensions": True})
    g = b.build({"z": z, "y": y})
    return g, dict(g.constants)


def test_graph_from_json_round_trip() -> None:
    g, constants = _built()
    data = g.to_json()
    g2 = graph_from_json(data, constants)
    assert g2.to_json() == data
    feed = {"x": np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)}
    r1, r2 = prepare(g).run(feed), prepare(g2).run(feed)
    for k in r1:
        np.testing.assert_array_equal(r1[k], r2[k])


def _tamper(data: dict, fn) -> dict:  # type: ignore[type-arg, no-untyped-def]
    data = copy.deepcopy(data)
    fn(data)
    return data


def _output_operand(data: dict, name: str) -> dict:  # type: ignore[type-arg]
    oid = data["outputs"][name]
    return next(o for o in data["operands"] if o["id"] == oid)


@pytest.mark.parametrize(("how", "message"), [
    ("output shape", r"^\[conv\] conv2d: serialized output #\d+ \(float32\[1, 3, 4, 5\]\) does not match the inferred "
                     r"float32\[1, 3, 4, 4\]$"),
    ("output type", r"^\[conv\] conv2d: serialized output #\d+ \(float16\[1, 3, 4, 4\]\) does not match the inferred "
                    r"float32\[1, 3, 4, 4\]$"),
    ("input shape to an invalid conv", r"^\[conv\] conv2d: input channels \(5\) must equal filter input channels"),
    ("options", r"^\[conv\] conv2d: padding \[1, 1\] must have 4 values"),
    ("operator", r"^unknown operator 'noSuchOp'$"),
    ("operand ref", r"^\[conv\] conv2d: "),
])
def test_graph_from_json_rejects_tampering(how: str, message: str) -> None:
    g, constants = _built()
    data = g.to_json()

    def change(d: dict) -> None:  # type: ignore[type-arg]
        if how == "output shape":
            _output_operand(d, "y")["shape"] = [1, 3, 4, 5]
        elif how == "output type":
            _output_operand(d, "y")["dataType"] = "float16"
        elif how == "input shape to an invalid conv":
            next(o for o in d["operands"] if o["kind"] == "input")["shape"] = [1, 5, 4, 4]
        elif how == "options":
            d["operations"][0]["options"]["padding"] = [1, 1]
        elif how == "operator":
            d["operations"][1]["op"] = "noSuchOp"
        elif how == "operand ref":
            d["operations"][0]["operands"]["filter"] = d["operations"][0]["operands"]["input"]

    tampered = _tamper(data, change)
    with pytest.raises(WebNNTypeError, match=message):
        graph_from_json(tampered, constants)

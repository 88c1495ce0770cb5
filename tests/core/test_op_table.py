"""The spec table, the kernel table and the WebNN draft name exactly the same 95 operators.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import pytest

from py_core.kernels import KERNELS
from py_core.spec import OPS
from py_core.spec.table import OPERAND_KINDS, SPEC_URL
from py_core.testing.tolerance import KNOWN_OPS

# The builder methods that create operations in the MLGraphBuilder IDL of the current Editor's Draft
# (https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder; input/constant/build excluded), in the
# order of the spec's sections.  isNaN/isInfinite sit with the logical operators, roundEven with the
# element-wise unary ones.
SPEC_OPERATORS = (
    # element-wise binary
    "add", "sub", "mul", "div", "max", "min", "pow",
    # element-wise logical
    "equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual",
    "logicalNot", "logicalAnd", "logicalOr", "logicalXor", "isNaN", "isInfinite",
    # element-wise unary
    "abs", "ceil", "cos", "erf", "exp", "floor", "identity", "log", "neg", "reciprocal", "roundEven", "sign",
    "sin", "sqrt", "tan",
    # activations
    "relu", "sigmoid", "tanh", "gelu", "elu", "hardSigmoid", "hardSwish", "leakyRelu", "linear", "prelu",
    "softplus", "softsign", "clamp", "softmax",
    # reductions
    "reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax", "reduceMean", "reduceMin",
    "reduceProduct", "reduceSum", "reduceSumSquare", "argMin", "argMax", "cumulativeSum",
    # normalization
    "batchNormalization", "instanceNormalization", "layerNormalization",
    # convolution, pooling, resampling, matrix
    "conv2d", "convTranspose2d", "averagePool2d", "l2Pool2d", "maxPool2d", "resample2d", "gemm", "matmul",
    # shape and data movement
    "reshape", "transpose", "slice", "pad", "concat", "split", "expand", "tile", "reverse",
    "gather", "gatherElements", "gatherND", "scatterElements", "scatterND", "where", "triangular", "cast",
    # recurrent
    "gru", "gruCell", "lstm", "lstmCell",
    # quantization
    "quantizeLinear", "dequantizeLinear",
)


def test_spec_list_has_95_unique_names() -> None:
    assert len(SPEC_OPERATORS) == 95
    assert len(set(SPEC_OPERATORS)) == 95


def test_spec_table_matches_the_draft() -> None:
    missing = sorted(set(SPEC_OPERATORS) - set(OPS))
    extra = sorted(set(OPS) - set(SPEC_OPERATORS))
    assert not missing and not extra, f"spec rows missing: {missing}; rows not in the draft: {extra}"


def test_kernel_table_matches_the_spec_table() -> None:
    missing = sorted(set(OPS) - set(KERNELS))
    extra = sorted(set(KERNELS) - set(OPS))
    assert not missing and not extra, f"kernels missing: {missing}; kernels without a row: {extra}"


def test_kernel_table_matches_the_draft() -> None:
    assert set(KERNELS) == set(SPEC_OPERATORS), sorted(set(SPEC_OPERATORS) ^ set(KERNELS))


def test_every_draft_operator_has_a_tolerance_rule() -> None:
    assert set(SPEC_OPERATORS) <= KNOWN_OPS


@pytest.mark.parametrize("name", sorted(OPS))
def test_row_shape(name: str) -> None:
    """Every row: its key is its name, a spec URL for its docstring, operand params with non-empty types."""
    row = OPS[name]
    assert row.name == name
    assert row.url.startswith(SPEC_URL + "#api-mlgraphbuilder-") and row.url.endswith(name.lower())
    assert row.family, f"{name}: no family"
    assert row.returns in ("operand", "operands")
    names = [p.name for p in row.params + row.options]
    assert len(names) == len(set(names)), f"{name}: duplicate parameter names {names}"
    assert row.params, f"{name}: no positional parameters"
    assert row.params[0].is_operand or row.params[0].kind in OPERAND_KINDS
    for p in row.operand_params:
        assert p.types, f"{name}.{p.name}: empty data type set"
        lo, hi = p.ranks
        assert 0 <= lo <= hi, f"{name}.{p.name}: bad rank range {p.ranks}"
        if p.same_type_as:
            assert p.same_type_as in names, f"{name}.{p.name}: same_type_as names unknown {p.same_type_as}"
    for p in row.params + row.options:
        if p.enum:
            assert p.enum_name, f"{name}.{p.name}: enum without its IDL name"
    assert row.to_json()["name"] == name

"""The spec table, the kernel table, the tolerance table and the WebNN draft name exactly the same operators.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from py_core.kernels import KERNELS
from py_core.spec import OPS
from py_core.spec.table import OPERAND_KINDS, SPEC_URL
from py_core.testing.tolerance import KNOWN_OPS

# The draft's IDL, extracted from the vendored Editor's Draft (tests/data/spec/index.bs) by scripts/extract_idl.py
# (tests/core/test_extract_idl.py keeps it current): a source independent of the tables under test.
IDL = Path(__file__).resolve().parents[1] / "data" / "webnn.idl"
# graph inputs and constants are builder methods returning MLOperand, but not operators
NOT_OPERATORS = {"input", "constant"}


def draft_operators(idl: str) -> tuple[str, ...]:
    """The MLGraphBuilder methods (its interface and partial interfaces) that return MLOperand or a sequence of
    them, less input() and constant(): the draft's operators, in document order."""
    names: list[str] = []
    for body in re.findall(r"(?:partial\s+)?interface\s+MLGraphBuilder\s*\{(.*?)\};", idl, re.S):
        for match in re.finditer(r"^\s*(MLOperand|sequence<MLOperand>)\s+(\w+)\s*\(", body, re.M):
            if match.group(2) not in NOT_OPERATORS and match.group(2) not in names:
                names.append(match.group(2))
    return tuple(names)


SPEC_OPERATORS = draft_operators(IDL.read_text())


def test_the_draft_list_is_read() -> None:
    """The parser finds the draft's builder methods (a broken pattern would make every comparison vacuous)."""
    assert {"add", "conv2d", "gru", "quantizeLinear", "split"} <= set(SPEC_OPERATORS)
    assert not NOT_OPERATORS & set(SPEC_OPERATORS)


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

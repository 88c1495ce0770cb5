"""Every operator row keeps validation pure: for real calls of every operator (each WPT conformance graph's,
the validation fuzzer's seeds, and a plain call of each operator neither covers), `infer` leaves the options it
is given as they were, the options `normalize` gives infer the same outputs, and normalizing those again
changes nothing.  The fuzzer checks the same on random calls (test_validation_fuzz.py)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import wpt_dir
from normalization_check import check_normalization
from test_validation_fuzz import SEEDS, _seed_operands

import py_core.builder
from py_core.errors import WebNNTypeError
from py_core.spec import OPS, OpSpec, validate
from py_core.testing import wpt
from py_core.types import DataType, OperandDescriptor

# the required non-operand arguments of the operators the WPT cases and the seeds do not call
VALUES = {"argMax": {"axis": 1}, "argMin": {"axis": 1}, "cumulativeSum": {"axis": 1},
          "tile": {"repetitions": [2, 1]}}


def _plain_call(spec: OpSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every operand [2, 3] of the first data type it accepts, the given values from VALUES."""
    operands: dict[str, Any] = {}
    for p in spec.operand_params:
        if p.required:
            ref = operands.get(p.same_type_as)
            dt = ref.data_type if ref is not None else min(p.types, key=lambda t: list(DataType).index(t))
            operands[p.name] = OperandDescriptor(dt, (2, 3))
    return operands, dict(VALUES.get(spec.name, {}))


def _wpt_calls() -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """The arguments every WPT conformance graph binds, by operator (recorded around GraphBuilder's bind)."""
    calls: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    real_bind = py_core.builder.bind

    def recording_bind(spec: OpSpec, operands: Any, options: Any, label: str = "") -> Any:
        calls.setdefault(spec.name, []).append((dict(operands), dict(options)))
        return real_bind(spec, operands, options, label)

    py_core.builder.bind = recording_bind  # type: ignore[assignment]
    try:
        for case in wpt.load_dir(wpt_dir()):
            try:
                wpt.build_graph(case.graph)
            except Exception:  # noqa: BLE001 - a case built to fail validation still bound its calls
                pass
    finally:
        py_core.builder.bind = real_bind  # type: ignore[assignment]
    return calls


WPT_CALLS = _wpt_calls()


@pytest.mark.parametrize("name", sorted(OPS))
def test_normalized_options_infer_the_same_outputs(name: str) -> None:
    spec = OPS[name]
    calls = list(WPT_CALLS.get(name, []))
    if name in SEEDS:
        calls.append(_seed_operands(spec))
    if not calls:
        calls.append(_plain_call(spec))
    checked = 0
    for operands, values in calls:
        try:
            validate(spec, operands, values)
        except WebNNTypeError:  # WPT's validation cases: refused, nothing to normalize
            continue
        check_normalization(spec, operands, values)
        checked += 1
    assert checked, f"{name}: no valid call to check"

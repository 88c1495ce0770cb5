"""The contract between an operator's `infer` and its `normalize` (py_core/spec/table.py), checked on one call:
validating leaves the call's arguments as they were, the normalized options infer the same outputs, and
normalizing them again changes nothing (the worker re-validates what the page recorded)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from py_core.spec import OpSpec, bind, infer_outputs, normalize


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal options, NaN equal to NaN and 0 not equal to 0.0 (repr tells both apart)."""
    return sorted(a) == sorted(b) and all(repr(a[k]) == repr(b[k]) for k in a)


def check_normalization(spec: OpSpec, operands: Mapping[str, Any], values: Mapping[str, Any],
                        label: str = "check") -> dict[str, Any]:
    """Assert the contract for one valid call; its normalized options."""
    given_operands, given_values = copy.deepcopy(dict(operands)), copy.deepcopy(dict(values))
    call = bind(spec, operands, values, label)
    bound = copy.deepcopy(dict(call.options))
    outs = infer_outputs(call)
    assert _same(dict(call.options), bound), f"{spec.name}: infer changed its options {bound} -> {call.options}"
    options = normalize(call)
    assert _same(dict(call.options), bound), f"{spec.name}: normalize changed its options"
    assert _same(dict(values), given_values) and dict(operands) == given_operands, \
        f"{spec.name}: validation changed the caller's arguments"
    again = bind(spec, operands, options, label)
    assert infer_outputs(again) == outs, f"{spec.name}: options {values} normalized to {options} infer " \
                                         f"{infer_outputs(again)}, not {outs}"
    assert _same(normalize(again), options), f"{spec.name}: normalizing {options} again gives {normalize(again)}"
    return options

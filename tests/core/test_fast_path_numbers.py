"""The numbers the fast path's Python and C halves share are the same on both sides: the compiled plan's opcodes
and binary kinds (py_core/kernels/cforms.py against py_core/kernels/native/webnn_plan.c) and the fused store's
activation and bias codes (py_core/kernels/native/__init__.py against webnn_kernels.c).  A new opcode or act code
added on one side only fails here, not as a wrong kernel at run time."""

from __future__ import annotations

import re
from pathlib import Path

from py_core.kernels import cforms, native

NATIVE = Path(native.__file__).resolve().parent


def _defines(source: str, prefix: str) -> dict[str, int]:
    return {name: int(value) for name, value in re.findall(rf"^#define {prefix}(\w+) (\d+)", source, re.M)}


def _enum(source: str, first: str) -> dict[str, int]:
    body = re.search(rf"enum \{{ ({first} = 0[^}}]*)\}};", source)
    assert body, f"no enum starting with {first}"
    return {name: int(value) for name, value in re.findall(r"(\w+) = (\d+)", body.group(1))}


def test_plan_opcodes_match() -> None:
    c = _defines((NATIVE / "webnn_plan.c").read_text(), "PLAN_")
    assert len(c) >= 19, c
    assert {name: getattr(cforms, name, None) for name in c} == c


def test_plan_binary_kinds_match() -> None:
    c = _defines((NATIVE / "webnn_plan.c").read_text(), "BIN_")
    python = {"ADD": cforms.BINARY_KINDS[cforms.np.add], "SUB": cforms.BINARY_KINDS[cforms.np.subtract],
              "MUL": cforms.BINARY_KINDS[cforms.np.multiply], "DIV": cforms.BINARY_KINDS[cforms.np.divide],
              "PRELU": cforms.PRELU}
    assert python == c


def test_act_and_bias_codes_match() -> None:
    source = (NATIVE / "webnn_kernels.c").read_text()
    for first in ("ACT_NONE", "BIAS_NONE"):
        c = _enum(source, first)
        assert {name: getattr(native, name, None) for name in c} == c

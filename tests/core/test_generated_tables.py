"""polyfill/src/generated/ (scripts/gen_op_table.py, run by make build): the JS side's data types, byte sizes,
integer ranges and limits are py_core/types.py's, and the builder signatures are the spec table's."""

from __future__ import annotations

import json
from pathlib import Path

from scriptfiles import load_script

from py_core.spec import OPS
from py_core.types import INT_RANGES, MAX_DIMENSION, MAX_UNSIGNED_LONG, DataType

gen = load_script("gen_op_table")


def test_generated_json_is_what_types_py_says(tmp_path: Path) -> None:
    assert gen.main(["gen_op_table.py", str(tmp_path)]) == 0
    t = json.loads((tmp_path / "types.json").read_text())
    assert t["dataTypes"] == ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]
    assert t["dataTypes"] == [d.value for d in DataType]
    assert t["bytesPerElement"] == {d.value: d.byte_size for d in DataType}
    # the byte sizes and ranges follow from each type's name: an independent check of types.py itself
    for name, size in t["bytesPerElement"].items():
        assert size == int(name.lstrip("uintfloa")) // 8  # float16 -> 2, uint64 -> 8
    assert {name: [int(lo), int(hi)] for name, (lo, hi) in t["intRanges"].items()} == {
        d.value: list(r) for d, r in INT_RANGES.items()}
    for name, (lo, hi) in t["intRanges"].items():
        bits = t["bytesPerElement"][name] * 8
        want = (0, 2**bits - 1) if name.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        assert (int(lo), int(hi)) == want
    assert t["maxDimension"] == MAX_DIMENSION == 2**31 - 1  # "in the range of long"
    assert t["maxUnsignedLong"] == MAX_UNSIGNED_LONG == 2**32 - 1
    assert [row["name"] for row in json.loads((tmp_path / "ops.json").read_text())] == list(OPS)


def test_rewrites_only_on_change(tmp_path: Path) -> None:
    gen.main(["gen_op_table.py", str(tmp_path)])
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    (tmp_path / "types.json").write_text("{}\n")
    gen.main(["gen_op_table.py", str(tmp_path)])
    assert json.loads((tmp_path / "types.json").read_text())["maxDimension"] == MAX_DIMENSION
    assert (tmp_path / "ops.json").stat().st_mtime_ns == before["ops.json"]

"""Write polyfill/src/generated/: the builder method signatures (ops.json) from the core's spec table, and the
data types with their byte sizes, integer ranges and the dimension limits (types.json) from py_core/types.py.

The JavaScript MLGraphBuilder generates one method per row, and the JS checks of descriptors and buffers read
the same data types and limits the core validates with, so the JS API can never drift from the core.
Usage: python scripts/gen_op_table.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from py_core import types  # noqa: E402
from py_core.spec import OPS  # noqa: E402


def types_table() -> dict[str, Any]:
    """MLOperandDataType in the IDL's order, bytes per element, the integer types' inclusive ranges (decimal
    strings: JS reads them with BigInt, exactly), the largest valid dimension and element count, and the
    largest unsigned long."""
    return {
        "dataTypes": [t.value for t in types.DataType],
        "bytesPerElement": {t.value: t.byte_size for t in types.DataType},
        "intRanges": {t.value: [str(lo), str(hi)] for t, (lo, hi) in types.INT_RANGES.items()},
        "maxDimension": types.MAX_DIMENSION,
        "maxUnsignedLong": types.MAX_UNSIGNED_LONG,
    }


def _write(path: Path, data: Any) -> None:
    """Rewrite only when the content changes (make compares times; the Makefile touches ops.json)."""
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "polyfill" / "src" / "generated"
    if out.suffix == ".json":  # the old usage named ops.json itself
        out = out.parent
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "ops.json", [spec.to_json() for spec in OPS.values()])
    _write(out / "types.json", types_table())
    print(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {len(OPS)} operators, "
          f"{len(types.DataType)} data types")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

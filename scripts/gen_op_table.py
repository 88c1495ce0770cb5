"""Write polyfill/src/generated/ops.json: the builder method signatures, from the core's spec table.

The JavaScript MLGraphBuilder generates one method per row, so the JS API can never drift from the core.
Usage: python scripts/gen_op_table.py [OUT]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from py_core.spec import OPS  # noqa: E402


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "polyfill" / "src" / "generated" / "ops.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps([spec.to_json() for spec in OPS.values()], indent=1, sort_keys=True) + "\n"
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    print(f"{out.relative_to(ROOT)}: {len(OPS)} operators")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

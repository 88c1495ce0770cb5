"""JSON across the JS boundary: numbers JSON cannot carry exactly travel tagged as {"$n": "<text>"}.
https://www.w3.org/TR/webnn/#typedefdef-mlnumber

JavaScript's JSON.parse rejects Infinity/NaN and rounds integers beyond 2**53, but MLNumber options (clamp
bounds, pad values, bigint constants) need both; the tag keeps them exact both ways.  NumPy-free.
"""

from __future__ import annotations

import json
import math
from typing import Any

_SAFE_INT = 2**53


def encode_numbers(v: Any) -> Any:
    """Tag non-finite floats and integers beyond 2**53 so JSON.parse keeps them."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float) and not math.isfinite(v):
        return {"$n": repr(v).replace("inf", "Infinity").replace("nan", "NaN")}
    if isinstance(v, int) and abs(v) > _SAFE_INT:
        return {"$n": str(v)}
    if isinstance(v, dict):
        return {k: encode_numbers(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode_numbers(x) for x in v]
    return v


def decode_numbers(v: Any) -> Any:
    """Undo encode_numbers (and the JS side's tags for bigint and non-finite MLNumbers)."""
    if isinstance(v, dict):
        if set(v) == {"$n"}:
            s = str(v["$n"])
            try:
                return int(s)
            except ValueError:
                return float(s)
        return {k: decode_numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode_numbers(x) for x in v]
    return v


def dumps(v: Any) -> str:
    """json.dumps that JSON.parse always accepts (allow_nan=False after tagging)."""
    return json.dumps(encode_numbers(v), allow_nan=False)


def loads(text: str) -> Any:
    """json.loads with the tags decoded."""
    return decode_numbers(json.loads(text))

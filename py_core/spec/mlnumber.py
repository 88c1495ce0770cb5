"""Casting an MLNumber (bigint or unrestricted double) to an operand data type: the one rule used by every
option that takes an MLNumber or a double cast to the input's type (clamp's minValue/maxValue, pad's value,
the normalization epsilons, the activation alphas and betas).  https://www.w3.org/TR/webnn/#algorithms-casting

The spec's "cast" steps:

- float32 / float16: ConvertToFloat(x, 32 | 16): NaN stays NaN; otherwise the nearest value with ties to
  even, where 2^128 (2^16 for float16) counts as a representable "even" value that becomes +Infinity (and
  -2^128 / -2^16 -Infinity); -0 is kept.
- integer types: ConvertToInt(x, bits, signedness): NaN -> +0, clamp to the type's range, then "round x to
  the nearest integer, choosing the even integer if it lies halfway between two".

Integers here follow the WPT vectors instead of the spec's rounding step: a non-integer truncates toward
zero.  webnn/conformance_tests/mlNumber.https.any.js, "cast fractional float to integer", expects
clamp(int64 [3, 4, 5, -1, 0], {minValue: 3.9}) to give [3, 4, 5, 3, 3], i.e. 3.9 -> 3 (ConvertToInt's
round-half-even would give 4).  Chromium does the same: services/webnn/public/cpp/ml_number.cc casts with
base::saturated_cast<T>(double), which maps NaN to 0, truncates toward zero and saturates.  Saturation and
NaN -> 0 agree with the spec.  (The spec's table also says "signed" for uint32, an evident typo: the
unsigned 32-bit range is used.)
"""

from __future__ import annotations

import math
import struct

from py_core.types import INT_RANGES, DataType

# significand bits (with the implicit leading 1) and struct format of the float types
_FLOAT_FORMATS: dict[DataType, tuple[int, str]] = {DataType.FLOAT32: (24, "f"), DataType.FLOAT16: (11, "e")}


def _round_int_to_bits(v: int, bits: int) -> int:
    """The integer nearest to v (ties to even) that has at most `bits` significant bits."""
    a = abs(v)
    extra = a.bit_length() - bits
    if extra <= 0:
        return v
    q, r = divmod(a, 1 << extra)
    half = 1 << (extra - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return (q << extra) if v > 0 else -(q << extra)


def _to_float(v: int | float, data_type: DataType) -> float:
    """ConvertToFloat: one rounding from the exact value to float32/float16, overflow to +/-Infinity."""
    bits, fmt = _FLOAT_FORMATS[data_type]
    if isinstance(v, int):
        # a bigint beyond 2^53 would be rounded twice (to double, then to the target) by float(v): round it
        # to the target's precision exactly first, after which float() is exact or overflows
        v = _round_int_to_bits(v, bits)
        try:
            v = float(v)
        except OverflowError:  # beyond the double range, so far beyond float32/float16
            return math.inf if v > 0 else -math.inf
    try:
        # struct rounds a double to nearest-even like a hardware conversion; NaN, +/-Infinity and -0.0 pass
        return float(struct.unpack(fmt, struct.pack(fmt, v))[0])
    except OverflowError:  # rounds past the largest finite value (ties at the boundary included)
        return math.copysign(math.inf, v)


def _to_int(v: int | float, data_type: DataType) -> int:
    """An integer type: NaN -> 0, truncate toward zero (the WPT vectors; see the module docstring), saturate."""
    lo, hi = INT_RANGES[data_type]
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return hi if v > 0 else lo
        v = math.trunc(v)  # also maps -0.0 to 0
    return min(max(v, lo), hi)


def cast_number(v: int | float, data_type: DataType) -> int | float:
    """Cast an MLNumber (a Python int for a bigint, a float for a double) to `data_type`'s value set.

    Returns a float exactly representable in float32/float16 (or NaN/+-Infinity/-0.0) for the float types,
    and an int within the type's range for the integer types."""
    if data_type in INT_RANGES:
        return _to_int(v, data_type)
    return _to_float(v, data_type)

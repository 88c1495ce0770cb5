"""gather kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

from collections.abc import Callable

KERNELS: dict[str, Callable[..., object]] = {}

"""matrix operators: validation and shape inference.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

from py_core.spec.table import OpSpec

ROWS: list[OpSpec] = []

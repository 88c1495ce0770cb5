"""What a user's own test looks like: `webnn_compare(graph)` runs a graph on every implementation the browser
offers and on the CPython reference, checks each, and returns the comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "graphs"


def test_tiny_cnn_on_every_implementation(webnn_compare: Any, webnn_target: Any) -> None:
    comparison = webnn_compare(GRAPHS / "tiny_cnn.json")
    assert {"polyfill", "reference"} <= set(comparison.ran())
    # no expected values in the file: the graph run in float64 is the expectation, and the pair is reported
    assert comparison.results["polyfill"].expected == "float64 reference"
    pair = next(p for p in comparison.pairs if {p.a, p.b} == {"polyfill", "reference"})
    assert pair.max_ulp <= comparison.results["polyfill"].tolerance["ulp"]
    # native WebNN is whatever the browser offers: a state, never a crash
    for label, result in comparison.results.items():
        if label.startswith("native"):
            assert result.status in ("pass", "unavailable"), result
    if webnn_target.id == "chromium-npm":
        assert "native:default" in comparison.ran(), comparison.table()


def test_inline_graph_dict(webnn_compare: Any) -> None:
    graph = {
        "inputs": {"x": {"descriptor": {"dataType": "float32", "shape": [2, 3]}, "data": [1, -2, 3, -4, 5, -6]}},
        "operators": [
            {"name": "abs", "arguments": [{"input": "x"}], "outputs": "y"},
            {"name": "reduceSum", "arguments": [{"input": "y"}, {"options": {"axes": [1]}}], "outputs": "s"},
        ],
        "expectedOutputs": {"s": {"descriptor": {"dataType": "float32", "shape": [2]}, "data": [6, 15]}},
    }
    comparison = webnn_compare(graph)
    assert comparison.results["polyfill"].status == "pass"
    assert comparison.results["polyfill"].max_ulp == 0

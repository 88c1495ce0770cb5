"""Work bounded by the graph in a real browser: a conv2d with padding 12000, strides 30000 and a convTranspose2d
(strides and padding 16000) compute the definition's values on every engine path (filter an input: the NumPy
reference kernel; filter a constant: the pre-packed kernel, C in the worker), and an implementation limit is a
WebNN error naming the op, its label and the limit, never Python or NumPy text.  Chromium is enough here: the
engine is the same Python in every browser."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pages import RUN_ONE_OP_JS as RUN_JS

pytestmark = pytest.mark.browser

X = (np.arange(25, dtype=np.float32) + 1).reshape(1, 1, 5, 5)
W = (np.arange(9, dtype=np.float32) + 1).reshape(1, 1, 3, 3)
T = (np.arange(9, dtype=np.float32) + 1).reshape(1, 1, 3, 3)

# (name, op, input, filter, options, expected output): the expected values follow from the definition by hand
CASES = [
    # padding 12000, strides 30000: the one output's window lies wholly in the padding, so it is the bias alone
    ("conv2d padding 12000 strides 30000", "conv2d", X, W, {"padding": [12000] * 4, "strides": [30000, 30000]},
     np.full((1, 1, 1, 1), 0.5)),
    # dilation 6000 puts the last tap on input (0, 0): x[0, 0] * w[2, 2] + bias
    ("conv2d with dilations 6000", "conv2d", X, W,
     {"padding": [12000] * 4, "strides": [30000, 30000], "dilations": [6000, 6000]}, np.full((1, 1, 1, 1), 9.5)),
    # stride and padding 16000: the 32003^2 scatter cropped to 3x3, where only x[1, 1] lands: x[1, 1] * w + bias
    ("convTranspose2d stride and padding 16000", "convTranspose2d", T.reshape(1, 1, 3, 3), W,
     {"padding": [16000] * 4, "strides": [16000, 16000]}, (5 * W + 0.5).reshape(1, 1, 3, 3)),
]

# How many times the same op on ordinary geometry (or 1 ms, whichever is longer) a hostile case may take
BUDGET_FACTOR = 200

PYTHON_TEXT = ("Traceback", "ValueError", "MemoryError", "numpy", "array is too big", "Unable to allocate",
               "kernel failed")


def _clean(message: str) -> None:
    for fragment in PYTHON_TEXT:
        assert fragment not in message, message


@pytest.mark.parametrize("constant_filter", [False, True], ids=["filter-input", "filter-constant"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_issue_cases_compute_the_definition(webnn_page: Any, case, constant_filter: bool) -> None:
    _, op, x, w, options, expected = case
    args = {"op": op, "x": x.ravel().tolist(), "xShape": list(x.shape), "w": w.ravel().tolist(),
            "wShape": list(w.shape), "bias": [0.5], "constantFilter": constant_filter, "label": "hostile"}
    got = webnn_page.evaluate(RUN_JS, {**args, "options": options})
    if "error" in got:
        # allowed by the acceptance line, but only as a clean WebNN error naming the op and label
        _clean(got["error"]["message"])
        assert got["error"]["message"].startswith(f"[hostile] {op}"), got["error"]
        pytest.fail(f"{op} refused a graph it can compute: {got['error']}")
    assert got["shape"] == list(expected.shape)
    np.testing.assert_allclose(np.array(got["y"]).reshape(expected.shape), expected, rtol=1e-6)
    # judged against the same op on ordinary geometry in the same page: a few times its time in practice; the
    # unbounded kernels took thousands of times longer or ran out of memory
    ordinary = min(webnn_page.evaluate(RUN_JS, {**args, "options": {}})["ms"] for _ in range(3))
    assert got["ms"] < BUDGET_FACTOR * max(ordinary, 1.0), (got["ms"], ordinary)


POOL_OPTIONS = {"windowDimensions": [20001, 20001], "padding": [10000] * 4}


@pytest.mark.parametrize("op, value", [("maxPool2d", 25.0), ("averagePool2d", 13.0)])
def test_pool_window_of_20001(webnn_page: Any, op: str, value: float) -> None:
    """Every 20001 x 20001 window covers the whole 5 x 5 input (and 20000 rows/columns of padding that are never
    materialised): the max is 25, the average over the inputs inside is 13."""
    got = webnn_page.evaluate(RUN_JS, {
        "op": op, "x": X.ravel().tolist(), "xShape": list(X.shape), "w": None, "wShape": None, "bias": None,
        "options": POOL_OPTIONS, "constantFilter": False, "label": "wide window"})
    assert "error" not in got, got
    assert got["shape"] == [1, 1, 5, 5]
    np.testing.assert_allclose(got["y"], np.full(25, value), rtol=1e-6)


def test_output_past_the_limit_is_a_clean_error(webnn_page: Any) -> None:
    """An output over maxTensorByteLength is refused at the builder call: a TypeError naming op, label, limit."""
    got = webnn_page.evaluate(RUN_JS, {
        "op": "conv2d", "x": [1, 2, 3, 4], "xShape": [1, 1, 2, 2], "w": [1], "wShape": [1, 1, 1, 1],
        "bias": [0.5], "options": {"padding": [15000] * 4}, "constantFilter": False, "label": "huge"})
    assert got["error"]["name"] == "TypeError", got
    message = got["error"]["message"]
    _clean(message)
    assert message.startswith("[huge] conv2d:") and "maxTensorByteLength (2147483647)" in message, message

"""Every vendored WPT conformance case must pass (tests/data/wpt, run by py_core.testing.wpt).

Cases of operators not yet in py_core.spec.OPS fail with a clear message: they are not skipped, so they
start passing as soon as the operator lands.  Cases whose data the JSON conversion damaged are xfailed."""

from __future__ import annotations

import pytest
from helpers import wpt_dir

from py_core.testing import wpt

DATA = wpt_dir()
CASES = wpt.load_dir(DATA)


def test_vendored_cases_are_present() -> None:
    """The vendored set is the 56-file, 1111-case snapshot named in tests/data/wpt/README.md."""
    assert len(list(DATA.glob("*.json"))) == 56
    assert len(CASES) == 1111
    assert (DATA / "LICENSE.md").is_file() and (DATA / "README.md").is_file()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_wpt_case(case: wpt.Case) -> None:
    result = wpt.run_case(case)
    if result.status == wpt.INVALID:
        pytest.xfail(f"vendored case data unusable: {result.message}")
    if result.status == wpt.UNSUPPORTED:
        pytest.fail(f"{case.op} is not implemented yet: {result.message}", pytrace=False)
    assert result.status == wpt.PASS, (
        f"{result.status}: {result.message} (max {result.max_ulp} ULP, {result.max_abs} abs, "
        f"tolerance {result.tolerance})")


# ------------------------------------------------------------------------------ the tolerance rules

def test_ulp_distance_on_bit_patterns() -> None:
    import numpy as np

    from py_core.testing.tolerance import ulp_distance

    one = np.float32(1.0)
    assert ulp_distance(one, np.nextafter(one, np.float32(2)), "float32") == 1
    assert ulp_distance(-0.0, 0.0, "float32") == 0
    # across zero: the two smallest subnormals are 2 ULP apart
    tiny = np.float32(1e-45)
    assert ulp_distance(tiny, -tiny, "float32") == 2
    h = np.float16(1.0)
    assert ulp_distance(h, np.nextafter(h, np.float16(2)), "float16") == 1
    assert ulp_distance(np.float32(np.inf), np.finfo(np.float32).max, "float32") == 1
    assert ulp_distance(np.nan, np.nan, "float16") == 0
    assert ulp_distance(np.nan, 1.0, "float32") == np.inf
    # 64-bit integers stay exact
    assert ulp_distance(np.int64(2**63 - 1), np.int64(2**63 - 2), "int64") == 1


def test_tolerance_table_rules() -> None:
    from py_core.testing.tolerance import OpUnderTest, Tolerance, check, graph_tolerance, tolerance_for

    assert tolerance_for("add", "float32") == Tolerance(ulp=1)
    assert tolerance_for("sigmoid", "float16") == Tolerance(ulp=10)
    assert tolerance_for("transpose", "int64") == Tolerance()
    assert tolerance_for("cos", "float16") == Tolerance(atol=1 / 512)
    assert tolerance_for("quantizeLinear", "uint8") == Tolerance(ulp=1)
    assert tolerance_for("add", "int32") == Tolerance()
    # conv2d: filter window x input channels / groups x 2, with layouts
    conv = OpUnderTest("conv2d", ((1, 5, 5, 4), (3, 3, 2, 6)), {"inputLayout": "nhwc", "filterLayout": "hwio",
                                                              "groups": 2})
    assert tolerance_for(conv, "float32").ulp == 3 * 3 * 2 * 2
    assert tolerance_for(OpUnderTest("matmul", ((2, 7), (7, 3))), "float32").ulp == 14
    gemm = OpUnderTest("gemm", ((4, 5), (5, 2), (2,)), {"c": "gemmC", "alpha": 2.0, "beta": 0.5})
    assert tolerance_for(gemm, "float32").ulp == 5 * 2 + 3
    assert tolerance_for(OpUnderTest("softmax", ((3, 6),), {"axis": 1}), "float32").ulp == 21
    red = OpUnderTest("reduceL2", ((2, 3, 4),), {"axes": [0, -1]})
    assert tolerance_for(red, "float32").ulp == 8 * 2 + 2
    assert tolerance_for(OpUnderTest("reduceSum", ((2, 3),), {"axes": []}), "float32").ulp == 1
    assert tolerance_for(OpUnderTest("averagePool2d", ((1, 2, 4, 4),)), "float32").ulp == 18
    assert tolerance_for(OpUnderTest("resample2d", ((1, 1, 2, 2),), {"mode": "linear"}), "float16").ulp == 10
    # a graph sums its operators' budgets
    assert graph_tolerance(["add", "sigmoid", "transpose"], "float32") == Tolerance(ulp=35)
    assert check(["exp"], [1.0000001], [1.0], "float32").ok
    assert not check(["abs"], [1.0000001], [1.0], "float32").ok
    assert check(["log"], [1.0009], [1.0], "float32").ok and not check(["log"], [1.0011], [1.0], "float32").ok



# ------------------------------------------------------------------------------- the runner itself

def _case(graph: dict) -> wpt.Case:  # type: ignore[type-arg]
    return wpt.Case("synthetic", "case", graph)


def _graph(operators: list, expected: dict, inputs: dict | None = None) -> dict:  # type: ignore[type-arg]
    base = {
        "x": {"data": [1.0, -2.0, 3.0, -4.0, 5.0, -6.0],
              "descriptor": {"shape": [2, 3], "dataType": "float32"}},
        "w": {"data": [0.5, 0.5, 0.5], "descriptor": {"shape": [3], "dataType": "float32"}, "constant": True},
    }
    return {"inputs": inputs or base, "operators": operators, "expectedOutputs": expected}


def test_runner_multi_op_graph_with_lists_options_and_multiple_outputs() -> None:
    graph = _graph(
        [
            {"name": "add", "arguments": [{"a": "x"}, {"b": "w"}], "outputs": "s"},
            {"name": "concat", "arguments": [{"inputs": ["s", "x"]}, {"axis": 0}], "outputs": "c"},
            {"name": "split", "arguments": [{"input": "c"}, {"splits": 2}], "outputs": ["top", "bottom"]},
            {"name": "gemm", "outputs": "g",
             "arguments": [{"a": "top"}, {"b": "bt"}, {"options": {"c": "w", "bTranspose": True}}]},
        ],
        {
            "bottom": {"data": [1.0, -2.0, 3.0, -4.0, 5.0, -6.0],
                       "descriptor": {"shape": [2, 3], "dataType": "float32"}},
            "g": {"data": [0.5 + 1.5 - 1.5 + 3.5, 0.5 + 1.5 - 1.5 + 3.5, 0.5 + 1.5 - 1.5 + 3.5,
                           0.5 - 3.5 + 5.5 - 5.5, 0.5 - 3.5 + 5.5 - 5.5, 0.5 - 3.5 + 5.5 - 5.5],
                  "descriptor": {"shape": [2, 3], "dataType": "float32"}},
        },
    )
    graph["inputs"] = dict(_graph([], {})["inputs"])
    graph["inputs"]["bt"] = {"data": [1.0] * 9, "descriptor": {"shape": [3, 3], "dataType": "float32"},
                             "constant": True}
    r = wpt.run_case(_case(graph))
    assert r.status == wpt.PASS, r.message
    # tolerances are summed over the four operators: add 1 + concat 0 + split 0 + gemm (2*3 + 1 for c)
    assert r.tolerance == {"ulp": 8, "atol": 0.0}


def test_runner_reports_fail_error_unsupported_and_invalid() -> None:
    relu = [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}]
    good = {"data": [1.0, 0.0, 3.0, 0.0, 5.0, 0.0], "descriptor": {"shape": [2, 3], "dataType": "float32"}}
    assert wpt.run_case(_case(_graph(relu, {"y": good}))).status == wpt.PASS
    wrong = {**good, "data": [1.0, 0.0, 3.0, 0.0, 5.0, 1e-6]}
    r = wpt.run_case(_case(_graph(relu, {"y": wrong})))
    assert r.status == wpt.FAIL and "ULP" in r.message
    wrong_type = {**good, "descriptor": {"shape": [2, 3], "dataType": "float16"}}
    assert wpt.run_case(_case(_graph(relu, {"y": wrong_type}))).status == wpt.FAIL
    wrong_shape = {**good, "descriptor": {"shape": [3, 2], "dataType": "float32"}}
    assert wpt.run_case(_case(_graph(relu, {"y": wrong_shape}))).status == wpt.FAIL
    bad_axis = [{"name": "softmax", "arguments": [{"input": "x"}, {"axis": 7}], "outputs": "y"}]
    r = wpt.run_case(_case(_graph(bad_axis, {"y": good})))
    assert r.status == wpt.ERROR and "WebNNTypeError" in r.message
    unknown = [{"name": "frobnicate", "arguments": [{"input": "x"}], "outputs": "y"}]
    assert wpt.run_case(_case(_graph(unknown, {"y": good}))).status == wpt.UNSUPPORTED
    lost = {**good, "data": [1.0, None, 3.0, 0.0, 5.0, 0.0]}
    assert wpt.run_case(_case(_graph(relu, {"y": lost}))).status == wpt.INVALID


def test_runner_integer_and_bigint_values() -> None:
    inputs = {"x": {"data": [-41, "9007199254740995n", -4, 2],
                    "descriptor": {"shape": [4], "dataType": "int64"}}}
    ops = [{"name": "clamp", "arguments": [{"input": "x"}, {"options": {"minValue": -2,
                                                                     "maxValue": "9007199254740992n"}}],
            "outputs": "y"}]
    exp = {"y": {"data": [-2, "9007199254740992n", -2, 2], "descriptor": {"shape": [4], "dataType": "int64"}}}
    r = wpt.run_case(_case(_graph(ops, exp, inputs)))
    assert r.status == wpt.PASS, r.message
    # exact for 64-bit integers: one unit off at 2^53 + 1 must fail
    exp_off = {"y": {**exp["y"], "data": [-2, "9007199254740993n", -2, 2]}}
    assert wpt.run_case(_case(_graph(ops, exp_off, inputs))).status == wpt.FAIL


def test_cli_summary_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert wpt.main(["--op", "relu", str(DATA)]) == 0
    table = capsys.readouterr().out
    assert "relu" in table and "total" in table
    assert wpt.main(["--op", "relu", "--json", str(DATA)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["summary"]) == {"relu"}
    assert len(data["passed"]) + sum(v for k, v in data["summary"]["relu"].items() if k != "pass") == 12

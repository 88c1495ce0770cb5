"""Every vendored WPT conformance case must pass (tests/data/wpt, run by py_core.testing.wpt).

Cases of operators not yet in py_core.spec.OPS fail with a clear message: they are not skipped, so they
start passing as soon as the operator lands.  Cases whose data the JSON conversion damaged are xfailed."""

from __future__ import annotations

from pathlib import Path

import pytest

from py_core.testing import wpt

DATA = Path(__file__).resolve().parents[1] / "data" / "wpt"
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
    from py_core.testing.tolerance import OpContext, Tolerance, check, graph_tolerance, tolerance_for

    assert tolerance_for("add", "float32") == Tolerance(ulp=1)
    assert tolerance_for("sigmoid", "float16") == Tolerance(ulp=10)
    assert tolerance_for("transpose", "int64") == Tolerance()
    assert tolerance_for("cos", "float16") == Tolerance(atol=1 / 512)
    assert tolerance_for("quantizeLinear", "uint8") == Tolerance(ulp=1)
    assert tolerance_for("add", "int32") == Tolerance()
    # conv2d: filter window x input channels / groups x 2, with layouts
    conv = OpContext("conv2d", ((1, 5, 5, 4), (3, 3, 2, 6)), {"inputLayout": "nhwc", "filterLayout": "hwio",
                                                              "groups": 2})
    assert tolerance_for(conv, "float32").ulp == 3 * 3 * 2 * 2
    assert tolerance_for(OpContext("matmul", ((2, 7), (7, 3))), "float32").ulp == 14
    gemm = OpContext("gemm", ((4, 5), (5, 2), (2,)), {"c": "gemmC", "alpha": 2.0, "beta": 0.5})
    assert tolerance_for(gemm, "float32").ulp == 5 * 2 + 3
    assert tolerance_for(OpContext("softmax", ((3, 6),), {"axis": 1}), "float32").ulp == 21
    red = OpContext("reduceL2", ((2, 3, 4),), {"axes": [0, -1]})
    assert tolerance_for(red, "float32").ulp == 8 * 2 + 2
    assert tolerance_for(OpContext("reduceSum", ((2, 3),), {"axes": []}), "float32").ulp == 1
    assert tolerance_for(OpContext("averagePool2d", ((1, 2, 4, 4),)), "float32").ulp == 18
    assert tolerance_for(OpContext("resample2d", ((1, 1, 2, 2),), {"mode": "linear"}), "float16").ulp == 10
    # a graph sums its operators' budgets
    assert graph_tolerance(["add", "sigmoid", "transpose"], "float32") == Tolerance(ulp=35)
    assert check(["exp"], [1.0000001], [1.0], "float32").ok
    assert not check(["abs"], [1.0000001], [1.0], "float32").ok
    assert check(["log"], [1.0009], [1.0], "float32").ok and not check(["log"], [1.0011], [1.0], "float32").ok


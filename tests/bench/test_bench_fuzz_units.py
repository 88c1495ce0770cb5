"""The fuzzer's pure-Python parts: seeded generation from py_core's operator table, one-defect mutations,
the judge's categories, the per-pair counts, minimization and the standalone reproducer page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.cases.fuzz import OPERATORS, generate, operator_for
from bench.cases.fuzz_defects import refused
from bench.cases.graphs import wire_case
from bench.cases.select import select
from bench.report import fuzz as fuzz_report
from bench.report import repro
from bench.results import FAIL, PASS, Result
from bench.run import fuzz_judge
from bench.run import reference as ref
from bench.run.minimize import minimize
from py_core import graphfile as gf
from py_core.errors import WebNNTypeError
from py_core.spec import OPS


def test_a_case_is_a_function_of_its_seed_and_index() -> None:
    a, b = generate(5, 17), generate(5, 17)
    assert a.graph == b.graph and a.id == "fuzz:5/17" and a.fuzz == {"seed": 5, "index": 17, "defect": a.fuzz["defect"]}
    assert generate(6, 17).graph != a.graph
    assert [c.id for c in select("fuzz:5/17+3")] == ["fuzz:5/17", "fuzz:5/3"]
    assert select("fuzz:5/17")[0].graph == a.graph


def test_every_operator_leads_a_case_once_per_round() -> None:
    assert sorted(operator_for(3, i) for i in range(len(OPERATORS))) == sorted(OPS)
    cases = select(f"fuzz:{len(OPERATORS)}@3")
    assert {c.ops[0] for c in cases} == set(OPS)


def test_valid_cases_build_and_defects_are_refused_with_a_type_error() -> None:
    defects = 0
    for case in select("fuzz:120@11"):
        g = {k: v for k, v in case.graph.items()}
        why = refused(g)
        if case.fuzz and case.fuzz["defect"]:
            defects += 1
            assert why == "TypeError", (case.id, case.description)
        else:
            assert why is None, (case.id, case.description)
            assert ref.reference(case, 0).status == "ok", case.id
    assert 15 <= defects <= 45  # a quarter, give or take the draw


def test_wire_form_keeps_build_output_names() -> None:
    case = next(c for c in select("fuzz:400@1") if "buildOutputs" in c.graph)
    wire = wire_case(case)
    assert wire.outputs == case.graph["buildOutputs"]


def test_an_operand_of_another_builder_is_refused_in_an_operator_and_in_build() -> None:
    cases = [c for c in select("fuzz:200@11") if c.fuzz["defect"] and "foreign operand" in c.fuzz["defect"]]
    for case in cases:
        passed = "passed to an operator" in case.fuzz["defect"]
        outcome = ref.reference(case, 0)
        assert outcome.error_name == "TypeError", case.id
        assert ("was created by another MLGraphBuilder" if passed else "is not an MLOperand of this builder"
                ) in outcome.error, case.id
        foreign = [n for n, s in case.graph["inputs"].items() if s.get("foreign")]
        assert len(foreign) == 1, case.id
        wire = wire_case(case)
        assert {**wire.inputs, **wire.constants}[foreign[0]]["foreign"] is True
        with pytest.raises(WebNNTypeError):  # the graph file's own replayer makes it on a second builder too
            gf.replay(wire)
        script = repro.script(case)
        kind = "constant" if case.graph["inputs"][foreign[0]].get("constant") else "input"
        assert "const other = new MLGraphBuilder(context);" in script and f"= other.{kind}(" in script
        if passed:  # the same graph with every operand on one builder builds
            assert refused({**case.graph, "inputs": {n: {k: v for k, v in s.items() if k != "foreign"}
                                                     for n, s in case.graph["inputs"].items()}}) is None
    kinds = {"passed to an operator" in c.fuzz["defect"] for c in cases}
    assert kinds == {True, False}


def _outcome(verdict: str, **kw: Any) -> dict[str, Any]:
    return {"verdict": verdict, **kw}


@pytest.mark.parametrize(
    ("mine", "expected", "category"),
    [
        (_outcome("accepted", descriptors={}), _outcome("rejected", error="TypeError", message="m"), "accepts invalid"),
        (_outcome("rejected", stage="builder", error="DataError", message=""),
         _outcome("rejected", error="TypeError", message=""), "error type"),
        (_outcome("rejected", stage="builder", error="TypeError", message=""),
         _outcome("rejected", error="TypeError", message=""), "agree"),
        (_outcome("rejected", stage="build", error="NotSupportedError", message=""),
         _outcome("accepted", descriptors={}), "build failure"),
        (_outcome("rejected", stage="builder", error="TypeError", message=""),
         _outcome("accepted", descriptors={}), "rejects valid"),
        (_outcome("rejected", stage="compute", error="OperationError", message=""),
         _outcome("accepted", descriptors={}), "compute failure"),
        (_outcome("hang", stage="build", error="TimeoutError", message="t"), _outcome("accepted", descriptors={}),
         "hang"),
        (_outcome("rejected", stage="builder", error="TypeError", message="", lost="gone"),
         _outcome("rejected", error="TypeError", message=""), "lost context"),
        (_outcome("rejected", stage="page", error="Error", message="Target crashed"),
         _outcome("accepted", descriptors={}), "crash"),
        (_outcome("accepted", descriptors={"y": {"dataType": "float32", "shape": [2]}}),
         _outcome("accepted", descriptors={"y": {"dataType": "float32", "shape": [1, 2]}}), "descriptor"),
    ],
)
def test_the_judge_names_each_kind_of_disagreement(mine: dict[str, Any], expected: dict[str, Any],
                                                   category: str) -> None:
    assert fuzz_judge.compare(mine, expected)[0] == category


def test_a_type_outside_the_operators_limits_is_unsupported_not_a_finding() -> None:
    graph = {"inputs": {"c": {"descriptor": {"dataType": "uint8", "shape": [2]}},
                        "t": {"descriptor": {"dataType": "uint8", "shape": [2]}}},
             "operators": [{"name": "where", "arguments": [{"condition": "c"}, {"trueValue": "t"}, {"falseValue": "t"}],
                            "outputs": "y", "dataTypes": ["uint8"]}]}
    limits = {"op": "where", "entry": {"condition": {"dataTypes": ["uint8"]}, "trueValue": {"dataTypes": ["float32"]}}}
    mine = _outcome("rejected", stage="builder", error="TypeError", message="no", limits=limits)
    category, problem = fuzz_judge.compare(mine, _outcome("accepted", descriptors={}), graph)
    assert category == "unsupported" and "where.trueValue lists no uint8" in problem
    limits["entry"]["trueValue"]["dataTypes"].append("uint8")  # listed, then refused: a finding
    assert fuzz_judge.compare(mine, _outcome("accepted", descriptors={}), graph)[0] == "rejects valid"


def _result(column: str, status: str, **fuzz: Any) -> Result:
    impl, _, variant = column.partition(":")
    return Result("fuzz:1/0", impl, variant or "default", status, "chromium", target="t",
                  metrics={"fuzz": fuzz})


def test_pairs_count_who_is_wrong_and_lost_contexts() -> None:
    d = {"y": {"dataType": "float32", "shape": [2]}}
    rs = [
        _result("reference", PASS, verdict="accepted", descriptors=d, category="agree"),
        _result("polyfill", PASS, verdict="accepted", descriptors=d, category="agree"),
        _result("native", FAIL, verdict="accepted", descriptors=d, category="values"),
    ]
    rs[2].case = rs[1].case = rs[0].case
    summary = fuzz_report.summarize(rs)
    pairs = {(p["a"], p["b"]): p for p in summary["pairs"]}
    assert pairs[("reference", "native:default@t")]["values: b wrong"] == 1
    assert pairs[("reference", "polyfill@t")]["agree"] == 1
    assert [f["column"] for f in summary["findings"]] == ["native:default@t"]
    assert "| values | 0 | 1 | 0 |" in fuzz_report.markdown(summary)
    lost = fuzz_report.summarize([rs[0], _result("native", FAIL, verdict="rejected", error="UnknownError",
                                                 stage="build", lost="gone", category="lost context")])
    assert lost["pairs"][0]["lost: b"] == 1 and lost["pairs"][0]["accept/reject"] == 1


def test_minimize_drops_operators_and_zeroes_values_while_the_finding_holds() -> None:
    case = next(c for c in select("fuzz:300@4") if len(c.ops) >= 2 and not c.fuzz["defect"]
                and "buildOutputs" not in c.graph)
    first = case.ops[0]
    seen: list[str] = []

    def holds(c: Any) -> bool:  # "the finding": the first operator is still there
        seen.append(c.id)
        return c.ops[:1] == [first] and ref.reference(c, 0).status == "ok"

    small, runs = minimize(case, holds, budget=40)
    assert small.ops == [first] and runs == len(seen) <= 40
    assert all(i.startswith(f"{case.id}~") for i in seen)
    values = [v for s in small.graph["inputs"].values() for v in s["data"]]
    assert values.count(0) + values.count(0.0) > 0
    kept, _ = minimize(case, holds, budget=40, values=False)  # a wrong-values finding keeps its values
    assert kept.ops == [first] and all(s["data"] == _block(case.graph["inputs"][n], s["descriptor"]["shape"])
                                       for n, s in kept.graph["inputs"].items())


def _elements(case: Any) -> int:
    return sum(int(np.prod(s["descriptor"]["shape"])) for s in case.graph["inputs"].values())


def _block(spec: dict[str, Any], shape: list[int]) -> list[Any]:
    """The values of input `spec` a shrunk `shape` keeps: the first of each dimension, leading ones dropped."""
    kept = np.array(spec["data"], dtype=object).reshape(spec["descriptor"]["shape"])
    while kept.ndim > len(shape):
        kept = kept[:1].reshape(kept.shape[1:])
    return list(np.array(kept[tuple(slice(0, d) for d in shape)], dtype=object).reshape(-1).tolist())


@pytest.mark.parametrize("defect", [False, True])
def test_minimize_shrinks_shapes_that_py_core_judges_as_the_finding(defect: bool) -> None:
    case = next(c for c in select("fuzz:60@4") if bool(c.fuzz["defect"]) is defect and _elements(c) >= 24)
    verdict = refused(case.graph)
    judged: list[str | None] = []

    def holds(c: Any) -> bool:  # "the finding": the same operators
        judged.append(refused(c.graph))
        return c.ops == case.ops

    small, runs = minimize(case, holds, budget=60, values=False)
    assert judged and set(judged) == {verdict} and runs == len(judged)  # no variant py_core judges otherwise
    assert _elements(small) < _elements(case) and small.ops == case.ops
    for name, s in small.graph["inputs"].items():  # each operand keeps the first values of each dimension
        assert s["data"] == _block(case.graph["inputs"][name], s["descriptor"]["shape"]), name


def test_the_reproducer_is_plain_navigator_ml_with_the_expectation_inline(tmp_path: Path) -> None:
    invalid = next(c for c in select("fuzz:40@2") if c.fuzz["defect"])
    page = repro.page(invalid)
    assert "navigator.ml.createContext()" in page and "new MLGraphBuilder(context)" in page
    assert "webnnPolyfill" not in page and "import " not in page and "<script src" not in page
    assert '"error": "TypeError"' in page
    valid = next(c for c in select("fuzz:40@2") if not c.fuzz["defect"] and "buildOutputs" not in c.graph)
    path = repro.write(valid, tmp_path)
    text = path.read_text(encoding="utf-8")
    expected = json.loads(text.split("const expected = ", 1)[1].split(";\n", 1)[0])
    assert set(expected["outputs"]) == set(valid.outputs)
    assert f"builder.{valid.ops[0]}(" in text


@pytest.mark.parametrize("index", [528, 381])  # sigmoid(float16) -> cast(float32); float16 overflow, then exp
def test_the_float64_judge_keeps_each_operands_type_where_it_shows(index: int) -> None:
    from bench.run.compare import check_outputs

    case = generate(2026, index)
    wide, mine = ref.run_float64(case), ref.run_reference(case, 0)
    check, source = check_outputs(case, mine.outputs, mine.contexts, mine.outputs, None, (wide.outputs, wide.dtypes))
    assert source == "float64 reference" and check.ok, check.problems


def test_upstream_keeps_one_finding_per_kind_and_writes_a_row_with_its_reproducer(tmp_path: Path) -> None:
    from bench import results as res
    from bench import upstream

    writer = res.RunWriter(tmp_path / "run")
    d = {"out0": {"dataType": "float16", "shape": [1]}}
    for index in (80, 81):  # two cases, one kind of finding: one is kept
        case = f"fuzz:2026/{index}"
        for impl, status, fuzz in (
            ("reference", PASS, {"verdict": "accepted", "descriptors": d}),
            ("polyfill", PASS, {"verdict": "accepted", "descriptors": d, "category": "agree"}),
            ("native", FAIL, {"verdict": "accepted", "descriptors": d, "category": "values"}),
        ):
            writer.result(Result(case, impl, "default", status, "chromium", target="chromium-npm", ops=["softplus"],
                                 source=case, errors=["out0: 9849 ULP"] if status == FAIL else [],
                                 metrics={"fuzz": fuzz}))
    found = upstream.native_findings(tmp_path / "run", 10)
    assert [(r.case, category) for r, category in found] == [("fuzz:2026/80", "values")]
    rows, browser = upstream.table(tmp_path / "run", tmp_path / "repros")
    assert len(rows) == 2 and browser.startswith("chromium-npm")
    assert "values of the float64 reference" in rows[0] and "(upstream-bugs/fuzz-2026-80.html)" in rows[0]
    assert (tmp_path / "repros" / "fuzz-2026-80.html").is_file()
    upstream.merge_findings(tmp_path / "findings.json", [{"name": "2026-80", "graph": generate(2026, 80).graph}])
    assert [c.id for c in select(str(tmp_path / "findings.json"))] == ["graph:findings/2026-80"]

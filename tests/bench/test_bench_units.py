"""The bench's pure-Python parts, no browser: case loading and selection, the wire form, comparisons,
results files, the report and the /reports/ routes."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from bench import results
from bench.cases import graphs as cases
from bench.cases.select import select
from bench.perf import settle
from bench.report import comparison as report
from bench.run import compare
from bench.run.runner import expand_impls, plan
from bench.targets import remote_target
from bench.targets.playwright import remote_launch_options
from bench.targets.probe import VARIANTS, ImplState, Probe
from web.app import create_app
from web.settings import Settings

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "graphs"


def _graph(data: object, dtype: str = "float32", shape: tuple[int, ...] = (4,), **extra: object) -> dict:
    return {
        "inputs": {"x": {"descriptor": {"dataType": dtype, "shape": list(shape)}, "data": data}},
        "operators": [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}],
        "outputs": ["y"],
        **extra,
    }


def _case(tmp_path: Path, graph: dict, name: str = "g") -> cases.BenchCase:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(graph))
    (case,) = cases.load_graph_file(path)
    return case


# ------------------------------------------------------------------------------------------------ cases


def test_selection_syntax() -> None:
    firsts = select("wpt@1")
    assert len({c.op for c in firsts}) == len(firsts) > 40  # one case per operator file
    conv = select("wpt:conv2d+relu@2")
    assert [c.op for c in conv] == ["conv2d", "conv2d", "relu", "relu"]
    both = select(["wpt:relu@1", f"wpt:relu@1,{GRAPHS}"])
    assert both[0].id.startswith("wpt:relu/") and {c.id for c in both[1:]} >= {"graph:tiny_cnn/tiny-cnn"}
    assert len({c.id for c in both}) == len(both)  # repeats are dropped
    with pytest.raises(ValueError, match="no such file"):
        select("nowhere.json")
    with pytest.raises(ValueError, match="no WPT cases"):
        select("wpt:notAnOp")


def test_data_forms_resolve_to_the_same_values(tmp_path: Path) -> None:
    values = np.array([-1.5, 0.25, 3.0, -0.0], np.float32)
    as_list = _case(tmp_path, _graph(values.tolist()), "a")
    as_b64 = _case(tmp_path, _graph({"base64": base64.b64encode(values.tobytes()).decode()}), "b")
    nested = _case(tmp_path, _graph([[-1.5, 0.25], [3.0, -0.0]], shape=(2, 2)), "c")
    for c in (as_list, as_b64):
        assert cases.input_arrays(c)["x"].tobytes() == values.tobytes()
    assert cases.input_arrays(nested)["x"].ravel().tolist() == values.tolist()
    r1 = _case(tmp_path, _graph({"random": {"seed": 7, "low": -2, "high": 2}}, shape=(100,)), "d")
    r2 = _case(tmp_path, _graph({"random": {"seed": 7, "low": -2, "high": 2}}, shape=(100,)), "e")
    a = cases.input_arrays(r1)["x"]
    assert np.array_equal(a, cases.input_arrays(r2)["x"]) and a.min() >= -2 and a.max() <= 2
    bad = _case(tmp_path, _graph({"base64": base64.b64encode(b"\0" * 8).decode()}), "f")
    assert "base64 holds 2 float32 values" in bad.invalid
    assert "name the graph's outputs" in _case(tmp_path, {**_graph([1, 2, 3, 4]), "outputs": []}, "g").invalid


def test_wire_case_tags_operands_bigints_and_non_finite_numbers(tmp_path: Path) -> None:
    graph = {
        "inputs": {
            "a": {"descriptor": {"dataType": "int64", "shape": [2]}, "data": ["9007199254740993n", "-1n"]},
            "b": {"descriptor": {"dataType": "float32", "shape": [2]}, "data": [1, 2], "constant": True},
        },
        "operators": [
            {
                "name": "clamp",
                "arguments": [{"input": "a"}, {"options": {"minValue": "-5n", "maxValue": "Infinity"}}],
                "outputs": "c",
            },
            {"name": "concat", "arguments": [{"inputs": ["b", "b"]}, {"axis": 0}], "outputs": "d"},
        ],
        "outputs": ["c", "d"],
    }
    wire = cases.wire_case(_case(tmp_path, graph)).to_json()
    assert wire["format"] == "webnn-graph" and wire["version"] == 1 and "weights" not in wire
    a, b = wire["inputs"]["a"], wire["constants"]["b"]
    assert np.frombuffer(base64.b64decode(b["data"]["base64"]), "<f4").tolist() == [1, 2]
    assert np.frombuffer(base64.b64decode(a["data"]["base64"]), "<i8").tolist() == [9007199254740993, -1]
    assert a["dataType"] == "int64" and list(wire["inputs"]) == ["a"] and list(wire["constants"]) == ["b"]
    clamp, concat = wire["operations"]
    assert clamp["args"] == [{"$op": "a"}] and clamp["outputs"] == ["c"]
    assert clamp["options"] == {"minValue": {"$n": "-5"}, "maxValue": {"$n": "Infinity"}}
    assert concat["args"] == [[{"$op": "b"}, {"$op": "b"}], 0] and concat["outputs"] == ["d"]
    assert wire["outputs"] == {"c": "c", "d": "d"}
    # the same file, read back by py_core.graphfile, replays in CPython to the WPT harness's values
    from py_core.graphfile import BigInt, loads, replay
    from py_core.runtime.executor import prepare

    back = loads(json.dumps(wire))
    assert back.operations[0].options["minValue"] == BigInt(-5) and back.operations[0].options["maxValue"] == math.inf
    out = prepare(replay(back)).run({"a": back.array("a")})
    assert out["c"].tolist() == [9007199254740993, -1] and out["d"].tolist() == [1, 2, 1, 2]


def test_tflite_models_become_cases_through_the_recording_loader() -> None:
    pytest.importorskip("tflite")
    try:
        (case,) = select("tflite:face_detection_short_range")
    except (ValueError, FileNotFoundError) as e:
        pytest.skip(f"no MediaPipe model here: {e}")
    assert case.op == "tflite:face_detection_short_range" and case.model == "face_detection_short_range"
    assert case.tolerance == {"atol": 1e-3}
    assert not case.invalid and not case.has_expected and set(case.outputs) == {"regressors", "classificators"}
    wire = cases.wire_case(case).to_json()
    assert len(wire["constants"]) > 50 and list(wire["inputs"]) == ["input"]
    from bench.run.reference import run_reference

    outcome = run_reference(case, repeat=0)
    assert outcome.status == "ok" and outcome.outputs["regressors"].shape == (1, 896, 16)


def test_graph_file_values_become_graph_case_arguments() -> None:
    from bench.cases.graphs import file_graph
    from py_core import graphfile as gf

    rb = gf.Recorder()
    x = rb.input("x", {"dataType": "float32", "shape": [4]})
    k = rb.constant({"dataType": "float32", "shape": [4]}, np.arange(4, dtype=np.float32))
    y = rb.clamp(rb.add(x, k), maxValue=math.inf)
    g = file_graph(rb.build({"y": y}), (-1.0, 1.0))
    assert g["outputs"] == ["y"] and g["inputs"]["x"]["data"] == {"random": {"seed": 0, "low": -1.0, "high": 1.0}}
    assert g["inputs"]["t1"]["constant"] and g["operators"][0]["arguments"] == [{"arg0": "x"}, {"arg1": "t1"}]
    assert g["operators"][1] == {"name": "clamp", "arguments": [{"arg0": "t2"}, {"options": {"maxValue": math.inf}}],
                                 "outputs": "y"}


# ---------------------------------------------------------------------------------------------- compare


def test_graph_files_are_cases_too() -> None:
    """A graph file (the gallery's recorded digits network here) is a case: the wire form is the same file."""
    from bench.run.reference import run_reference
    from py_core import graphfile as gf

    path = Path(__file__).resolve().parents[2] / "web" / "gallery" / "models" / "digits.json"
    (case,) = select(str(path))
    assert case.id == "graph:digits/digits" and case.model == "digits" and not case.invalid
    wire = cases.wire_case(case)
    original = gf.load(path)
    assert [op.op for op in wire.operations] == [op.op for op in original.operations]
    for name in original.constants:
        assert wire.array(name).tobytes() == original.array(name).tobytes()
    outcome = run_reference(case, repeat=0)
    assert outcome.status == "ok" and outcome.outputs["probabilities"].shape == (1, 10)


def test_distance_in_ulp_and_absolute_error_per_data_type() -> None:
    one = np.float32(1.0)
    next_up = np.nextafter(one, np.float32(2))
    ulp, ab = compare.distance({"y": np.array([one, 2], np.float32)}, {"y": np.array([next_up, 2], np.float32)})
    assert ulp == 1 and ab == pytest.approx(float(next_up - one))
    h = np.array([1.0, -0.0], np.float16)
    assert compare.distance({"y": h}, {"y": np.array([1.0, 0.0], np.float16)}) == (0.0, 0.0)  # -0 == +0
    big = np.array([2**62, -(2**62)], np.int64)
    assert compare.distance({"y": big}, {"y": big + 3}) == (3.0, 3.0)  # exact, never through float64
    assert compare.distance({"y": big}, {"y": big.astype(np.int32)}) == (math.inf, math.inf)
    assert compare.distance({"y": big}, {"z": big}) == (math.inf, math.inf)
    nan = np.array([np.nan], np.float32)
    assert compare.distance({"y": nan}, {"y": nan}) == (0.0, 0.0)
    pairs = compare.pairwise("c", {"a": {"y": big}, "b": {"y": big}, "c": {"y": big + 1}})
    assert [(p.a, p.b, p.max_ulp) for p in pairs] == [("a", "b", 0), ("a", "c", 1), ("b", "c", 1)]


def test_check_uses_the_wpt_tolerance_of_the_graph() -> None:
    from bench.run.reference import reference

    case = select("wpt:softmax@1")[0]
    contexts = reference(case).contexts
    ((name, spec),) = case.graph["expectedOutputs"].items()
    expected = np.array(spec["data"], np.float64).astype(np.float32).reshape(spec["descriptor"]["shape"])
    budget = compare.tolerance_for(case, contexts, "float32").ulp
    assert budget == 3 * spec["descriptor"]["shape"][-1] + 3  # WPT softmax rule: 3 x axis length + 3
    bits = expected.view(np.int32)  # positive values: +N on the bit pattern is +N ULP
    ok, source = compare.check_outputs(case, {name: (bits + budget).view(np.float32)}, contexts)
    assert ok.ok and ok.max_ulp == budget and source == "case"
    failed, _ = compare.check_outputs(case, {name: (bits + budget + 1).view(np.float32)}, contexts)
    assert not failed.ok and "exceeds" in failed.problems[0]
    wrong_type, _ = compare.check_outputs(case, {name: expected.astype(np.float16)}, contexts)
    assert "expected float32" in wrong_type.problems[0]
    # without expected values the reference's outputs are the expectation
    case_no_expected = cases.BenchCase(case.id, {**case.graph, "expectedOutputs": {}, "outputs": [name]})
    _, source = compare.check_outputs(case_no_expected, {name: expected}, contexts, {name: expected})
    assert source == "reference"


def test_float64_reference_judges_cases_without_expected_values() -> None:
    """A graph file has no expected values: every implementation (the CPython reference too) is judged against
    the same graph run in float64, so the polyfill's own engine is not the judge of native WebNN."""
    from bench.run.reference import float64_reference, reference

    case = select(str(cases.GRAPHS_DIR / "tiny_cnn.json"))[0]
    wide, ref32 = float64_reference(case), reference(case)
    assert wide.status == "ok", wide.error
    ((name, truth),) = wide.outputs.items()
    assert truth.dtype == np.float64 and wide.dtypes == {name: "float32"}
    err = np.abs(ref32.outputs[name].astype(np.float64) - truth)
    assert 0 < err.max() < 1e-6  # float32 rounding, seen against float64
    f64 = (wide.outputs, wide.dtypes)
    ok, source = compare.check_outputs(case, {name: truth.astype(np.float32)}, ref32.contexts, ref32.outputs, None, f64)
    assert ok.ok and source == compare.FLOAT64 and ok.max_ulp == 0
    # an output off by more than the graph's budget fails even where it equals the float32 reference's output
    budget = compare.tolerance_for(case, ref32.contexts, "float32").ulp
    off = (truth.astype(np.float32).view(np.int32) + budget + 1).view(np.float32)
    bad, _ = compare.check_outputs(case, {name: off}, ref32.contexts, {name: off}, None, f64)
    assert not bad.ok and "exceeds" in bad.problems[0]
    # WPT cases keep their own (float64) expected values
    assert float64_reference(select("wpt:relu@1")[0]).status == "invalid"


def test_float64_reference_keeps_explicit_casts() -> None:
    from bench.run.reference import float64_reference

    (case,) = cases.load_graph_data({
        "inputs": {"x": {"descriptor": {"dataType": "float32", "shape": [3]}, "data": [0.1, 2049.0, -7.9]}},
        "operators": [
            {"name": "cast", "arguments": [{"input": "x"}, {"type": "float16"}], "outputs": "h"},
            {"name": "cast", "arguments": [{"input": "x"}, {"type": "int32"}], "outputs": "i"},
            {"name": "mul", "arguments": [{"a": "x"}, {"b": "x"}], "outputs": "m"},
        ],
        "outputs": ["h", "i", "m"],
    })
    wide = float64_reference(case)
    assert wide.status == "ok", wide.error
    assert {n: a.dtype.name for n, a in wide.outputs.items()} == {"h": "float16", "i": "int32", "m": "float64"}
    assert wide.dtypes == {"h": "float16", "i": "int32", "m": "float32"}
    assert wide.outputs["h"][1] == 2048.0 and list(wide.outputs["i"]) == [0, 2049, -7]
    x = np.float64(np.float32(0.1))
    assert wide.outputs["m"][0] == x * x  # the float32 input widened once, the product not rounded to float32


def test_framework_cases_run_on_the_wasm_path_too() -> None:
    """onnx:/litert: cases: inputs fixed per case, the framework's CPython build as the expectation, and a
    `wasm` item (the framework's own WebAssembly path) before the WebNN implementations; graph cases have none."""
    pytest.importorskip("torch")
    from bench.run.reference import float64_reference, reference
    from bench.targets import local_target

    onnx, litert = select("onnx:encoder,litert:face_detection_short_range")
    assert (onnx.id, onnx.op, onnx.model) == ("onnx:encoder/encoder", "onnx:encoder", "onnx:encoder")
    assert onnx.client is not None and onnx.client["kind"] == "onnx" and onnx.client["outputs"] == ["output"]
    assert [i["shape"] for i in onnx.client["inputs"]] == [[1, 16, 64]]
    assert litert.client is not None and litert.client["outputs"] == ["regressors", "classificators"]
    assert select("onnx:encoder")[0].client == onnx.client  # the same inputs every time
    out = reference(onnx)
    assert out.status == "ok" and out.outputs["output"].shape == (1, 16, 64)
    assert out.outputs["output"].dtype == np.float32
    assert float64_reference(onnx).status == "invalid"
    assert onnx.tolerance == {"ulp": 0, "atol": pytest.approx(1e-3 * float(np.abs(out.outputs["output"]).max()))}
    t = local_target("chromium")
    graph = select("wpt:relu@1")[0]
    items = plan([graph, onnx], [t], expand_impls(["polyfill", "native:gpu"]))
    assert [i.id.split("-", 1)[1] for i in items] == [
        "wasm-onnx:encoder/encoder", f"polyfill-{graph.id}", "polyfill-onnx:encoder/encoder",
        f"native:gpu-{graph.id}", "native:gpu-onnx:encoder/encoder", f"reference-{graph.id}",
        "reference-onnx:encoder/encoder",
    ]
    with pytest.raises(ValueError, match="not a .onnx file nor a model"):
        select("onnx:nope")


# ---------------------------------------------------------------------------------------------- targets


def test_native_chromium_joins_chromium() -> None:
    from bench.targets import NATIVE_CHROMIUM, local_target, local_targets

    assert [t.id for t in local_targets(["chromium", "firefox"])] == ["chromium", NATIVE_CHROMIUM, "firefox"]
    assert [t.id for t in local_targets(["chromium"], native_chromium=False)] == ["chromium"]
    assert [t.id for t in local_targets(["firefox"])] == ["firefox"]
    assert local_target(NATIVE_CHROMIUM).browser == "chromium"
    with pytest.raises(ValueError, match="chromium-npm"):
        local_target("safari")


def test_implementation_and_target_specs() -> None:
    assert expand_impls(["polyfill"]) == [("polyfill", "default")]
    assert expand_impls(["native:*"]) == [("native", v) for v in VARIANTS]
    assert expand_impls(["native:*-power,polyfill:gpu"]) == [("native", "low-power"), ("polyfill", "gpu")]
    with pytest.raises(ValueError, match=r"^unknown implementation 'webgpu' in 'webgpu' \(one of "):
        expand_impls(["webgpu"])
    t = remote_target("ws://10.0.0.5:3000/pw?browser=firefox&name=mac-lab")
    assert (t.id, t.browser, t.remote) == ("remote-mac-lab-firefox", "firefox", True)
    assert remote_target("ws://h:1/").id == "remote-h-1-chromium"
    with pytest.raises(ValueError, match=r"^--browser-endpoint 'http://h:1/': expected a ws:// or wss:// URL$"):
        remote_target("http://h:1/")
    opts = remote_launch_options("chromium")
    assert "--enable-features=WebMachineLearningNeuralNetwork" in opts["args"] and "env" not in opts
    items = plan(select("wpt:relu@2"), [t], [("polyfill", "default")])
    assert [i.id.split("-wpt:")[0] for i in items] == ["remote-mac-lab-firefox-polyfill"] * 2 + [
        "cpython-reference"
    ] * 2


# ------------------------------------------------------------------------------------- results and report


def _fake_run(run_dir: Path) -> None:
    """A small run with every status, written the way the bench writes one (two worker files)."""
    w0, w1 = results.RunWriter(run_dir, "gw0"), results.RunWriter(run_dir, "gw1")
    probe = Probe(
        "chromium",
        "chromium",
        "156",
        {"userAgent": "UA"},
        [
            ImplState("polyfill", "default", "usable"),
            ImplState("native", "gpu", "unusable", {"name": "NotSupportedError", "message": "no GPU"}),
        ],
    )
    w0.probe(probe.to_json())
    y = {"y": np.array([1.0, 2.0], np.float32)}
    base = {
        "browser": "chromium",
        "browser_version": "156",
        "target": "chromium",
        "op": "relu",
        "ops": ["relu"],
    }
    w0.result(
        results.Result(
            "wpt:relu/a",
            "polyfill",
            "default",
            "pass",
            max_ulp=0.0,
            max_abs=0.0,
            tolerance={"ulp": 0, "atol": 0},
            timings={"median_ms": 0.8},
            **base,
        ),
        y,
    )
    w1.result(
        results.Result(
            "wpt:relu/a",
            "reference",
            "default",
            "pass",
            "cpython",
            target="cpython",
            op="relu",
            timings={"median_ms": 0.01},
        ),
        {"y": np.array([1.0, 2.5], np.float32)},
    )
    w1.result(
        results.Result(
            "wpt:relu/b",
            "polyfill",
            "default",
            "fail",
            max_ulp=math.inf,
            max_abs=1.0,
            tolerance={"ulp": 2, "atol": 0},
            errors=["y: max inf ULP"],
            **base,
        )
    )
    w1.result(results.Result("wpt:relu/a", "native", "gpu", "unavailable", errors=["native:gpu is unusable"], **base))
    w1.result(
        results.Result(
            "graph:m/m",
            "polyfill",
            "default",
            "pass",
            model="m",
            max_ulp=1.0,
            max_abs=1e-6,
            tolerance={"ulp": 8},
            timings={"median_ms": 5.0},
            **{**base, "op": "conv2d"},
        )
    )


def test_results_merge_and_read_back(tmp_path: Path) -> None:
    _fake_run(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("results*.jsonl")) == [
        "results.gw0.jsonl",
        "results.gw1.jsonl",
    ]
    results.merge(tmp_path)
    assert [p.name for p in tmp_path.glob("results*.jsonl")] == ["results.jsonl"]
    probes, rs = results.load(tmp_path)
    assert len(probes) == 1 and len(rs) == 5
    fail = next(r for r in rs if r.status == "fail")
    assert fail.max_ulp == math.inf and fail.column == "polyfill@chromium"
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    keys = {"case", "implementation", "browser", "browser_version", "variant", "status", "errors", "timings"}
    assert all(keys <= set(d) for d in lines if d["kind"] == "result")
    first = next(r for r in rs if r.outputs)
    assert results.load_outputs(tmp_path, first.outputs)["y"].dtype == np.float32


def test_report_is_self_contained_and_has_every_section(tmp_path: Path) -> None:
    _fake_run(tmp_path)
    path = report.write_report(tmp_path, {"started": "then", "command": "pytest x"})
    html = path.read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    for needle in (
        "Pass matrix",
        "polyfill@chromium",
        "Errors against tolerance",
        "Pairwise",
        "Latency",
        "Per model",
        "NotSupportedError: no GPU",
        "native:gpu@chromium",
        "<svg",
        "UA",
    ):
        assert needle in html, needle
    meta = results.read_meta(tmp_path)
    assert meta["counts"]["fail"] == 1 and meta["cases"] == 3 and "chromium" in meta["targets"]


def test_dev_server_lists_runs_and_serves_reports(tmp_path: Path) -> None:
    run = tmp_path / "20260101-000000-abcd"
    _fake_run(run)
    report.write_report(run, {"started": "2026-01-01T00:00:00"})
    (tmp_path / "not-a-run").mkdir()
    client = TestClient(create_app(Settings(cache_dir=tmp_path / "cache", reports_dir=tmp_path)))
    index = client.get("/reports/")
    assert index.status_code == 200 and run.name in index.text and "not-a-run" not in index.text
    assert index.headers["cross-origin-opener-policy"] == "same-origin"
    assert client.get("/api/reports").json()[0]["id"] == run.name
    page = client.get(f"/reports/{run.name}/")
    assert page.status_code == 200 and "Pass matrix" in page.text
    assert client.get(f"/reports/{run.name}/results.jsonl").status_code == 200
    assert client.get("/reports/nope/").status_code == 404
    assert client.get("/reports/..%2F..%2Fetc/").status_code == 404
    assert "bench.js" in client.get("/bench/bench.html").text


def _jiffies(busy_windows: list[float]) -> Any:
    """A /proc/stat reader whose successive 100 ms windows were busy by these fractions (100 jiffies each)."""
    state = {"all": 0, "idle": 0, "reads": 0}
    windows = iter(busy_windows)

    def read() -> tuple[int, int]:
        if state["reads"]:
            busy = next(windows)
            state["all"] += 100
            state["idle"] += round(100 * (1 - busy))
        state["reads"] += 1
        return state["all"], state["idle"]

    read.state = state  # type: ignore[attr-defined]
    return read


def test_settle_waits_for_consecutive_quiet_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # a busy window between two quiet ones starts the count again
    read = _jiffies([0.85, 0.85, 0.05, 0.6, 0.04, 0.02, 0.9])
    monkeypatch.setattr(settle, "_cpu_jiffies", read)
    monkeypatch.setattr(settle.time, "sleep", lambda s: None)
    settle.settle(max_s=60)
    assert read.state["reads"] == 7  # the first read, then six windows: the last two quiet


def test_settle_gives_up_on_a_machine_that_stays_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settle, "_cpu_jiffies", _jiffies([1.0] * 1000))
    waited = settle.settle(max_s=0.35)
    assert 0.35 <= waited < 1.0


def test_settle_without_proc_stat_waits_a_fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settle, "_cpu_jiffies", lambda: None)
    assert 0.2 <= settle.settle(max_s=0.2) < 0.6


def _timed(median: float, low: float, n: int = 60) -> dict[str, float]:
    return {"median": median, "min": low, "n": n}


def test_small_ops_summary_shows_the_encoder_before_and_after_the_warm_up() -> None:
    from bench.perf import dispatch

    stat = _timed
    enc = {"wasm": stat(1.32, 1.25), "webnn-polyfill": stat(1.23, 1.17), "ratio": 0.93, "ratioOfMins": 0.94,
           "early": {"wasm": stat(1.95, 1.56, 20), "webnn-polyfill": stat(3.69, 1.55, 20),
                     "ratio": 1.9, "warmup": dispatch.ORT_WARMUP}}
    lines = dispatch.summary({"encoder_bert": enc})
    assert lines[0].startswith("small ops: encoder_bert via ORT") and "x0.93 (mins x0.94)" in lines[0]
    assert lines[1] == ("small ops: encoder_bert before V8's tier-up (20 runs after the first, before 300 more "
                        "untimed): polyfill 3.69 ms (min 1.55) vs ORT WASM 1.95 ms (min 1.56): x1.9")
    # a result from before the warm-up (no `early`) still reads
    assert len(dispatch.summary({"encoder_bert": {k: v for k, v in enc.items() if k != "early"}})) == 1

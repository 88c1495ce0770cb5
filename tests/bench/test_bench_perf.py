"""`make bench` is a mode of the bench (`python -m bench perf`, bench/perf/run.py): a real run in Chromium on
one small kernel through its command line, whose run directory follows the results model, whose
report draws ratios and times as inline SVG, and which /reports/ lists beside the comparison runs.  The report's
startup, LiteRT, Node and network sections are checked on measure lines written here, without a browser."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bench import cli, results
from bench.perf import memory
from bench.perf import run as perf
from bench.report import perf as perf_report
from bench.targets import Target
from web.app import create_app
from web.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _client(reports: Path) -> TestClient:
    return TestClient(create_app(Settings(cache_dir=reports / "cache", reports_dir=reports)))


@pytest.mark.browser
@pytest.mark.slow
def test_make_bench_writes_a_listed_run_with_plots(tmp_path: Path) -> None:
    # the narrowed command other work measures with, on one small kernel
    cmd = [sys.executable, "-m", "bench", "perf", "--browsers", "chromium", "--cases", "relu,no_such_graph",
           "--reps", "2", "--skip-startup", "--skip-node", "--skip-transfer", "--skip-memory", "--memory-runs", "0",
           "--out", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "no_such_graph: not among the generated graphs" in proc.stderr
    assert "x ort-1t" in proc.stdout and "polyfill default: usable" in proc.stdout
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]

    meta = results.read_meta(run_dir)
    assert meta["kind"] == "perf" and meta["schema"] == perf.PERF_SCHEMA and meta["targets"] == ["chromium"]
    assert meta["counts"]["pass"] == 3 and meta["cases"] == 1 and "--cases relu" in meta["command"]
    probes, rs = results.load(run_dir)
    assert [p["target"] for p in probes] == ["chromium"]
    assert {(s["impl"], s["state"]) for s in probes[0]["states"]} >= {("polyfill", "usable")}
    by = {r.label: r for r in rs}
    assert set(by) == {"polyfill", "wasm:1-thread", "wasm:2-threads"}
    for r in by.values():
        assert r.case == "relu" and r.target == "chromium" and r.status == results.PASS
        assert r.timings["runs"] == 4 and len(r.timings["times_ms"]) == 4  # --reps 2, twice for a kernel
        assert 0 < r.timings["min_ms"] <= r.timings["median_ms"]
    poly = by["polyfill"]
    for peer, label in (("ort-wasm-1t", "wasm:1-thread"), ("ort-wasm-2t", "wasm:2-threads")):
        assert poly.metrics["ratio"][peer] == pytest.approx(poly.timings["median_ms"] / by[label].timings["median_ms"])
    (agreement,) = poly.metrics["agreement"].values()
    assert agreement["maxAbs"] == 0  # relu is exact in both runtimes

    html = (run_dir / "report.html").read_text()
    assert "<svg" in html and "<script" not in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    for needle in ("Ratios to onnxruntime-web", "relu @ chromium / wasm-1t", "kernel: median ms per run",
                   "wasm:1-thread@chromium", f"{poly.metrics['ratio']['ort-wasm-1t']:.2f}"):
        assert needle in html, needle

    client = _client(tmp_path)
    index = client.get("/reports/").text
    assert run_dir.name in index and "<td>perf</td>" in index
    ratio = poly.metrics["ratio"]["ort-wasm-1t"]
    assert meta["headline"] == f"polyfill / ort-wasm-1t, geomean: chromium {ratio:.2f} (1 case)"
    assert meta["headline"] in index
    assert client.get("/api/reports").json()[0]["kind"] == "perf"
    page = client.get(f"/reports/{run_dir.name}/")
    assert page.status_code == 200 and "Performance bench" in page.text
    listed = subprocess.run([sys.executable, "-m", "bench", "list", "--out", str(tmp_path)], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert run_dir.name in listed.stdout and " perf " in listed.stdout
    (run_dir / "report.html").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "bench", "report", str(run_dir)], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert rebuilt.returncode == 0 and "Performance bench" in (run_dir / "report.html").read_text()


STARTUP = {
    "case": "chain1",
    "cold": {"contextMs": 4100.0, "builtMs": 4600.0, "firstRunMs": 35.0, "wallMs": 4900.0, "bytes": 17_200_000,
             "requests": 31, "notModified": 0,
             "bootTimings": {"worker-runtime": 2000, "worker-numpy": 3000, "worker-core": 3900, "total": 3900}},
    "warm": {"contextMs": 1700.0, "builtMs": 2100.0, "firstRunMs": 20.0, "wallMs": 2300.0, "bytes": 0,
             "requests": 31, "notModified": 29, "bootTimings": {"total": 1600}},
}


def test_report_sections_from_measure_lines(tmp_path: Path) -> None:
    """Startup as a stacked bar per browser and visit, LiteRT, Node and network tables, problems listed."""
    run_dir = tmp_path / "20260101-000000-perf"
    results.write_meta(run_dir, {"kind": "perf", "schema": perf.PERF_SCHEMA, "started": "then", "command": "x"})
    w = results.RunWriter(run_dir)
    target = Target("chromium", "chromium")
    case = perf.case_of("selfie_segmentation")
    raw = {"buildMs": 900.0, "builderMs": 30.0,
           "impls": {"polyfill": {"median": 20.0, "min": 18.0, "runs": 3, "times": [20.0, 18.0, 25.0]}}}
    for r in perf.case_result(target, "156", case, raw):
        w.result(r)
    # a case whose page adds a peer of its own (e.g. onnxruntime-web's WebNN path): its own line and ratio
    extra = {"impls": {"polyfill": {"median": 10.0, "min": 9.0, "runs": 2, "times": [10.0, 9.0]},
                       "ort-webnn": {"median": 4.0, "min": 4.0, "runs": 2, "times": [4.0, 4.0]}}}
    (poly, peer) = perf.case_result(target, "156", perf.case_of("encoder", {"kind": "onnx"}), extra)
    assert peer.label == "ort-webnn" and poly.metrics["ratio"] == {"ort-webnn": 2.5}
    w.result(poly)
    w.result(peer)
    w.result(perf.error_result(target, "156", perf.case_of("mobilenetv2"), "TimeoutError: too slow"))
    w.measure("startup", "chromium", STARTUP)
    w.measure("litert", "cpython", {"selfie_segmentation": {"median": 4.0, "min": 3.5, "runs": 9,
                                                            "relativeError": {"chromium": 2e-6}}})
    w.measure("node", "node", {"overheadUsPerOp": 6.2, "chain500Ms": 3.1, "chain1Ms": 0.05, "memory": {
        "runs": 3, "currentStartMB": 10.0, "currentEndMB": 10.1, "heapStartMB": 60, "heapEndMB": 60,
        "peakMB": 21.1, "weightsMB": 14.0, "liveMB": 5.9, "budgetMB": 47.9, "medianMs": 300}})
    w.measure("network", "", {"error": "SystemExit: network: no package in dist: run make dist"})
    w.measure("memory", "", {"chromium": _memory_result(), "firefox": {"error": "firefox: not installed here"}})
    perf_report.write_report(run_dir, {"finished": "now"})
    html = (run_dir / "report.html").read_text()
    for needle in ("startup breakdown, ms", "chromium cold (chain1)", "chromium warm (chain1)",
                   "chromium cold (chain1): Pyodide runtime 2000 ms", "chromium cold (chain1): graph build 500 ms",
                   "chromium warm (chain1): to context 1700 ms", "17.20", "29 × 304",
                   "selfie_segmentation · litert", "50.0",
                   "6.2 µs/op", "47.9", "no package in dist", "TimeoutError: too slow",
                   "encoder @ chromium / webnn", "<th>× ort-webnn</th>", "<td>2.50</td>",
                   "Memory a page pays", "polyfill-mobilenetv2", "firefox: not installed here", "<b>1.5x</b>"):
        assert needle in html, needle
    assert perf_report.startup_segments(STARTUP["cold"]) == [2000, 1000, 900, 200, 500, 35]
    assert html.count("<svg") >= 3 and "<script" not in html  # ratios, times, startup, LiteRT
    meta = results.read_meta(run_dir)
    assert meta["counts"]["error"] == 1 and meta["cases"] == 3
    text = "\n".join(perf_report.summary_lines(*perf_report.load_run(run_dir)))
    assert "startup chain1               cold: built     4600 ms" in text and "x  5.0" in text
    assert " x ort-webnn 2.50" in text and "executor overhead 6.2 us/op" in text
    assert "mobilenetv2                  ERROR TimeoutError" in text
    assert "context alone 40.0 MB (target <= 80); MobileNetV2 polyfill / WASM EP 1.50x (target <= 2.0)" in text


def _memory_result() -> dict[str, object]:
    """bench/perf/memory.py's answer for one browser, from scenarios as its pages report them."""
    mb = int(memory.MB)
    pss = lambda n, c: {"all": 300 * mb + n * mb, "content": 100 * mb + c * mb, "page": 50 * mb + c * mb,  # noqa: E731
                        "processes": 6}
    uasm = lambda page, worker: {"bytes": (page + worker) * mb, "page": page * mb, "worker": worker * mb,  # noqa: E731
                                 "other": 0, "workers": int(worker > 0)}
    stats = {"wasmBytes": 62 * mb, "engineBytes": 26 * mb, "constantBytes": 0, "weightBytes": 14 * mb,
             "planBytes": 11 * mb, "tensorBytes": 1 * mb, "pageHeapBytes": 21 * mb}
    scenarios = {"blank": {"uasm": uasm(0, 0), "pss": pss(0, 0)},
                 "polyfill-idle": {"uasm": uasm(14, 26), "pss": pss(330, 250), "stats": stats},
                 "polyfill-mobilenetv2": {"uasm": uasm(84, 24), "pss": pss(500, 440), "stats": stats},
                 "wasm-mobilenetv2": {"uasm": uasm(72, 0), "pss": pss(250, 260)}}
    return {"rounds": 1, "scenarios": scenarios, "table": memory.summarize("chromium", scenarios)}


def test_memory_table_subtracts_the_blank_page_and_names_each_browser_process() -> None:
    """The memory bench's table: Chromium's own measure as given, PSS less the blank page's, the ratio; processes
    told apart by command line (Chromium's rewritten one included) and other programs left out."""
    table = _memory_result()["table"]
    assert table["method"] == "uasm" and table["idleMB"] == 40.0 and table["mobilenetRatio"] == 1.5
    assert table["rows"]["polyfill-idle"]["pss"] == {"page": 250.0, "content": 250.0, "all": 330.0}
    assert table["rows"]["blank"]["pss"] == {"page": 0.0, "content": 0.0, "all": 0.0}
    firefox = memory.summarize("firefox", {k: {"pss": v["pss"]} for k, v in _memory_result()["scenarios"].items()})
    assert firefox["method"] == "pss" and firefox["idleMB"] == 250.0 and firefox["mobilenetRatio"] == 440 / 260
    kind = memory.process_kind
    assert kind("chromium", "/usr/lib/chromium/chromium --type=renderer --lang=en".split(" ")) == "content"
    assert kind("chromium", ["/usr/lib/chromium/chromium", "--type=gpu-process"]) == "browser"
    assert kind("firefox", ["/usr/lib/firefox-esr/firefox-esr", "-contentproc", "-isForBrowser", "7", "tab"]) \
        == "content"
    assert kind("firefox", ["/usr/lib/firefox-esr/firefox-esr", "-contentproc", "8", "socket"]) == "browser"
    assert kind("webkit", ["/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebProcess", "7"]) == "content"
    assert kind("webkit", ["/usr/bin/WebKitWebDriver", "--port=1"]) is None
    assert kind("chromium", ["/usr/bin/node", "cli.js"]) is None
    assert memory.pss_bytes(os.getpid()) > 0 and os.getpid() not in memory.descendants(os.getpid())


def test_case_registry_and_implementation_names() -> None:
    """A case in bench_models' index without a registry row gets its kind's defaults; page names round-trip."""
    assert perf.case_of("matmul512").group == "kernel" and perf.case_of("matmul512").reps_factor == 2
    assert perf.case_of("mobilenetv2").group == "model" and perf.case_of("chain1").startup
    assert perf.case_of("new_model", {"kind": "tflite"}).compares_outputs
    assert perf.case_of("chain9", {"kind": "chain"}).group == "chain"
    for name in ("polyfill", "ort-wasm-1t", "ort-wasm-2t", "ort-webnn"):
        assert perf.page_name(*perf.impl_of(name)) == name
    assert set(perf.DEFAULT_CASES) >= {"mobilenetv2", "matmul512", "relu", "chain500", "pose_detection"}


def test_byte_counter_counts_what_the_server_sends(tmp_path: Path) -> None:
    app = create_app(Settings(cache_dir=tmp_path / "cache", reports_dir=tmp_path))
    counter = perf.ByteCounter(app)
    body = TestClient(counter).get("/bench/bench.js").content
    assert counter.requests == 1 and counter.bytes == len(body) > 1000
    assert counter.paths == {"/bench/bench.js": len(body)}


def test_perf_mode_keeps_the_make_bench_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["perf", "--help"])
    usage = capsys.readouterr().out
    for knob in ("--browsers", "--cases", "--reps", "--seconds", "--baseline", "--memory-runs", "--skip-startup",
                 "--skip-node", "--skip-transfer", "--skip-memory", "--regen", "--out"):
        assert knob in usage, knob

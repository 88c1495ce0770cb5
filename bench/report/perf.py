"""The self-contained HTML report of a perf run (bench/perf/run.py): the polyfill's ratios to onnxruntime-web
per case and browser, kernel and model times, startup broken down, the TFLite models against native LiteRT, the
executor under Node and its memory, start-up over network profiles; charts from bench/report/svg.py, inline CSS only.
Also the text summary `make bench` prints.

    python -m bench report RUN_DIR      (re)builds RUN_DIR/report.html (a perf run's, by run.json's kind)
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import results as res
from bench.perf import dispatch, memory, network
from bench.perf.schema import GROUPS, PERF_SCHEMA, POLYFILL, page_name
from bench.report import svg
from bench.report.html import CSS, escape
from bench.results import Result

PEERS = ("ort-wasm-1t", "ort-wasm-2t")
# Startup stages on the page's clock from the script tag: the polyfill's bootTimings (page-clock times at which
# the page heard of each worker stage) where present, then perf.js's own marks.
BOOT_STAGES = (("worker-runtime", "Pyodide runtime"), ("worker-numpy", "NumPy"), ("worker-core", "core import"))
STARTUP_SEGMENTS = (*(label for _, label in BOOT_STAGES), "to context", "graph build", "first run")


Run = tuple[dict[str, Any], list[dict[str, Any]], list[Result], list[dict[str, Any]]]


def load_run(run_dir: str | Path) -> Run:
    """(run.json, probe lines, result lines, measure lines) of a perf run."""
    run_dir = Path(run_dir)
    res.merge(run_dir)
    probes, results = res.load(run_dir)
    return res.read_meta(run_dir), probes, results, res.load_measures(run_dir)


def _measures(measures: Sequence[Mapping[str, Any]], what: str) -> list[Mapping[str, Any]]:
    return [m for m in measures if m.get("what") == what]


def _targets(probes: Sequence[Mapping[str, Any]], results: Sequence[Result]) -> list[str]:
    seen: list[str] = []
    for t in [p["target"] for p in probes] + [r.target for r in results]:
        if t not in seen:
            seen.append(t)
    return seen


def _cases(results: Sequence[Result]) -> list[str]:
    seen: list[str] = []
    for r in results:
        if r.case not in seen:
            seen.append(r.case)
    return seen


def _by(results: Sequence[Result]) -> dict[tuple[str, str, str], Result]:
    """(case, target, page implementation name or 'baseline') -> result."""
    out = {}
    for r in results:
        name = "baseline" if r.implementation == POLYFILL and r.variant == "baseline" else page_name(
            r.implementation, r.variant)
        out[(r.case, r.target, name)] = r
    return out


def _median(r: Result | None) -> float | None:
    v = r.timings.get("median_ms") if r else None
    return float(v) if isinstance(v, (int, float)) else None


# --------------------------------------------------------------------------------------------- text summary


def _small_ops_lines(data: Mapping[str, Any]) -> list[str]:
    return list(dispatch.summary(dict(data)))


def _network_lines(data: Mapping[str, Any]) -> list[str]:
    return list(network.summary(dict(data)))


def summary_lines(meta: Mapping[str, Any], probes: Sequence[Mapping[str, Any]], results: Sequence[Result],
                  measures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The text summary: per browser, a row per case and implementation with its ratios to onnxruntime-web."""
    lines: list[str] = []
    by = _by(results)
    workers = {m["target"]: m["data"] for m in _measures(measures, "worker")}
    for target in _targets(probes, results):
        probe = next((p for p in probes if p["target"] == target), {})
        env = probe.get("environment", {})
        native: dict[str, Any] = next((s for s in probe.get("states", []) if s["impl"] == "native"), {})
        lines.append(f"\n== {target} {probe.get('browser_version', '')}  crossOriginIsolated="
                     f"{env.get('crossOriginIsolated')}  native WebNN: {native.get('state')}"
                     f"{' (' + native['error']['message'] + ')' if native.get('error') else ''}  "
                     f"polyfill worker: {(workers.get(target) or {}).get('stats')}")
        lines.append(f"{'case':28} {'impl':14} {'median ms':>10} {'min ms':>9} {'runs':>5} {'x ort-1t':>9} "
                     f"{'x ort-2t':>9} {'before':>9}  agreement")
        for case in _cases(results):
            rows = [r for r in results if r.case == case and r.target == target and r.variant != "baseline"]
            for r in rows:
                if r.status == res.ERROR:
                    lines.append(f"{case:28} ERROR {'; '.join(r.errors)[:200]}")
                    continue
                t = r.timings
                name = page_name(r.implementation, r.variant)
                cols = [f"{case:28} {name:14} {t['median_ms']:10.2f} {t['min_ms']:9.2f} {t['runs']:5d}"]
                if r.implementation == POLYFILL:
                    ratio = r.metrics.get("ratio", {})
                    cols += [f"{ratio[p]:9.2f}" if p in ratio else f"{'':9}" for p in PEERS]
                    base = _median(by.get((case, target, "baseline")))
                    cols.append(f"{base:9.2f}" if base else f"{'':9}")
                    agree = r.metrics.get("agreement") or {}
                    cols.append("  " + " ".join(f"{v['relative']:.1e}" for v in agree.values()))
                    cols += [f" x {p} {v:.2f}" for p, v in ratio.items() if p not in PEERS]  # a case's own peers
                    split = r.metrics.get("split")
                    if split:  # one graph over both cores: unsplit / split, medians (mins)
                        cols.append(f" split speed-up {split['speedup']:.2f} ({split['speedupMin']:.2f}) on "
                                    f"{split.get('workers')} workers")
                lines.append(" ".join(cols))
        for m in _measures(measures, "smallOps"):
            if m["target"] == target:
                lines += _small_ops_lines(m["data"])
        for m in _measures(measures, "startup"):
            if m["target"] != target:
                continue
            s = m["data"]
            for label in ("cold", "warm"):
                x = s.get(label, {})
                lines.append(f"startup {s.get('case', ''):20} {label}: built {x.get('builtMs', 0):8.0f} ms  "
                             f"downloaded {x.get('bytes', 0) / 1e6:6.2f} MB in {x.get('requests')} requests "
                             f"({x.get('notModified')} x 304)  boot {x.get('bootTimings')}")
    for m in _measures(measures, "error") + _measures(measures, "unavailable"):
        lines.append(f"\n== {m['target']}: {m['what']}: {m['data'].get('error') or m['data'].get('reason')}")
    for m in _measures(measures, "litert"):
        if "error" in m["data"]:
            lines.append(f"\n== native LiteRT: ERROR {m['data']['error']}")
            continue
        lines.append("\n== TFLite models: polyfill (end to end, per browser) vs native LiteRT (CPython, 1 thread)")
        for case, s in m["data"].items():
            row = f"{case:28} litert {s['median']:7.2f} ms"
            for target in _targets(probes, results):
                p = _median(by.get((case, target, POLYFILL)))
                if p:
                    err = s["relativeError"].get(target, float("nan"))
                    row += (f" | {target} {p:7.1f} ms ({1000 / p:5.1f} fps) x{p / s['median']:5.1f} "
                            f"err {float(err):.1e}")
            lines.append(row)
    for m in _measures(measures, "node"):
        node = m["data"]
        if "error" in node:
            lines.append(f"\n== Pyodide under Node: ERROR {str(node['error'])[-500:]}")
            continue
        lines.append(f"\n== Pyodide under Node: executor overhead {node['overheadUsPerOp']:.1f} us/op "
                     f"(500-op chain {node['chain500Ms']:.2f} ms, 1-op {node['chain1Ms']:.3f} ms)")
        mem = node.get("memory") or {}
        if mem:
            lines.append(f"   MobileNetV2 x{mem.get('runs')}: traced current {mem.get('currentStartMB'):.1f} -> "
                         f"{mem.get('currentEndMB'):.1f} MB, wasm heap {mem.get('heapStartMB'):.0f} -> "
                         f"{mem.get('heapEndMB'):.0f} MB, peak {mem.get('peakMB'):.1f} MB vs budget 3 x weights "
                         f"{mem.get('weightsMB'):.1f} MB + largest live activations {mem.get('liveMB'):.1f} MB = "
                         f"{mem.get('budgetMB'):.1f} MB; run {mem.get('medianMs'):.0f} ms")
    for m in _measures(measures, "network"):
        t = m["data"]
        if "error" in t:
            lines.append(f"\n== start-up over network profiles: ERROR {t['error']}")
            continue
        lines += _network_lines(t)
    for m in _measures(measures, "memory"):
        lines += memory.summary(dict(m["data"]))
    return lines


# ------------------------------------------------------------------------------------------------- sections


def _peers(results: Sequence[Result]) -> list[str]:
    """Every peer the polyfill has a ratio to: onnxruntime-web's WASM path first, then any a case adds."""
    found = {p for r in results for p in r.metrics.get("ratio", {})}
    return [p for p in PEERS if p in found] + sorted(found - set(PEERS))


def _ratios(results: Sequence[Result], targets: Sequence[str]) -> str:
    by = _by(results)
    peers = _peers(results) or list(PEERS)
    out = ['<h2 id="ratios">Ratios to onnxruntime-web (WASM), same page, interleaved</h2>',
           '<p class="small">The polyfill\'s median time over its peer\'s on the same graph and weights, '
           "measured in turn in one page (1 is parity, lower is faster). Read these, not the milliseconds: the "
           "machine is shared.</p>", '<div class="charts">']
    rows = []
    for case in _cases(results):
        for ti, target in enumerate(targets):
            r = by.get((case, target, POLYFILL))
            ratio = r.metrics.get("ratio", {}) if r else {}
            for pi, peer in enumerate(peers):
                if peer in ratio:
                    color = svg.color(len(peers) * ti + pi)
                    rows.append((f"{case} @ {target} / {peer.removeprefix('ort-')}", float(ratio[peer]), color))
    if rows:
        out.append(svg.hbars(rows, title="polyfill time / peer time", unit="ratio", mark=1.0,
                             label_width=300, width=820))
    else:
        out.append("<p>No case with an onnxruntime-web peer ran.</p>")
    out.append("</div>")
    out.append("<table><tr><th>case</th><th>browser</th><th>polyfill ms</th>"
               + "".join(f"<th>{escape(p)} ms</th>" for p in peers)
               + "".join(f"<th>× {escape(p)}</th>" for p in peers)
               + "<th>before (NumPy only) ms</th><th>build ms</th><th>agreement (max relative)</th></tr>")
    for case in _cases(results):
        for target in targets:
            r = by.get((case, target, POLYFILL))
            if r is None:
                continue
            ratio = r.metrics.get("ratio", {})
            agree = " ".join(f"{float(v['relative']):.1e}" for v in (r.metrics.get("agreement") or {}).values())
            cells = [_median(r), *(_median(by.get((case, target, p))) for p in peers)]
            out.append(
                f"<tr><td><code>{escape(case)}</code></td><td>{escape(target)}</td>"
                + "".join(f"<td>{'' if v is None else f'{v:.2f}'}</td>" for v in cells)
                + "".join(f"<td>{ratio[p]:.2f}</td>" if p in ratio else "<td></td>" for p in peers)
                + f"<td>{_fmt(_median(by.get((case, target, 'baseline'))))}</td>"
                f"<td>{_fmt(r.timings.get('build_ms'))}</td>"
                f"<td>{escape(agree)}</td></tr>"
            )
    out.append("</table>")
    return "\n".join(out)


def _fmt(v: Any) -> str:
    return "" if not isinstance(v, (int, float)) else f"{float(v):.3g}"


def _times(results: Sequence[Result], targets: Sequence[str]) -> str:
    timed = [r for r in results if _median(r) is not None]
    out = ['<h2 id="kernels">Kernels and models: median time per run</h2>',
           '<p class="small">End to end (writeTensor, dispatch, readTensor for the polyfill; session.run for '
           "onnxruntime-web), one dot per implementation and browser.</p>"]
    if not timed:
        return "\n".join(out) + "<p>No timings.</p>"
    series: list[str] = []
    for r in timed:
        if r.column not in series:
            series.append(r.column)
    for group in [*GROUPS, *sorted({r.op for r in timed} - set(GROUPS))]:
        of_group = [r for r in timed if r.op == group]
        if not of_group:
            continue
        rows: dict[str, dict[str, float]] = defaultdict(dict)
        for r in of_group:
            rows[r.case][r.column] = float(r.timings["median_ms"])
        out.append(svg.dotplot(list(rows.items()), series, title=f"{group}: median ms per run", label_width=180,
                               width=760))
    return "\n".join(out)


def startup_segments(visit: Mapping[str, Any]) -> list[float]:
    """One visit's STARTUP_SEGMENTS in ms: each stage's end minus the previous one's (0 for a stage the boot
    timings do not have, or that ended before the previous one, the two Pyodides overlapping)."""
    boot = visit.get("bootTimings") or {}
    ends = [boot.get(key) for key, _ in BOOT_STAGES]
    ctx = float(visit.get("contextMs") or 0)
    built = float(visit.get("builtMs") or 0)
    out, prev = [], 0.0
    for end in [*ends, ctx, built]:
        if isinstance(end, (int, float)) and end >= prev:
            out.append(float(end) - prev)
            prev = float(end)
        else:
            out.append(0.0)
    return [*out, float(visit.get("firstRunMs") or 0)]


def _startup(measures: Sequence[Mapping[str, Any]]) -> str:
    ms = _measures(measures, "startup")
    out = ['<h2 id="startup">Startup: script tag to a built graph</h2>',
           '<p class="small">Cold: an empty profile; warm: the same profile again (Chromium restarted on its '
           "on-disk profile, Firefox in the same context). Bytes are what the dev server sent.</p>"]
    if not ms:
        return "\n".join(out) + "<p>Not measured in this run (--skip-startup).</p>"
    rows, table = [], []
    for m in ms:
        s = m["data"]
        for label in ("cold", "warm"):
            x = s.get(label) or {}
            rows.append((f"{m['target']} {label} ({s.get('case', '')})", startup_segments(x)))
            built, wall = float(x.get("builtMs") or 0), float(x.get("wallMs") or 0)
            boot = json.dumps(x.get("bootTimings"), separators=(",", ":"))
            table.append(
                f"<tr><td>{escape(m['target'])}</td><td>{escape(s.get('case', ''))}</td><td>{label}</td>"
                f"<td>{built:.0f}</td><td>{wall:.0f}</td><td>{(x.get('bytes') or 0) / 1e6:.2f}</td>"
                f"<td>{escape(x.get('requests'))} ({escape(x.get('notModified'))} × 304)</td>"
                f'<td class="small" style="word-break:break-all"><code>{escape(boot)}</code></td></tr>'
            )
    out.append(svg.stacked(rows, STARTUP_SEGMENTS, title="startup breakdown, ms", label_width=260, width=820))
    out.append("<table><tr><th>browser</th><th>graph</th><th>visit</th><th>built ms</th><th>wall ms</th>"
               "<th>downloaded MB</th><th>requests</th><th>polyfill boot timings</th></tr>")
    out += table
    out.append("</table>")
    return "\n".join(out)


def _litert(results: Sequence[Result], targets: Sequence[str], measures: Sequence[Mapping[str, Any]]) -> str:
    ms = [m for m in _measures(measures, "litert") if "error" not in m["data"]]
    errs = [m for m in _measures(measures, "litert") if "error" in m["data"]]
    out = ['<h2 id="tflite">TFLite models: polyfill vs native LiteRT</h2>']
    if errs:
        out.append(f"<p>LiteRT could not run: {escape(errs[0]['data']['error'])}</p>")
    if not ms:
        return "\n".join(out) + ("" if errs else "<p>No TFLite model in this run.</p>")
    by = _by(results)
    out.append('<p class="small">Native LiteRT (XNNPACK, 1 thread, CPython) on the inputs the page used; the '
               "polyfill end to end. Error: max |polyfill − LiteRT| / max |LiteRT|.</p>")
    rows, table = [], []
    for case, s in ms[0]["data"].items():
        rows.append((f"{case} · litert", float(s["median"]), svg.color(0)))
        for ti, target in enumerate(targets):
            p = _median(by.get((case, target, POLYFILL)))
            if p:
                rows.append((f"{case} · {target}", p, svg.color(ti + 1)))
                err = s["relativeError"].get(target)
                table.append(
                    f"<tr><td><code>{escape(case)}</code></td><td>{escape(target)}</td><td>{p:.1f}</td>"
                    f"<td>{1000 / p:.1f}</td><td>{float(s['median']):.2f}</td><td>{p / float(s['median']):.1f}</td>"
                    f"<td>{'' if err is None else f'{float(err):.1e}'}</td></tr>"
                )
    out.append(svg.hbars(rows, title="median ms per run", label_width=300, width=820))
    out.append("<table><tr><th>model</th><th>browser</th><th>polyfill ms</th><th>fps</th><th>LiteRT ms</th>"
               "<th>× LiteRT</th><th>error</th></tr>")
    out += table
    out.append("</table>")
    return "\n".join(out)


def _network_table(t: Mapping[str, Any]) -> str:
    """Start-up over network profiles: a row per profile, browser and visit, with its targets."""
    if "error" in t:
        return f"<p>Start-up over network profiles not measured: <code>{escape(t['error'])}</code></p>"
    out = [f"<p>Start-up over network profiles from make dist's package (dist/ {float(t['dist']['filesMB']):.1f} MB, "
           f"{float(t['dist']['withSiblingsMB']):.1f} MB with .br/.gz), navigation start to a relu's result, median "
           f"of {escape(t['rounds'])} round(s):</p>",
           "<table><tr><th>profile</th><th>browser</th><th>visit</th><th>ms</th><th>target ms</th><th>MB</th>"
           "<th>requests</th><th>304</th><th>connections</th><th>holds</th></tr>"]
    for name, p in t["profiles"].items():
        for browser, entry in p["browsers"].items():
            if "error" in entry and not entry["cold"]:
                out.append(f"<tr><td>{escape(name)}</td><td>{escape(browser)}</td>"
                           f"<td colspan=8><code>{escape(entry['error'][:800])}</code></td></tr>")
                continue
            for label in ("cold", "warm"):
                if not entry[label]:
                    continue
                x = network.medians(entry[label])
                budget = network.target_ms(name, browser, label)
                out.append(f"<tr><td>{escape(name)}</td><td>{escape(browser)}</td><td>{label}</td>"
                           f"<td>{x['ms']:.0f}</td><td>{'' if budget is None else f'{budget:.0f}'}</td>"
                           f"<td>{x['bytes'] / 1e6:.2f}</td><td>{x['requests']:.0f}</td><td>{x['notModified']:.0f}"
                           f"</td><td>{x['connections']:.0f}</td>"
                           f"<td>{escape(network.verdict(name, browser, label, x))}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _node_and_network(measures: Sequence[Mapping[str, Any]]) -> str:
    out = ['<h2 id="node">The executor under Node, memory, start-up over network profiles</h2>']
    for m in _measures(measures, "node"):
        node = m["data"]
        if "error" in node:
            out.append(f"<p>Pyodide under Node failed: <code>{escape(str(node['error'])[-800:])}</code></p>")
            continue
        out.append(f"<p>Executor overhead <b>{float(node['overheadUsPerOp']):.1f} µs/op</b> (500-op chain "
                   f"{float(node['chain500Ms']):.2f} ms, 1-op {float(node['chain1Ms']):.3f} ms).</p>")
        mem = node.get("memory") or {}
        if mem:
            out.append(
                "<table><tr><th>MobileNetV2 runs</th><th>traced MB start → end</th><th>wasm heap MB start → end</th>"
                "<th>peak MB</th><th>budget MB</th><th>median run ms</th></tr>"
                f"<tr><td>{escape(mem.get('runs'))}</td><td>{_fmt(mem.get('currentStartMB'))} → "
                f"{_fmt(mem.get('currentEndMB'))}</td><td>{_fmt(mem.get('heapStartMB'))} → "
                f"{_fmt(mem.get('heapEndMB'))}</td><td>{_fmt(mem.get('peakMB'))}</td>"
                f"<td>{_fmt(mem.get('budgetMB'))}</td><td>{_fmt(mem.get('medianMs'))}</td></tr></table>"
            )
    for m in _measures(measures, "network"):
        out.append(_network_table(m["data"]))
    if len(out) == 1:
        out.append("<p>Not measured in this run (--skip-node, --skip-transfer).</p>")
    return "\n".join(out)


def _memory(measures: Sequence[Mapping[str, Any]]) -> str:
    out = ['<h2 id="memory">Memory a page pays</h2>',
           f'<p class="small">Each scenario in a browser launched for it (python -m bench memory). Targets: the '
           f"polyfill's context alone &lt;= {memory.IDLE_TARGET_MB:.0f} MB, MobileNetV2 on the polyfill &lt;= "
           f"{memory.MOBILENET_TARGET_RATIO:.0f}x onnxruntime-web's WASM EP. uasm: Chromium's "
           "measureUserAgentSpecificMemory (page + workers; it leaves WebAssembly memories out); PSS: the browser "
           "processes' proportional set size less the blank page's (every engine), all of them and the page's "
           "process alone.</p>"]
    for m in _measures(measures, "memory"):
        for browser, r in m["data"].items():
            if "error" in r:
                out.append(f"<p>{escape(browser)}: <code>{escape(str(r['error'])[:800])}</code></p>")
                continue
            t = r["table"]
            ratio, idle = t.get("mobilenetRatio"), t.get("idleMB")
            out.append(f"<h3>{escape(browser)} ({escape(memory.METHOD_TEXT[t['method']])})</h3>"
                       f"<p>context alone <b>{_fmt(idle)} MB</b>; MobileNetV2 polyfill / WASM EP <b>"
                       f"{_fmt(ratio)}x</b></p>")
            out.append("<table><tr><th>scenario</th><th>uasm MB</th><th>page</th><th>workers</th><th>PSS − blank"
                       "</th><th>page process</th><th>worker wasm</th><th>constants / packed / plan / tensors</th>"
                       "<th>page Pyodide</th></tr>")
            for name, row in t["rows"].items():
                u, p = row.get("uasm", {}), row.get("pss", {})
                st = r["scenarios"][name].get("stats") or {}
                mb = {k: _fmt(v / memory.MB) for k, v in st.items() if isinstance(v, (int, float))}
                parts = " / ".join(mb.get(k, "") for k in ("constantBytes", "weightBytes", "planBytes", "tensorBytes"))
                out.append(f"<tr><td>{escape(name)}</td><td>{_fmt(u.get('total'))}</td><td>{_fmt(u.get('page'))}"
                           f"</td><td>{_fmt(u.get('worker'))}</td><td>{_fmt(p.get('all'))}</td>"
                           f"<td>{_fmt(p.get('page'))}</td><td>{mb.get('wasmBytes', '')}</td>"
                           f"<td>{parts if st else ''}</td><td>{mb.get('pageHeapBytes', '')}</td></tr>")
            out.append("</table>")
    if len(out) == 2:
        out.append("<p>Not measured in this run (--skip-memory).</p>")
    return "\n".join(out)


def _environment(meta: Mapping[str, Any], probes: Sequence[Mapping[str, Any]],
                 results: Sequence[Result], measures: Sequence[Mapping[str, Any]]) -> str:
    out = ['<h2 id="environment">Browsers, implementations, problems</h2>']
    workers = {m["target"]: m["data"] for m in _measures(measures, "worker")}
    for p in probes:
        env = p.get("environment", {})
        states = "; ".join(
            f"{s['impl']}: {s['state']}" + (f" ({s['error'].get('name')}: {s['error'].get('message')})"
                                            if s.get("error") else "")
            for s in p.get("states", [])
        )
        w = workers.get(p["target"]) or {}
        out.append(
            f"<h3>{escape(p['target'])}: {escape(p['browser'])} {escape(p.get('browser_version', ''))}</h3>"
            f'<p class="small">{escape(env.get("userAgent", ""))}<br>crossOriginIsolated: '
            f"{escape(env.get('crossOriginIsolated'))}, cores: {escape(env.get('hardwareConcurrency'))}, polyfill "
            f"{escape(env.get('polyfill'))}<br>{escape(states)}<br>polyfill worker: {escape(w.get('stats'))}"
            + (f"<br>page errors: {escape(w.get('pageErrors'))}" if w.get("pageErrors") else "") + "</p>"
        )
    bad = [r for r in results if r.status == res.ERROR]
    problems = [f"{r.target}: {r.case}" + (" (baseline)" if r.variant == "baseline" else "") + ": "
                + "; ".join(r.errors) for r in bad]
    problems += [f"{m['target']}: {m['what']}: {m['data'].get('error') or m['data'].get('reason')}"
                 for m in _measures(measures, "error") + _measures(measures, "unavailable")]
    if problems:
        out.append("<h3>Problems</h3><ul>" + "".join(f"<li><code>{escape(x[:1500])}</code></li>" for x in problems)
                   + "</ul>")
    host = meta.get("host", {})
    out.append(f"<h3>host</h3><p>{escape(host.get('platform', ''))}, {escape(host.get('cpus', '?'))} CPUs; "
               f"command: <code>{escape(meta.get('command', ''))}</code></p>")
    return "\n".join(out)


def render(meta: Mapping[str, Any], probes: Sequence[Mapping[str, Any]], results: Sequence[Result],
           measures: Sequence[Mapping[str, Any]]) -> str:
    """The report's HTML."""
    targets = _targets(probes, results)
    nav = " · ".join(f'<a href="#{a}">{t}</a>' for a, t in (
        ("ratios", "ratios"), ("kernels", "kernels and models"), ("startup", "startup"), ("tflite", "TFLite"),
        ("node", "Node, memory, network"), ("memory", "page memory"), ("environment", "environment"),
        ("summary", "text summary")))
    text = "\n".join(summary_lines(meta, probes, results, measures))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>pyodide-webnn perf bench {escape(meta.get("id", ""))}</title><style>{CSS}</style></head><body>
<h1>Performance bench: run {escape(meta.get("id", ""))}</h1>
<p>{escape(meta.get("started", ""))} → {escape(meta.get("finished", ""))} · {escape(meta.get("cases", 0))} cases ·
{escape(", ".join(targets))} · <a href="/reports/">all runs</a></p>
<p><b>{escape(meta.get("headline", ""))}</b></p><p>{nav}</p>
{_ratios(results, targets)}
{_times(results, targets)}
{_startup(measures)}
{_litert(results, targets, measures)}
{_node_and_network(measures)}
{_memory(measures)}
{_environment(meta, probes, results, measures)}
<h2 id="summary">Text summary</h2><details><summary>as printed by make bench</summary><pre>{escape(text)}</pre>
</details>
<p class="small">Machine-readable: results.jsonl (probe, result and measure lines) and run.json next to this file
(perf schema {escape(meta.get("schema", PERF_SCHEMA))}). Generated by bench/report/perf.py.</p>
</body></html>"""


def headline(results: Sequence[Result]) -> str:
    """The polyfill against onnxruntime-web (1 thread) per browser in one line: the geometric mean of the ratios
    over the cases that have one, as the /reports/ listing shows it."""
    per: dict[str, list[float]] = defaultdict(list)
    for r in results:
        v = r.metrics.get("ratio", {}).get(PEERS[0]) if r.variant == "default" else None
        if isinstance(v, (int, float)) and v > 0:
            per[r.target].append(float(v))
    if not per:
        return ""
    parts = [f"{t} {math.exp(statistics.fmean(math.log(v) for v in vs)):.2f} ({len(vs)} case{'s' * (len(vs) > 1)})"
             for t, vs in per.items()]
    return f"polyfill / {PEERS[0]}, geomean: " + ", ".join(parts)


def write_report(run_dir: str | Path, meta: Mapping[str, Any] | None = None) -> Path:
    """Update run.json (counts, cases, targets, host) and write report.html; returns its path."""
    run_dir = Path(run_dir)
    full, probes, results, measures = load_run(run_dir)
    full = {**full, **(meta or {})}
    full.update({
        "id": run_dir.name,
        "kind": "perf",
        "schema": full.get("schema", PERF_SCHEMA),
        "counts": res.counts(results),
        "cases": len({r.case for r in results}),
        "targets": _targets(probes, results),
        "headline": headline(results),
    })
    full.setdefault("host", {"platform": platform.platform(), "cpus": os.cpu_count()})
    res.write_meta(run_dir, full)
    path = run_dir / res.REPORT
    path.write_text(render(full, probes, results, measures), encoding="utf-8")
    return path

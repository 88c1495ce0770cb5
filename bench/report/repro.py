"""A fuzz finding as a standalone HTML reproducer: plain `navigator.ml` calls written out one per line (no
polyfill, no bench, no imports), the expected outcome inline (the draft's error, or the float64 reference's
values with the WPT tolerance), and a PASS/FAIL line.  It runs in any browser with WebNN: what a browser
engineer attaches to an upstream bug.  https://www.w3.org/TR/webnn/"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bench.cases.graphs import BenchCase, wire_case
from bench.run import reference as ref
from bench.run.compare import tolerance_for

_ARRAYS = {"float32": "Float32Array", "float16": "Float16Array", "int32": "Int32Array", "uint32": "Uint32Array",
           "int64": "BigInt64Array", "uint64": "BigUint64Array", "int8": "Int8Array", "uint8": "Uint8Array"}


def _ident(name: str) -> str:
    return "v_" + re.sub(r"\W", "_", name)


def _js(v: Any) -> str:
    """A graph-file value (py_core/graphfile.py's JSON) as a JavaScript expression."""
    if isinstance(v, dict) and set(v) == {"$op"}:
        return _ident(v["$op"])
    if isinstance(v, dict) and set(v) == {"$n"}:
        text = str(v["$n"])
        return f"{text}n" if re.fullmatch(r"-?\d+", text) else ("-0" if text == "-0.0" else text)
    if isinstance(v, list):
        return "[" + ", ".join(_js(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_js(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


def _number(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return str(int(x)) if isinstance(x, (int, np.integer)) else float(x)


def expectation(case: BenchCase) -> dict[str, Any]:
    """What the reproducer checks: {"error": name} for a graph the draft refuses, else the float64 reference's
    outputs ({name: {dataType, shape, data, ulp, atol}})."""
    outcome = ref.reference(case, 0)
    if outcome.status != "ok":
        return {"error": outcome.error_name or "TypeError", "message": outcome.error}
    wide = ref.float64_reference(case)
    values = wide.outputs if wide.status == "ok" else outcome.outputs
    out = {}
    for name, arr in values.items():
        dtype = wide.dtypes.get(name, arr.dtype.name) if wide.status == "ok" else arr.dtype.name
        tol = tolerance_for(case, outcome.contexts, dtype)
        out[name] = {"dataType": dtype, "shape": list(arr.shape), "data": [_number(x) for x in arr.ravel().tolist()],
                     "ulp": tol.ulp, "atol": tol.atol}
    return {"outputs": out}


def script(case: BenchCase) -> str:
    """The graph as straight-line MLGraphBuilder calls, then build, dispatch and read."""
    wire = wire_case(case).to_json()
    lines = ["const builder = new MLGraphBuilder(context);"]
    if any(e.get("foreign") for e in [*wire["inputs"].values(), *wire["constants"].values()]):
        lines.append("const other = new MLGraphBuilder(context);  // its operands are foreign to `builder`")

    def owner(e: Mapping[str, Any]) -> str:
        return "other" if e.get("foreign") else "builder"

    for name, e in wire["inputs"].items():
        lines.append(f"const {_ident(name)} = {owner(e)}.input({json.dumps(name)}, "
                     f"{{dataType: {json.dumps(e['dataType'])}, shape: {json.dumps(e['shape'])}}});")
    for name, e in wire["constants"].items():
        kind, shape, fill = json.dumps(e["dataType"]), json.dumps(e["shape"]), json.dumps(bool(e["data"].get("fill")))
        lines.append(f"const {_ident(name)} = {owner(e)}.constant({{dataType: {kind}, shape: {shape}}}, "
                     f"data({kind}, {shape}, {json.dumps(e['data']['base64'])}, {fill}));")
    for op in wire["operations"]:
        args = [_js(a) for a in op["args"]] + ([_js(op["options"])] if op.get("options") else [])
        outs = op["outputs"]
        target = _ident(outs[0]) if len(outs) == 1 else "[" + ", ".join(_ident(o) for o in outs) + "]"
        lines.append(f"const {target} = builder.{op['op']}({', '.join(args)});")
    named = ", ".join(f"{json.dumps(k)}: {_ident(v)}" for k, v in wire["outputs"].items())
    lines.append(f"const outputs = {{{named}}};")
    lines.append("const graph = await builder.build(outputs);")
    feeds = {n: [e["dataType"], e["shape"], e["data"]["base64"], bool(e["data"].get("fill"))]
             for n, e in wire["inputs"].items()}
    lines.append(f"const feeds = {json.dumps(feeds)};")
    return "\n".join("  " + line for line in lines)


_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>WebNN reproducer: {title}</title>
<h1>{title}</h1>
<p>{about}</p>
<pre id="log"></pre>
<script type="module">
// {title}. Made by pyodide-webnn's bench (python -m bench run --cases {case_id}): plain navigator.ml calls.
const expected = {expected};
const log = (s) => {{ document.getElementById('log').textContent += s + '\\n'; console.log(s); }};
const ARRAYS = {{float32: Float32Array, float16: globalThis.Float16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array}};
function data(type, shape, base64, fill) {{
  const bin = atob(base64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const values = new ARRAYS[type](bytes.buffer);
  return fill ? new ARRAYS[type](shape.reduce((a, b) => a * b, 1)).fill(values[0]) : values;
}}
function ulps(a, b, type) {{  // distance in units in the last place, for float32 and float16
  const Bits = type === 'float16' ? Int16Array : Int32Array;
  const F = ARRAYS[type];
  const mask = type === 'float16' ? 0x7fff : 0x7fffffff;
  const ordered = (x) => {{ const i = new Bits(F.of(x).buffer)[0]; return i < 0 ? -(i & mask) : i; }};
  return Math.abs(ordered(a) - ordered(b));
}}
function close(got, want, type, ulp, atol) {{
  if (typeof got === 'bigint') return got === BigInt(want);
  want = Number(want);
  if (Number.isNaN(want) || Number.isNaN(got)) return Number.isNaN(want) && Number.isNaN(got);
  if (got === want) return true;
  if (!type.startsWith('float')) return false;
  return Math.abs(got - want) <= atol || ulps(got, want, type) <= ulp;
}}
let verdict = 'FAIL';
try {{
  const context = await navigator.ml.createContext();
  context.lost.then((info) => log(`context lost: ${{info.message}}`));
{script}
  const inputs = {{}};
  for (const [name, [type, shape, base64, fill]] of Object.entries(feeds)) {{
    inputs[name] = await context.createTensor({{dataType: type, shape, writable: true}});
    context.writeTensor(inputs[name], data(type, shape, base64, fill));
  }}
  const results = {{}};
  for (const [name, operand] of Object.entries(outputs)) {{
    results[name] = await context.createTensor({{dataType: operand.dataType, shape: operand.shape, readable: true}});
  }}
  context.dispatch(graph, inputs, results);
  if (expected.error) throw new Error(`built and ran, but the draft requires ${{expected.error}}`);
  let ok = true;
  for (const [name, want] of Object.entries(expected.outputs)) {{
    const got = new ARRAYS[want.dataType](await context.readTensor(results[name]));
    const bad = want.data.findIndex((w, i) => !close(got[i], w, want.dataType, want.ulp, want.atol));
    if (bad >= 0) {{
      ok = false;
      const within = `within ${{want.ulp}} ULP or ${{want.atol}}`;
      log(`${{name}}[${{bad}}] = ${{got[bad]}}, expected ${{want.data[bad]}} (${{within}})`);
    }}
  }}
  verdict = ok ? 'PASS' : 'FAIL';
}} catch (e) {{
  log(`${{e.name}}: ${{e.message}}`);
  verdict = expected.error && e.name === expected.error ? 'PASS' : 'FAIL';
}}
log(verdict);
document.title = verdict + ': ' + document.title;
</script>
"""


def page(case: BenchCase, about: str = "") -> str:
    """The reproducer page of one case."""
    exp = expectation(case)
    want = f"expected: {exp['error']}" if "error" in exp else "expected: the values below (float64 reference)"
    return _PAGE.format(title=html.escape(f"{case.id} {case.description}"), about=html.escape(f"{about} {want}"),
                        case_id=case.id, expected=json.dumps(exp), script=script(case))


def write(case: BenchCase, directory: str | Path, about: str = "") -> Path:
    """Write the reproducer of `case` into `directory`; returns its path."""
    path = Path(directory) / (re.sub(r"[^\w.-]", "-", case.id) + ".html")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(case, about), encoding="utf-8")
    return path


def expected_summary(exp: Mapping[str, Any]) -> str:
    """One line: what the reproducer expects."""
    return exp["error"] if "error" in exp else ", ".join(f"{n}: {o['dataType']}{o['shape']}"
                                                          for n, o in exp["outputs"].items())

"""Data-driven WPT conformance runner: build each case's graph with GraphBuilder, run it, compare outputs.
https://github.com/web-platform-tests/wpt/tree/master/webnn/conformance_tests

A case is the JSON form of a WPT `webnn_conformance_test` graph (see tests/data/wpt/README.md).  Operands are
named by string in an operator's arguments, also inside the options dictionary and in sequences; positional
arguments keep their order; `constant: true` inputs become constants; `foreign: true` inputs are made by a second
builder (a defect the bench's fuzzer writes).  Outputs are compared in data type and shape exactly and in value
under the WPT tolerance rules (py_core.testing.tolerance).

    python -m py_core.testing.wpt [--json] [--op NAME] DIR

Pure Python + NumPy: the same runner runs inside Pyodide (tests/pyodide/run_wpt.mjs).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from py_core.testing.tolerance import (
    MAX_INDEX_TO_VALIDATE,
    OpUnderTest,
    Tolerance,
    check,
    graph_tolerance,
)

PASS, FAIL, ERROR, UNSUPPORTED, INVALID = "pass", "fail", "error", "unsupported", "invalid"
STATUSES = (PASS, FAIL, ERROR, UNSUPPORTED, INVALID)

_INT_RE = re.compile(r"^-?\d+n?$")
_INT_BITS = {"int8": 8, "uint8": 8, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64}


@dataclass
class Case:
    """One conformance case: the operator file it comes from, its name and its graph."""

    op: str
    name: str
    graph: dict[str, Any]
    source: str = ""

    @property
    def id(self) -> str:
        return f"{self.op}/{self.name}"


@dataclass
class CaseResult:
    """The outcome of one case, JSON-ready."""

    op: str
    name: str
    status: str
    max_ulp: float | None = None
    max_abs: float | None = None
    message: str = ""
    tolerance: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def id(self) -> str:
        return f"{self.op}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("max_ulp", "max_abs"):
            v = out[k]
            if isinstance(v, float) and not math.isfinite(v):
                out[k] = str(v)  # JSON has no inf/nan
        return out


class InvalidCase(Exception):
    """The case data cannot be run as written (e.g. a value lost in the JSON conversion)."""


# ------------------------------------------------------------------------------------------- loading

def snake_to_camel(name: str) -> str:
    """average_pool2d -> averagePool2d, the WPT file name to the builder method name."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def load_file(path: str | Path) -> list[Case]:
    """The cases of one operator file."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    tests = data.get("tests", [])
    op = ""
    for t in tests:
        ops = t.get("graph", {}).get("operators", [])
        if ops:
            op = ops[0].get("name", "")
            break
    op = op or snake_to_camel(data.get("operation", path.stem))
    return [Case(op, t["name"], t["graph"], path.name) for t in tests]


def load_dir(directory: str | Path, op: str | None = None) -> list[Case]:
    """Every case under `directory` (sorted by file), optionally only those of operator `op` (builder name
    such as `averagePool2d`, or file stem such as `average_pool2d`)."""
    cases: list[Case] = []
    for path in sorted(Path(directory).glob("*.json")):
        file_cases = load_file(path)
        names = (path.stem, snake_to_camel(path.stem))
        if op and op not in names and not any(c.op == op for c in file_cases):
            continue
        cases.extend(file_cases)
    return cases


def operator_files(directory: str | Path) -> dict[str, int]:
    """Operator name -> number of cases, for every file (including files with no cases)."""
    out: dict[str, int] = {}
    for path in sorted(Path(directory).glob("*.json")):
        cases = load_file(path)
        name = cases[0].op if cases else snake_to_camel(path.stem)
        out[name] = out.get(name, 0) + len(cases)
    return out


# ------------------------------------------------------------------------------------ value decoding

def has_null(v: Any) -> bool:
    """True where the case data holds a null (a value the JSON conversion could not carry)."""
    if v is None:
        return True
    if isinstance(v, dict):
        return any(has_null(x) for x in v.values())
    if isinstance(v, list):
        return any(has_null(x) for x in v)
    return False


def decode_scalar(v: Any) -> Any:
    """A JSON value as the JS test would see it: "123n" (BigInt) and integer strings become ints."""
    if isinstance(v, str) and _INT_RE.match(v):
        return int(v.rstrip("n"))
    return v


def _wrap_int(v: Any, dtype: str) -> int:
    """JS typed-array conversion to an integer type: truncate, then wrap modulo 2^bits."""
    v = decode_scalar(v)
    if isinstance(v, float):
        v = 0 if not math.isfinite(v) else math.trunc(v)
    bits = _INT_BITS[dtype]
    v = int(v) % (1 << bits)
    if not dtype.startswith("u") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def to_array(data: Any, dtype: str, shape: Sequence[int]) -> np.ndarray:
    """Case data as an array of `dtype` and `shape`; a scalar with a larger shape fills it (WPT)."""
    count = 1
    for d in shape:
        count *= d
    if not isinstance(data, list):
        one = _wrap_int(data, dtype) if dtype in _INT_BITS else float(decode_scalar(data))
        return np.full(tuple(shape), one, dtype=dtype)
    if len(data) != count:
        raise InvalidCase(f"{len(data)} values given for shape {list(shape)} ({count} elements)")
    if dtype in _INT_BITS:
        flat = np.array([_wrap_int(v, dtype) for v in data], dtype=dtype)
    else:
        # round once from the JSON double to the operand type, as the WPT typed arrays do
        flat = np.array([float(decode_scalar(v)) for v in data], dtype=np.float64).astype(dtype)
    return flat.reshape(tuple(shape))


def expected_values(data: Any, dtype: str, shape: Sequence[int]) -> tuple[np.ndarray, bool]:
    """Expected output values kept exact (float64 for floats, the integer type for integers), and whether
    only a prefix is compared (scalar fill of a large tensor: WPT compares the first 1000 elements)."""
    count = 1
    for d in shape:
        count *= d
    if not isinstance(data, list) and count > 1:
        n = min(count, MAX_INDEX_TO_VALIDATE)
        prefix = True
    else:
        n, prefix = count, False
        if isinstance(data, list) and len(data) != count:
            raise InvalidCase(f"{len(data)} expected values for shape {list(shape)} ({count} elements)")
    values = data if isinstance(data, list) else [data] * n
    if dtype in _INT_BITS:
        return np.array([_wrap_int(v, dtype) for v in values], dtype=dtype), prefix
    return np.array([float(decode_scalar(v)) for v in values], dtype=np.float64), prefix


# ------------------------------------------------------------------------------------- graph building

def _operator_names(graph: Mapping[str, Any]) -> list[str]:
    return [o["name"] for o in graph.get("operators", [])]


def _resolve(value: Any, kind: str | None, operands: Mapping[str, Any], what: str) -> Any:
    """An argument value: operand names (alone or in a list) become operands; other values are decoded."""
    from py_core.spec.table import OPERAND_KINDS

    is_operand = kind in OPERAND_KINDS if kind is not None else None
    if isinstance(value, str) and (is_operand or (is_operand is None and value in operands)):
        if value not in operands:
            raise InvalidCase(f"{what}: no operand named '{value}'")
        return operands[value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value) and (
            is_operand or (is_operand is None and all(v in operands for v in value))):
        missing = [v for v in value if v not in operands]
        if missing:
            raise InvalidCase(f"{what}: no operands named {missing}")
        return [operands[v] for v in value]
    if isinstance(value, list):
        return [decode_scalar(v) for v in value]
    return decode_scalar(value)


def _param_kind(spec: Any, name: str, position: int | None) -> str | None:
    if position is not None:
        return spec.params[position].kind if position < len(spec.params) else None
    try:
        return spec.param(name).kind
    except KeyError:
        return None


def _is_operand(value: Any, cls: type) -> bool:
    return isinstance(value, cls) or (isinstance(value, list) and bool(value) and isinstance(value[0], cls))


def build_graph(graph: Mapping[str, Any]) -> tuple[Any, dict[str, np.ndarray], list[OpUnderTest]]:
    """Build a case's graph; returns (built Graph, input arrays by name, tolerance contexts of its ops)."""
    from py_core.builder import BuilderOperand, GraphBuilder
    from py_core.spec import OPS

    builder = GraphBuilder()
    other = GraphBuilder()  # makes the operands a case marks `foreign`: another builder's, which `builder` refuses
    operands: dict[str, Any] = {}
    feeds: dict[str, np.ndarray] = {}
    for name, spec_in in graph.get("inputs", {}).items():
        desc = spec_in["descriptor"]
        dtype, shape = desc["dataType"], tuple(desc["shape"])
        owner = other if spec_in.get("foreign") else builder
        if spec_in.get("constant"):
            operands[name] = owner.constant({"dataType": dtype, "shape": list(shape)},
                                            to_array(spec_in["data"], dtype, shape))
        else:
            operands[name] = owner.input(name, {"dataType": dtype, "shape": list(shape)})
            feeds[name] = to_array(spec_in["data"], dtype, shape)

    contexts: list[OpUnderTest] = []
    for op in graph.get("operators", []):
        spec = OPS[op["name"]]
        positional: list[Any] = []
        options: dict[str, Any] = {}
        ctx_shapes: list[tuple[int, ...]] = []
        ctx_values: dict[str, Any] = {}
        for arg in op.get("arguments", []):
            for key, value in arg.items():
                if key == "options":
                    for oname, ovalue in value.items():
                        kind = _param_kind(spec, oname, None)
                        resolved = _resolve(ovalue, kind, operands, f"{op['name']} option {oname}")
                        options[oname] = resolved
                        ctx_values[oname] = ovalue if _is_operand(resolved, BuilderOperand) else resolved
                else:
                    pos = len(positional)
                    resolved = _resolve(value, _param_kind(spec, key, pos), operands, f"{op['name']} {key}")
                    positional.append(resolved)
                    if _is_operand(resolved, BuilderOperand):
                        items = resolved if isinstance(resolved, list) else [resolved]
                        ctx_shapes.extend(tuple(r.shape) for r in items)
                    else:
                        ctx_values[key] = resolved
        result = getattr(builder, op["name"])(*positional, options=options)
        outs = op.get("outputs")
        if isinstance(outs, list):
            results = result if isinstance(result, list) else [result]
            if len(results) != len(outs):
                raise ValueError(f"{op['name']} returned {len(results)} outputs, expected {len(outs)}")
            for oname, r in zip(outs, results, strict=True):
                operands[oname] = r
        else:
            if isinstance(result, list):
                if len(result) != 1:
                    raise ValueError(f"{op['name']} returned {len(result)} outputs, the case expects one")
                result = result[0]
            operands[outs] = result
        contexts.append(OpUnderTest(op["name"], tuple(ctx_shapes), ctx_values))

    # `buildOutputs` ({output name: operand name}) passes build() other names than the operands' own
    named = graph.get("buildOutputs")
    wanted = dict(named) if named is not None else {n: n for n in graph.get("expectedOutputs", {})}
    outputs = {}
    for name, operand in wanted.items():
        if operand not in operands:
            raise InvalidCase(f"expected output '{operand}' is not produced by any operator")
        outputs[name] = operands[operand]
    built = builder.build(outputs)
    return built, feeds, contexts


# ---------------------------------------------------------------------------------------------- running

def run_case(case: Case) -> CaseResult:
    """Build, run and check one case."""
    from py_core.runtime.executor import prepare
    from py_core.spec import OPS

    start = time.perf_counter()
    result = CaseResult(case.op, case.name, PASS)
    try:
        graph = case.graph
        if has_null(graph.get("inputs")) or has_null(graph.get("operators")) or has_null(
                graph.get("expectedOutputs")):
            raise InvalidCase("the case data holds null where the JSON conversion dropped a non-finite value")
        missing = [n for n in _operator_names(graph) if n not in OPS]
        if missing:
            result.status = UNSUPPORTED
            result.message = f"operator(s) not in py_core.spec.OPS: {', '.join(sorted(set(missing)))}"
            return result
        built, feeds, contexts = build_graph(graph)
        exe = prepare(built)
        feeds = {k: v for k, v in feeds.items() if k in exe.input_descs}
        actual = exe.run(feeds)
        worst_ulp, worst_abs, problems = 0.0, 0.0, []
        tol_seen: Tolerance | None = None
        for name, exp in graph["expectedOutputs"].items():
            desc = exp["descriptor"]
            dtype, shape = desc["dataType"], tuple(desc["shape"])
            arr = np.asarray(actual[name])
            if arr.dtype.name != dtype or tuple(arr.shape) != shape:
                problems.append(
                    f"{name}: got {arr.dtype.name}{list(arr.shape)}, expected {dtype}{list(shape)}")
                continue
            values, prefix = expected_values(exp["data"], dtype, shape)
            got = arr.reshape(-1)[: values.size] if prefix else arr
            tol = graph_tolerance(contexts, dtype)
            tol_seen = tol
            ok, max_ulp, max_abs = check(contexts, got, values, dtype, tolerance=tol)
            worst_ulp, worst_abs = max(worst_ulp, max_ulp), max(worst_abs, max_abs)
            if not ok:
                problems.append(f"{name}: max {max_ulp:g} ULP / {max_abs:g} abs exceeds "
                                f"{tol.ulp} ULP" + (f" / {tol.atol:g} ATOL" if tol.atol else ""))
        result.max_ulp, result.max_abs = worst_ulp, worst_abs
        result.tolerance = tol_seen.to_json() if tol_seen else {}
        if problems:
            result.status = FAIL
            result.message = "; ".join(problems)
    except InvalidCase as e:
        result.status = INVALID
        result.message = str(e)
    except Exception as e:  # noqa: BLE001 - a conformance run reports every failure, it never stops
        result.status = ERROR
        where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
        result.message = f"{type(e).__name__}: {e}{at}"
    finally:
        result.seconds = round(time.perf_counter() - start, 4)
    return result


def run_cases(cases: Iterable[Case]) -> Iterator[CaseResult]:
    """Run cases one by one."""
    for case in cases:
        yield run_case(case)


def run_dir(directory: str | Path, op: str | None = None) -> list[CaseResult]:
    """Run every case under `directory` (optionally one operator)."""
    return list(run_cases(load_dir(directory, op)))


def summarize(results: Iterable[CaseResult], operators: Mapping[str, int] | None = None
              ) -> dict[str, dict[str, int]]:
    """Counts per operator and status; `operators` adds operators whose files hold no case."""
    out: dict[str, dict[str, int]] = {}
    for name in operators or {}:
        out.setdefault(name, dict.fromkeys(STATUSES, 0))
    for r in results:
        counts = out.setdefault(r.op, dict.fromkeys(STATUSES, 0))
        counts[r.status] += 1
    return dict(sorted(out.items()))


def format_table(summary: Mapping[str, Mapping[str, int]]) -> str:
    """The summary as a fixed-width text table with a total row."""
    width = max([len(k) for k in summary] + [8])
    head = f"{'operator':<{width}}  {'cases':>5}  {'passed':>6}  {'failed':>6}  {'error':>5}  " \
           f"{'unsupp.':>7}  {'invalid':>7}"
    lines = [head, "-" * len(head)]
    total = dict.fromkeys(STATUSES, 0)
    for op, c in summary.items():
        n = sum(c.values())
        lines.append(f"{op:<{width}}  {n:>5}  {c[PASS]:>6}  {c[FAIL]:>6}  {c[ERROR]:>5}  "
                     f"{c[UNSUPPORTED]:>7}  {c[INVALID]:>7}")
        for k in STATUSES:
            total[k] += c[k]
    lines.append("-" * len(head))
    lines.append(f"{'total':<{width}}  {sum(total.values()):>5}  {total[PASS]:>6}  {total[FAIL]:>6}  "
                 f"{total[ERROR]:>5}  {total[UNSUPPORTED]:>7}  {total[INVALID]:>7}")
    return "\n".join(lines)


def report(results: Sequence[CaseResult], operators: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Everything a caller (CLI --json, the Pyodide runner, the bench) needs, JSON-ready."""
    return {
        "summary": summarize(results, operators),
        "passed": sorted(r.id for r in results if r.status == PASS),
        "results": [r.to_json() for r in results],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: summary table per operator; --json prints the pass list and per-case results instead."""
    parser = argparse.ArgumentParser(prog="python -m py_core.testing.wpt", description=__doc__.split("\n")[0])
    parser.add_argument("directory", help="directory of WPT case JSON files (e.g. tests/data/wpt)")
    parser.add_argument("--op", help="only this operator (builder name, e.g. conv2d, or file stem)")
    parser.add_argument("--json", action="store_true", help="print JSON (summary, pass list, results)")
    parser.add_argument("--failures", action="store_true", help="list failing cases with their messages")
    args = parser.parse_args(argv)
    results = run_dir(args.directory, args.op)
    operators = operator_files(args.directory)
    if args.op:
        operators = {k: v for k, v in operators.items() if k == args.op or snake_to_camel(args.op) == k}
    if args.json:
        json.dump(report(results, operators), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(format_table(summarize(results, operators)))
        if args.failures:
            for r in results:
                if r.status in (FAIL, ERROR, INVALID):
                    print(f"[{r.status}] {r.id}: {r.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

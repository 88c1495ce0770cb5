"""The fuzzer's verdict on one implementation: does it accept or reject the graph as the CPython reference
does (whose errors are the draft's, bench/cases/fuzz_defects.py), with the same error type and output
descriptors; did it lose its context or hang.  Values are then judged by the float64 reference
(bench/run/compare.py), so a value finding names who is wrong.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.run.reference import Outcome

ACCEPTED, REJECTED, HANG = "accepted", "rejected", "hang"

# Every category a fuzz result falls in, the agreeing one first; the report counts them in this order.
AGREE = "agree"
CATEGORIES = (
    AGREE,
    "accepts invalid",  # built a graph the draft requires a TypeError for
    "rejects valid",  # a builder method threw on a valid call
    "build failure",  # build() failed on a graph its own builder accepted
    "compute failure",  # built, then failed to run
    "error type",  # rejected, with another error than the draft's
    "descriptor",  # outputs of other data types or shapes
    "values",  # out of tolerance against the float64 reference
    "lost context",  # the context was lost during the case
    "hang",  # a step did not settle within the page's timeout
    "crash",  # the page itself crashed (the bench reopens it)
    "unsupported",  # refused with NotSupportedError, or a type opSupportLimits() does not list
)


def page_outcome(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What the page's run (webnnBench.run) did, as a fuzz outcome."""
    out: dict[str, Any]
    if raw.get("status") == "ok":
        out = {"verdict": ACCEPTED, "descriptors": {n: {"dataType": o["dataType"], "shape": list(o["shape"])}
                                                     for n, o in raw.get("outputs", {}).items()}}
    else:
        err = raw.get("error") or {}
        name = str(err.get("thrown") or err.get("name") or "Error")
        out = {"verdict": HANG if err.get("name") == "TimeoutError" else REJECTED, "stage": raw.get("stage", ""),
               "error": name, "message": str(err.get("message", ""))[:500]}
        if err.get("name") == "NotSupportedError" and raw.get("stage") == "builder":
            out["unsupported"] = f"{err.get('message', '')}"[:200]  # a type opSupportLimits() does not list
        if err.get("limits"):
            out["limits"] = err["limits"]
    if raw.get("contextLost"):
        out["lost"] = str(raw["contextLost"])
    return out


def reference_outcome(outcome: Outcome) -> dict[str, Any]:
    """What the CPython reference did with the case: the expectation."""
    if outcome.status == "ok":
        return {"verdict": ACCEPTED, "descriptors": {n: {"dataType": a.dtype.name, "shape": list(a.shape)}
                                                     for n, a in outcome.outputs.items()}}
    return {"verdict": REJECTED, "stage": outcome.stage, "error": outcome.error_name or "Error",
            "message": outcome.error[:500]}


def operand_types(graph: Mapping[str, Any]) -> dict[str, str]:
    """Every operand of a fuzz case graph by name: its data type (inputs, and the types the generator
    recorded for each operator's outputs)."""
    types = {n: s["descriptor"]["dataType"] for n, s in graph.get("inputs", {}).items()}
    for op in graph.get("operators", []):
        outs = op["outputs"] if isinstance(op["outputs"], list) else [op["outputs"]]
        types.update(zip(outs, op.get("dataTypes", []), strict=False))
    return types


def outside_limits(graph: Mapping[str, Any], limits: Mapping[str, Any]) -> str:
    """Which operand of the refused operator has a type its opSupportLimits() entry does not list ('' if
    none): the implementation lacks the feature, as WPT counts it."""
    from py_core.spec import OPS

    op, entry = limits.get("op"), limits.get("entry") or {}
    if op not in OPS or not isinstance(entry, Mapping):
        return ""
    types = operand_types(graph)
    for step in graph.get("operators", []):
        if step["name"] != op:
            continue
        for arg in step["arguments"]:
            for key, value in {**arg, **arg.get("options", {})}.items():
                listed = (entry.get(key) or {}).get("dataTypes") if isinstance(entry.get(key), Mapping) else None
                for name in value if isinstance(value, list) else [value]:
                    if listed is not None and isinstance(name, str) and types.get(name, "") not in (*listed, ""):
                        return f"opSupportLimits().{op}.{key} lists no {types[name]}"
    return ""


def compare(mine: Mapping[str, Any], expected: Mapping[str, Any], graph: Mapping[str, Any] | None = None
            ) -> tuple[str, str]:
    """(category, problem): how an implementation's outcome differs from the expected one; (AGREE, '')."""
    if mine.get("lost"):
        return "lost context", f"the context was lost: {mine['lost']}"
    if mine["verdict"] == HANG:
        return "hang", f"{mine.get('stage')}: {mine.get('message')}"
    if mine.get("stage") == "page":
        return "crash", f"{mine.get('error')}: {mine.get('message')}"
    if expected["verdict"] == REJECTED:
        if mine["verdict"] == ACCEPTED:
            return "accepts invalid", f"built and ran a graph refused with {expected['error']}: {expected['message']}"
        if mine["error"] != expected["error"]:
            return "error type", f"{mine['stage']}: {mine['error']} where {expected['error']} is expected"
        return AGREE, ""
    if mine["verdict"] == REJECTED:
        what = f"{mine['stage']}: {mine['error']}: {mine['message']}"
        if mine.get("unsupported"):
            return "unsupported", what
        why = outside_limits(graph or {}, mine["limits"]) if mine.get("limits") else ""
        if why and mine["stage"] == "builder" and mine["error"] == "TypeError":
            return "unsupported", f"{why}: {what}"
        category = {"builder": "rejects valid", "build": "build failure"}.get(mine["stage"], "compute failure")
        return category, what
    if mine["descriptors"] != expected["descriptors"]:
        return "descriptor", f"outputs {mine['descriptors']}, expected {expected['descriptors']}"
    return AGREE, ""

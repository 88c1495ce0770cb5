"""The perf run's names, shared by the run (bench/perf/run.py) and its report (bench/report/perf.py)."""

from __future__ import annotations

# run.json "schema" of a perf run
PERF_SCHEMA = 1
# the page's implementation names -> (Result.implementation, Result.variant)
PAGE_IMPLS = {"polyfill": ("polyfill", "default"), "ort-wasm-1t": ("wasm", "1-thread"),
              "ort-wasm-2t": ("wasm", "2-threads")}
POLYFILL = "polyfill"


def impl_of(page_name: str) -> tuple[str, str]:
    """(implementation, variant) of a perf.js implementation name; a new one (e.g. 'ort-webnn') keeps its name."""
    return PAGE_IMPLS.get(page_name, (page_name, "default"))


def page_name(impl: str, variant: str) -> str:
    """The perf.js implementation name of (implementation, variant): what the text summary prints."""
    for k, v in PAGE_IMPLS.items():
        if v == (impl, variant):
            return k
    return impl if variant == "default" else f"{impl}:{variant}"


# the report's chart groups, in order: what a case's PerfCase.group may be
GROUPS = ("model", "kernel", "chain", "tflite")

"""Machine-readable results of a bench run: one directory per run.

    <reports>/<run id>/
        run.json        the run: id, start and end time, command line, selection, environment, counts
        results.jsonl   one JSON object per line: "probe" lines (what each browser offers) and "result" lines
                        (case, implementation, browser and version, device variant, status, errors, timings)
        outputs/        the output tensors of each result (.npz), for the pairwise comparison
        report.html     the self-contained report (bench/report/comparison.py; a perf run's: bench/report/perf.py)

A perf run (`make bench`, bench/perf/run.py) is the same directory with run.json "kind": "perf" and a
"schema" version; its result lines carry `metrics` (ratios to the peers measured in the same page), and
"measure" lines hold what is not a case (startup, LiteRT, the executor under Node, start-up over network profiles).

Writers from several processes (pytest-xdist workers) append to their own results.<worker>.jsonl; the
controller merges them into results.jsonl when the run ends.  Standard library + NumPy only.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from web.paths import inside

RUN_JSON = "run.json"
RESULTS = "results.jsonl"
REPORT = "report.html"
OUTPUTS = "outputs"

# Statuses of a result line.  "unavailable": the implementation is absent or unusable in that browser (the
# probe's state and the browser's own message are in `errors`); never a crash, always a reported state.
PASS, FAIL, ERROR, UNSUPPORTED, UNAVAILABLE, INVALID = (
    "pass",
    "fail",
    "error",
    "unsupported",
    "unavailable",
    "invalid",
)
STATUSES = (PASS, FAIL, ERROR, UNSUPPORTED, UNAVAILABLE, INVALID)


def now_iso() -> str:
    """The local time, ISO 8601 with its offset, to the second."""
    return _dt.datetime.now(_dt.UTC).astimezone().isoformat(timespec="seconds")


def new_run_id() -> str:
    """A sortable, unique directory name: 20261121-101500-3fa2."""
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _finite(v: Any) -> Any:
    """JSON has no inf/nan: write them as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def as_float(v: Any) -> float | None:
    """A number read back from a result line ("inf" strings included)."""
    if v is None:
        return None
    return float(v)


@dataclass
class Result:
    """One (case, implementation, browser) outcome."""

    case: str
    implementation: str  # "polyfill" | "native" | "reference" | "wasm" (a framework case's own WASM path)
    variant: str  # context variant: "default", "gpu", "npu", "low-power", "not-accelerated", ...
    status: str
    browser: str  # "chromium", "firefox", "cpython"
    browser_version: str = ""
    target: str = ""  # "chromium", "firefox", "remote-<name>-chromium", "cpython"
    ops: list[str] = field(default_factory=list)
    op: str = ""
    model: str | None = None
    source: str = ""
    errors: list[str] = field(default_factory=list)
    max_ulp: float | None = None
    max_abs: float | None = None
    tolerance: dict[str, Any] = field(default_factory=dict)
    expected: str | None = None  # where the expected values came from: "case", "float64 reference", "reference"
    timings: dict[str, Any] = field(default_factory=dict)
    outputs: str | None = None  # path of the .npz, relative to the run directory
    truncated: list[str] = field(default_factory=list)  # outputs too large to ship whole: first values only
    metrics: dict[str, Any] = field(default_factory=dict)  # perf runs: ratios to peers, agreement, build times
    test_id: str = ""
    time: str = field(default_factory=now_iso)

    @property
    def label(self) -> str:
        """Implementation and variant, e.g. "polyfill", "native:gpu", "reference"."""
        # native always names its context variant; polyfill, wasm and a perf run's peers only a non-default one
        bare = self.implementation != "native" and self.variant == "default"
        if self.implementation == "reference" or bare:
            return self.implementation
        return f"{self.implementation}:{self.variant}"

    @property
    def column(self) -> str:
        """Implementation label and target: one column of the pass matrix."""
        return self.label if self.implementation == "reference" else f"{self.label}@{self.target}"

    def to_json(self) -> dict[str, Any]:
        """The result as a results.jsonl line."""
        return {"kind": "result", **_finite(asdict(self))}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Result:
        """A result read back from a results.jsonl line."""
        names = cls.__dataclass_fields__
        r = cls(**{k: v for k, v in d.items() if k in names})
        r.max_ulp, r.max_abs = as_float(r.max_ulp), as_float(r.max_abs)
        return r


# Outputs above this size are stored as their first values only (as the page ships them; WPT compares 1000).
MAX_STORED_BYTES = 16 << 20
PREFIX_ELEMENTS = 1000


def _kept(a: np.ndarray) -> np.ndarray:
    return a if a.nbytes <= MAX_STORED_BYTES else a.reshape(-1)[:PREFIX_ELEMENTS].copy()


class RunWriter:
    """Appends probe and result lines of one process to a run directory, and stores output tensors."""

    def __init__(self, run_dir: str | Path, worker: str | None = None) -> None:
        self.dir = Path(run_dir)
        self.worker = worker
        self.count = 0

    @property
    def results_path(self) -> Path:
        """This writer's JSON-lines file (one per xdist worker)."""
        return self.dir / (f"results.{self.worker}.jsonl" if self.worker else RESULTS)

    def _append(self, obj: Mapping[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps(obj, separators=(",", ":"), default=str) + "\n"
        with open(self.results_path, "a", encoding="utf-8") as fh:
            fh.write(line)

    def probe(self, probe: Mapping[str, Any]) -> None:
        """Append a probe line."""
        self._append({"kind": "probe", **_finite(dict(probe))})

    def measure(self, what: str, target: str, data: Mapping[str, Any]) -> None:
        """Append a "measure" line: a perf run's measurement that is not a case (startup, litert, node, ...)."""
        self._append({"kind": "measure", "what": what, "target": target, "data": _finite(dict(data))})

    def result(self, result: Result, outputs: Mapping[str, np.ndarray] | None = None) -> Result:
        """Append a result line; store its output tensors under outputs/."""
        if outputs:
            key = hashlib.sha1(f"{result.case}|{result.column}".encode()).hexdigest()[:16]
            rel = f"{OUTPUTS}/{key}.npz"
            (self.dir / OUTPUTS).mkdir(parents=True, exist_ok=True)
            arrays: dict[str, Any] = {f"o{i}": _kept(np.asarray(v)) for i, v in enumerate(outputs.values())}
            arrays["__names__"] = np.array(list(outputs), dtype=str)
            np.savez(self.dir / rel, **arrays)
            result.outputs = rel
        self._append(result.to_json())
        self.count += 1
        return result


def load_outputs(run_dir: str | Path, rel: str | None) -> dict[str, np.ndarray] | None:
    """The output tensors a result line points at."""
    if not rel:
        return None
    path = Path(run_dir) / rel
    if not path.is_file() or not inside(run_dir, path):  # `rel` comes from a results line: data, not a path
        return None
    with np.load(path) as z:
        names = list(z["__names__"])
        return {str(n): z[f"o{i}"] for i, n in enumerate(names)}


def iter_lines(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """Every line of results.jsonl and of any unmerged per-worker file."""
    run_dir = Path(run_dir)
    files = [run_dir / RESULTS] + sorted(run_dir.glob("results.*.jsonl"))
    for f in files:
        if not f.is_file():
            continue
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    try:
                        yield json.loads(line)
                    except ValueError:
                        continue  # a line cut short by a killed worker


def load(run_dir: str | Path) -> tuple[list[dict[str, Any]], list[Result]]:
    """(probe lines, results) of a run."""
    probes, results = [], []
    for d in iter_lines(run_dir):
        if d.get("kind") == "probe":
            probes.append(d)
        elif d.get("kind") == "result":
            results.append(Result.from_json(d))
    return probes, results


def load_measures(run_dir: str | Path) -> list[dict[str, Any]]:
    """The "measure" lines of a run: {"what", "target", "data"}."""
    return [d for d in iter_lines(run_dir) if d.get("kind") == "measure"]


def merge(run_dir: str | Path) -> None:
    """Fold per-worker result files into results.jsonl."""
    run_dir = Path(run_dir)
    parts = sorted(run_dir.glob("results.*.jsonl"))
    if not parts:
        return
    with open(run_dir / RESULTS, "a", encoding="utf-8") as out:
        for p in parts:
            out.write(p.read_text(encoding="utf-8"))
            p.unlink()


def write_meta(run_dir: str | Path, meta: Mapping[str, Any]) -> None:
    """Write run.json atomically."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / (RUN_JSON + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_finite(dict(meta)), indent=1, default=str), encoding="utf-8")
    tmp.replace(run_dir / RUN_JSON)


def read_meta(run_dir: str | Path) -> dict[str, Any]:
    """run.json of a run ({} when missing or broken)."""
    try:
        return dict(json.loads((Path(run_dir) / RUN_JSON).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def counts(results: list[Result]) -> dict[str, int]:
    """Results per status, every status present."""
    out = dict.fromkeys(STATUSES, 0)
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    return out

"""Run one bench item — a case on one implementation in one browser, or on the CPython reference — and turn
what happened into a Result line.  Shared by the pytest plugin and the CLI."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.cases.graphs import BenchCase, wire_case
from bench.results import ERROR, FAIL, INVALID, PASS, UNAVAILABLE, UNSUPPORTED, Result, RunWriter
from bench.run import fuzz_judge
from bench.run import reference as ref
from bench.run.compare import check_outputs, decode_outputs
from bench.targets import BrowserUnavailable, Session, Target
from bench.targets.probe import IMPLEMENTATIONS, USABLE, VARIANTS, Probe

REFERENCE = "reference"
# a framework case's own WebAssembly path (onnxruntime-web's WASM EP, LiteRT.js without WebNN): no WebNN at all
WASM = "wasm"
DEFAULT_IMPLS = ("polyfill", "native:*")


@dataclass(frozen=True)
class Item:
    """A case on one implementation/variant in one target (target None: the CPython reference)."""

    target: Target | None
    impl: str
    variant: str
    case: BenchCase

    @property
    def label(self) -> str:
        """Implementation and variant, e.g. 'polyfill', 'native:gpu', 'reference', 'wasm'."""
        if self.impl == REFERENCE or (self.impl in ("polyfill", WASM) and self.variant == "default"):
            return self.impl
        return f"{self.impl}:{self.variant}"

    @property
    def id(self) -> str:
        """The test id: target, implementation, case."""
        return f"{self.target.id if self.target else 'cpython'}-{self.label}-{self.case.id}"


def expand_impls(specs: Iterable[str]) -> list[tuple[str, str]]:
    """["polyfill", "native:*"] -> [("polyfill", "default"), ("native", "default"), ("native", "cpu"), ...].
    A bare name means its default variant; variant names may use shell wildcards."""
    out: list[tuple[str, str]] = []
    for spec in specs:
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            impl, _, pattern = part.partition(":")
            if impl == WASM:  # the framework cases' own path: one variant
                out.extend([(WASM, "default")] if (WASM, "default") not in out else [])
                continue
            if impl not in IMPLEMENTATIONS:
                raise ValueError(f"unknown implementation '{impl}' in '{part}' (one of {', '.join(IMPLEMENTATIONS)})")
            matched = [v for v in VARIANTS if fnmatch.fnmatchcase(v, pattern or "default")]
            if not matched:
                raise ValueError(f"'{part}': no context variant matches (variants: {', '.join(VARIANTS)})")
            out.extend((impl, v) for v in matched if (impl, v) not in out)
    return out


def plan(
    cases: Sequence[BenchCase],
    targets: Sequence[Target],
    impls: Sequence[tuple[str, str]],
    with_reference: bool = True,
) -> list[Item]:
    """Every item of a run: per target, per implementation, per case; then the reference per case.  Framework
    cases (onnx:, litert:) also run on the framework's WASM path; graph cases have none."""

    def impls_of(case: BenchCase) -> list[tuple[str, str]]:
        if case.client is None:
            return [(i, v) for i, v in impls if i != WASM]
        return [(WASM, "default")] + [(i, v) for i, v in impls if i != WASM]

    items = [Item(t, impl, variant, c) for t in targets for c in cases for impl, variant in impls_of(c)]
    items.sort(key=lambda i: (targets.index(i.target) if i.target else 0, _impl_order(i), cases.index(i.case)))
    if with_reference:
        items += [Item(None, REFERENCE, "default", c) for c in cases]
    return items


def _impl_order(item: Item) -> tuple[int, int]:
    """wasm, then the implementations in the order given (the runs of one implementation stay together)."""
    if item.impl == WASM:
        return (0, 0)
    return (1, list(IMPLEMENTATIONS).index(item.impl) * len(VARIANTS) + list(VARIANTS).index(item.variant))


def _unsupported(error: dict[str, str] | None) -> bool:
    """A NotSupportedError (or a builder without the method) means the implementation lacks the feature."""
    return error is not None and error.get("name") == "NotSupportedError"


class Runner:
    """Runs items, opening each target's browser session on first use, and records every result."""

    def __init__(
        self, open_session: Callable[[Target], Session], writer: RunWriter | None, *, repeat: int = 3
    ) -> None:
        self.open_session = open_session
        self.writer = writer
        self.repeat = repeat
        self.sessions: dict[str, Session | Exception] = {}
        self._wires: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------------------------- sessions

    def session(self, target: Target) -> Session:
        """The target's started and probed session; a failure to start is remembered and re-raised."""
        s = self.sessions.get(target.id)
        if s is None:
            try:
                s = self.open_session(target)
                probe = s.probe(list(VARIANTS))
                if self.writer:
                    self.writer.probe(probe.to_json())
            except Exception as e:  # noqa: BLE001 - reported on every item of the target
                s = e
            self.sessions[target.id] = s
        if isinstance(s, Exception):
            raise s
        return s

    def probe(self, target: Target) -> Probe:
        """What the target offers (opens its session first)."""
        p = self.session(target).probe(list(VARIANTS))
        return p

    def close(self) -> None:
        """Close every browser this runner opened."""
        for s in self.sessions.values():
            if not isinstance(s, Exception):
                try:
                    s.close()
                except Exception:  # noqa: BLE001 - a browser that died already
                    pass
        self.sessions.clear()

    # ------------------------------------------------------------------------------------------ items

    def _base(self, item: Item, test_id: str) -> Result:
        c = item.case
        return Result(
            case=c.id,
            implementation=item.impl,
            variant=item.variant,
            status=ERROR,
            browser=item.target.browser if item.target else "cpython",
            target=item.target.id if item.target else "cpython",
            ops=c.ops,
            op=c.op,
            model=c.model,
            source=c.source,
            test_id=test_id,
        )

    def run(self, item: Item, test_id: str = "") -> tuple[Result, dict[str, np.ndarray]]:
        """Run one item; never raises for a failing implementation: the Result says what happened."""
        result, outputs = self._run(item, test_id)
        if self.writer:
            self.writer.result(result, outputs)
        return result, outputs

    def _run(self, item: Item, test_id: str) -> tuple[Result, dict[str, np.ndarray]]:
        result = self._base(item, test_id)
        case = item.case
        if item.impl == REFERENCE:
            result.browser_version = ref.environment()["python"]
            return self._reference(case, result)
        assert item.target is not None
        try:
            session = self.session(item.target)
        except BrowserUnavailable as e:
            result.status, result.errors = UNAVAILABLE, [f"{item.target.id} is not installed here: {e}"]
            return result, {}
        except Exception as e:  # noqa: BLE001
            result.errors = [f"the browser could not be started or reached: {type(e).__name__}: {e}"]
            return result, {}
        result.browser_version = session.version
        state = session.probe(list(VARIANTS)).state(item.impl, item.variant)
        if item.impl == WASM:
            return self._run_framework(session, item, result)
        if state.state != USABLE:
            # a missing or failing native implementation is a state to report; a failing polyfill is an error
            result.status = UNAVAILABLE if item.impl == "native" else ERROR
            result.errors = [f"{item.label} is {state.describe()}"]
            return result, {}
        if case.invalid:
            result.status, result.errors = INVALID, [case.invalid]
            return result, {}
        if case.client is not None:
            return self._run_framework(session, item, result)
        if case.id not in self._wires:
            self._wires = {case.id: wire_case(case).to_json()}  # one case at a time is enough to memoize
        raw = session.run(self._wires[case.id], item.impl, item.variant, VARIANTS[item.variant], self.repeat)
        if case.fuzz is not None:
            return self._judge_fuzz(case, result, raw)
        if _failed(raw, result):
            return result, {}
        outputs, shapes = decode_outputs(raw["outputs"])
        result.truncated = [n for n, o in raw["outputs"].items() if o.get("truncated")]
        return self._judge(case, result, outputs, shapes), outputs

    def _run_framework(
        self, session: Session, item: Item, result: Result
    ) -> tuple[Result, dict[str, np.ndarray]]:
        """A framework case through its client in the page (bench/pages/clients/clients.js)."""
        assert item.case.client is not None
        raw = session.run_client(item.case.client, item.impl, VARIANTS[item.variant], self.repeat)
        if _failed(raw, result):
            return result, {}
        outputs, shapes = decode_outputs(raw["outputs"])
        return self._judge(item.case, result, outputs, shapes), outputs

    def _judge_fuzz(self, case: BenchCase, result: Result, raw: dict[str, Any]
                    ) -> tuple[Result, dict[str, np.ndarray]]:
        """A fuzz case: agreement with the reference's accept/reject, error type and descriptors, then values
        against the float64 reference (bench/run/fuzz_judge.py)."""
        result.timings = raw.get("timings", {})
        mine = fuzz_judge.page_outcome(raw)
        expected = fuzz_judge.reference_outcome(ref.reference(case, self.repeat))
        category, problem = fuzz_judge.compare(mine, expected, case.graph)
        outputs: dict[str, np.ndarray] = {}
        if category == fuzz_judge.AGREE and mine["verdict"] == fuzz_judge.ACCEPTED:
            outputs, shapes = decode_outputs(raw["outputs"])
            if self._judge(case, result, outputs, shapes).status == FAIL:
                category = "values"
        else:
            result.errors = [problem] if problem else []
        result.status = {fuzz_judge.AGREE: PASS, "unsupported": UNSUPPORTED}.get(category, FAIL)
        mine.pop("limits", None)
        result.metrics = {"fuzz": {**mine, "category": category, "defect": case.fuzz and case.fuzz.get("defect")}}
        return result, outputs

    def _reference(self, case: BenchCase, result: Result) -> tuple[Result, dict[str, np.ndarray]]:
        outcome = ref.reference(case, self.repeat)
        result.timings = outcome.timings
        if case.fuzz is not None:
            result.metrics = {"fuzz": {**fuzz_judge.reference_outcome(outcome), "defect": case.fuzz.get("defect")}}
            if outcome.status != "ok" and case.fuzz.get("defect"):
                result.status, result.errors = PASS, [f"{outcome.stage}: {outcome.error}"]  # the expected refusal
                return result, {}
        if outcome.status != "ok":
            result.status = {"invalid": INVALID, "unsupported": UNSUPPORTED}.get(outcome.status, ERROR)
            result.errors = [f"{outcome.stage}: {outcome.error}"]
            return result, {}
        if not case.has_expected and ref.float64_reference(case).status != "ok":
            result.status, result.expected = PASS, None  # it is the expectation of the others
            return result, outcome.outputs
        return self._judge(case, result, outcome.outputs), outcome.outputs

    def _judge(
        self,
        case: BenchCase,
        result: Result,
        outputs: dict[str, np.ndarray],
        shapes: dict[str, tuple[int, ...]] | None = None,
    ) -> Result:
        outcome = ref.reference(case, self.repeat)
        ref_outputs = outcome.outputs if outcome.status == "ok" else None
        wide = None if case.has_expected else ref.float64_reference(case)
        f64 = (wide.outputs, wide.dtypes) if wide is not None and wide.status == "ok" else None
        check, source = check_outputs(case, outputs, outcome.contexts, ref_outputs, shapes, f64)
        result.status = PASS if check.ok else FAIL
        result.errors = check.problems
        result.max_ulp, result.max_abs = check.max_ulp, check.max_abs
        result.tolerance = check.tolerance.to_json() if check.tolerance else {}
        result.expected = source
        return result


def _failed(raw: dict[str, Any], result: Result) -> bool:
    """Copy a page run's timings into result; when the run failed, also its status and error line (True)."""
    result.timings = raw.get("timings", {})
    if raw.get("status") == "ok":
        return False
    err = raw.get("error") or {}
    result.status = UNSUPPORTED if _unsupported(err) else ERROR
    result.errors = [f"{raw.get('stage', '?')}: {err.get('name', 'Error')}: {err.get('message', '')}"]
    return True

"""The bench as pytest tests: `pytest --pyargs bench.suite --webnn-cases SPEC [--browser ...]`.

test_probe runs once per browser and reports what it offers; test_webnn runs once per (case,
implementation, browser), plus once per case on the CPython reference."""

from __future__ import annotations

from bench.pytest_plugin import verdict
from bench.results import Result
from bench.targets import NATIVE_CHROMIUM
from bench.targets.probe import USABLE, Probe


def test_probe(webnn_probe: Probe) -> None:
    """Implementations are found, never assumed: the polyfill must be usable; native is whatever it is."""
    print(webnn_probe.summary())
    assert webnn_probe.states, "the probe found nothing"
    polyfill = webnn_probe.state("polyfill", "default")
    assert polyfill.state == USABLE, f"the polyfill is {polyfill.describe()}"
    if webnn_probe.target == NATIVE_CHROMIUM:  # installed for its working native WebNN: every variant runs
        native = [s for s in webnn_probe.states if s.impl == "native"]
        broken = [f"{s.variant}: {s.describe()}" for s in native if s.state != USABLE]
        assert not broken, f"native WebNN in {NATIVE_CHROMIUM}: {broken}"


def test_webnn(webnn_result: Result) -> None:
    """One case on one implementation in one browser, against its expected values (WPT tolerances)."""
    verdict(webnn_result)

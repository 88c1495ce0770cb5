"""pytest plugin of the comparison bench (entry point `webnn_bench`), built on pytest-playwright.

Each (case, implementation, browser) is one test id, e.g. `test_webnn[chromium-native:gpu-wpt:conv2d/...]`,
so -k, --browser chromium --browser firefox, --headed, --tracing and pytest-xdist work.  Run the shipped
suite on any selection:

    pytest --pyargs bench.suite --webnn-cases wpt:conv2d,my_graphs/ --browser chromium --browser firefox

or write a test of your own:

    def test_my_graph(webnn_compare):                 # once per browser (--browser, --browser-endpoint)
        webnn_compare("tests/data/graphs/tiny_cnn.json")   # every implementation + the CPython reference

Options: --webnn-cases SPEC, --webnn-impl SPEC, --browser-endpoint ws://..., --webnn-report DIR,
--webnn-repeat N, --webnn-server URL.  Fixtures: webnn_compare, webnn_target, webnn_probe, webnn_runner,
webnn_item / webnn_result (the suite's).  Every run writes results.jsonl and report.html under
<report dir>/<run id>/.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import results as res
from bench.cases.graphs import BenchCase, load_graph_data, load_graph_file
from bench.cases.select import select
from bench.results import FAIL, PASS, UNAVAILABLE, Result, RunWriter
from bench.run.compare import Pair, pairwise
from bench.run.runner import DEFAULT_IMPLS, Item, Runner, expand_impls, plan
from bench.server import dev_server
from bench.targets import (
    WEBDRIVER_ENDPOINT_HELP,
    BrowserUnavailable,
    Target,
    local_targets,
    remote_target,
    webdriver_target,
)
from bench.targets.playwright import BrowserSession
from bench.targets.probe import USABLE, VARIANTS, Probe
from bench.targets.sessions import open_session
from bench.targets.webdriver import WebDriverSession
from web.served_files import ServedFiles

_REPORT_KEY = pytest.StashKey[dict[str, Any]]()
_RUN_DIR_KEY = pytest.StashKey[Path]()


# ------------------------------------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webnn", "pyodide-webnn comparison bench")
    group.addoption(
        "--webnn-cases",
        action="append",
        default=[],
        metavar="SPEC",
        help="cases to run: wpt, wpt:OP+OP, wpt@N (N per operator), a graph file or directory; "
        "comma separated or repeated (default: the test's webnn_cases marker)",
    )
    group.addoption(
        "--webnn-impl",
        action="append",
        default=[],
        metavar="SPEC",
        help="implementations: polyfill, native, IMPL:VARIANT with wildcards "
        f"(variants: {', '.join(VARIANTS)}; default: {' '.join(DEFAULT_IMPLS)})",
    )
    group.addoption(
        "--browser-endpoint",
        action="append",
        default=[],
        metavar="WS_URL",
        help="a remote browser served by `playwright run-server` (repeatable): "
        "ws://HOST:PORT/[?browser=firefox&name=LABEL&launch-options=JSON]",
    )
    group.addoption(
        "--webdriver-endpoint",
        action="append",
        default=[],
        metavar="URL",
        help=WEBDRIVER_ENDPOINT_HELP,
    )
    group.addoption(
        "--webnn-report",
        default=None,
        metavar="DIR",
        help="directory of run directories (default: $PYODIDE_WEBNN_REPORTS or ./reports)",
    )
    group.addoption(
        "--webnn-repeat",
        type=int,
        default=3,
        metavar="N",
        help="timed runs per case after the first (default: 3)",
    )
    group.addoption(
        "--webnn-init-script",
        action="append",
        default=[],
        metavar="FILE",
        help="JavaScript run in the bench page before anything else (repeatable), e.g. a WebNN implementation "
        "under test installed as navigator.ml, which the bench then probes and runs as 'native'",
    )
    group.addoption(
        "--no-webnn-native-chromium",
        action="store_true",
        default=False,
        help="do not add the npm Chromium with native WebNN (target 'chromium-npm', installed by make setup) "
        "next to --browser chromium",
    )
    group.addoption(
        "--webnn-server",
        default=None,
        metavar="URL",
        help="use this running dev server instead of starting one",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "webnn_cases(*specs): the cases a webnn_item test runs (--webnn-cases overrides)"
    )
    config.addinivalue_line(
        "markers", "webnn_impl(*specs): the implementations a webnn_item test runs (--webnn-impl overrides)"
    )
    workerinput = getattr(config, "workerinput", None)
    if workerinput and "webnn_run_dir" in workerinput:
        config.stash[_RUN_DIR_KEY] = Path(workerinput["webnn_run_dir"])
    else:
        from web.settings import Settings

        root = Path(config.getoption("--webnn-report") or Settings.from_env().reports_dir).resolve()
        config.stash[_RUN_DIR_KEY] = root / res.new_run_id()
    config.stash[_REPORT_KEY] = {"started": res.now_iso()}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker writes into the controller's run directory."""
    node.workerinput["webnn_run_dir"] = str(node.config.stash[_RUN_DIR_KEY])


def _targets(config: pytest.Config) -> list[Target]:
    browsers = list(config.getoption("--browser", default=None) or [])
    endpoints = config.getoption("--browser-endpoint")
    webdrivers = config.getoption("--webdriver-endpoint", default=None) or []
    if not browsers and not endpoints and not webdrivers:
        browsers = ["chromium"]
    native = not config.getoption("--no-webnn-native-chromium")
    return (local_targets(browsers, native_chromium=native) + [remote_target(e) for e in endpoints]
            + [webdriver_target(e) for e in webdrivers])


def _impls(config: pytest.Config, definition: Any = None) -> list[tuple[str, str]]:
    """--webnn-impl, else the test's webnn_impl marker, else every implementation and variant."""
    marked = [s for m in definition.iter_markers("webnn_impl") for s in m.args] if definition is not None else []
    return expand_impls(config.getoption("--webnn-impl") or marked or DEFAULT_IMPLS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    if "webnn_item" in metafunc.fixturenames:
        specs = config.getoption("--webnn-cases") or [
            s for m in metafunc.definition.iter_markers("webnn_cases") for s in m.args
        ]
        cases = select(specs) if specs else []
        items = plan(cases, _targets(config), _impls(config, metafunc.definition))
        metafunc.parametrize("webnn_item", items, ids=[i.id for i in items])
    elif "webnn_target" in metafunc.fixturenames:
        targets = _targets(config)
        metafunc.parametrize("webnn_target", targets, ids=[t.id for t in targets], scope="session")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group bench tests by browser for `pytest -n N --dist loadgroup`: each worker then boots only the
    browsers of its groups.  (pytest-xdist 3.8 cannot apply groups under pytest 9.2, whose node ids it no
    longer rewrites; the marks take effect with an xdist that can.)"""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        bench_item, target = params.get("webnn_item"), params.get("webnn_target")
        if isinstance(bench_item, Item):
            group = bench_item.target.id if bench_item.target else "cpython"
        elif isinstance(target, Target):
            group = target.id
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(f"webnn-{group}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[Any]:
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_REPORT_KEY] = {"failed": report.failed}


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def webnn_served_files(pytestconfig: pytest.Config) -> ServedFiles | None:
    """What the bench's own dev server serves at /__files/ (framework models for WebDriver targets); None with
    --webnn-server, whose app the bench cannot extend."""
    return None if pytestconfig.getoption("--webnn-server") else ServedFiles()


@pytest.fixture(scope="session")
def webnn_server_url(pytestconfig: pytest.Config, webnn_served_files: ServedFiles | None) -> Iterator[str]:
    """The dev server the bench pages come from: --webnn-server, or one started for the session."""
    url = pytestconfig.getoption("--webnn-server")
    if url or webnn_served_files is None:
        yield url
        return
    with dev_server(wrap=webnn_served_files.wrap) as started:
        yield started


@pytest.fixture(scope="session")
def webnn_runner(
    pytestconfig: pytest.Config,
    playwright: Any,
    browser_type_launch_args: dict[str, Any],
    webnn_server_url: str,
    webnn_served_files: ServedFiles | None,
) -> Iterator[Runner]:
    """Opens each target's browser on first use (probed, bench page booted) and records every result."""
    worker = getattr(pytestconfig, "workerinput", {}).get("workerid")
    writer = RunWriter(pytestconfig.stash[_RUN_DIR_KEY], worker)

    scripts = [Path(f).read_text(encoding="utf-8") for f in pytestconfig.getoption("--webnn-init-script")]

    def start(target: Target) -> BrowserSession:
        return open_session(playwright, target, webnn_server_url, served=webnn_served_files,
                            launch_base=browser_type_launch_args, init_scripts=scripts)

    runner = Runner(start, writer, repeat=pytestconfig.getoption("--webnn-repeat"))
    yield runner
    runner.close()


@pytest.fixture
def _webnn_trace(
    request: pytest.FixtureRequest, webnn_runner: Runner, output_path: str
) -> Iterator[Callable[[Target], None]]:
    """--tracing: one trace chunk per test on the shared page, kept as pytest-playwright keeps its traces."""
    mode = request.config.getoption("--tracing", default="off")
    started: list[BrowserSession] = []

    def begin(target: Target) -> None:
        if mode == "off":
            return
        session = webnn_runner.session(target)
        if not isinstance(session, BrowserSession) or isinstance(session, WebDriverSession):  # Playwright's
            return
        session.start_tracing()
        session.context.tracing.start_chunk(title=request.node.nodeid)
        started.append(session)

    yield begin
    failed = request.node.stash.get(_REPORT_KEY, {}).get("failed", True)
    for session in started:
        if mode == "on" or failed:
            os.makedirs(output_path, exist_ok=True)
            session.context.tracing.stop_chunk(path=os.path.join(output_path, f"trace-{session.target.id}.zip"))
        else:
            session.context.tracing.stop_chunk()


@pytest.fixture
def webnn_result(
    webnn_item: Item,
    webnn_runner: Runner,
    _webnn_trace: Callable[[Target], None],
    request: pytest.FixtureRequest,
) -> Result:
    """Runs the test's (case, implementation, browser) item and returns its recorded Result."""
    if webnn_item.target is not None and not webnn_item.case.invalid:
        try:
            # trace only what touches the page: not an implementation the probe found unusable
            if webnn_runner.probe(webnn_item.target).state(webnn_item.impl, webnn_item.variant).state == USABLE:
                _webnn_trace(webnn_item.target)
        except Exception:  # noqa: BLE001 - the run below reports a browser that cannot start
            pass
    result, _ = webnn_runner.run(webnn_item, request.node.nodeid)
    return result


def verdict(result: Result) -> None:
    """pytest's view of a Result: pass; skip for a reported state (unavailable, unsupported, invalid)."""
    if result.status == PASS:
        return
    message = f"{result.label} on {result.target}: {result.status}: " + "; ".join(result.errors)
    if result.status in (FAIL, res.ERROR):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def webnn_probe(webnn_target: Target, webnn_runner: Runner) -> Probe:
    """What the target browser offers: the polyfill and native WebNN per context variant."""
    try:
        return webnn_runner.probe(webnn_target)
    except BrowserUnavailable as e:
        pytest.skip(f"{webnn_target.id} is not installed here: {e}")


class Comparison:
    """One case on every implementation of one browser and on the reference: results and pairwise errors."""

    def __init__(self, case: BenchCase, results: list[Result], outputs: dict[str, dict[str, Any]]) -> None:
        self.case = case
        self.results = {r.label: r for r in results}
        self.outputs = outputs
        self.pairs: list[Pair] = pairwise(case.id, outputs)

    def ran(self) -> list[str]:
        """Labels of the implementations that ran (not unavailable)."""
        return [label for label, r in self.results.items() if r.status not in (UNAVAILABLE,)]

    def failures(self) -> list[Result]:
        """Results out of tolerance or in error."""
        return [r for r in self.results.values() if r.status in (FAIL, res.ERROR)]

    def table(self) -> str:
        """The comparison as text: one line per implementation, one per pair."""
        lines = [f"{self.case.id}:"]
        for label, r in self.results.items():
            err = f"  max {r.max_ulp:g} ULP / {r.max_abs:g} abs" if r.max_ulp is not None else ""
            lines.append(f"  {label:<24} {r.status:<11}{err}  {'; '.join(r.errors)}")
        for p in self.pairs:
            lines.append(f"  {p.a} vs {p.b}: max {p.max_ulp:g} ULP, {p.max_abs:g} abs")
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Fail with the table when an implementation failed or errored."""
        bad = self.failures()
        assert not bad, "implementations out of tolerance or failing:\n" + self.table()


@pytest.fixture
def webnn_compare(
    webnn_target: Target,
    webnn_runner: Runner,
    _webnn_trace: Callable[[Target], None],
    request: pytest.FixtureRequest,
) -> Callable[..., Any]:
    """`webnn_compare(graph, check=True)`: run a graph (file path, dict, or BenchCase) on every
    implementation the target offers and on the CPython reference; check each against the expected values
    (or the reference), compute pairwise errors, record everything.  Returns a Comparison (a list for a file
    of several cases); with check=True it fails the test when any implementation fails."""
    impls = _impls(request.config)

    def compare(source: str | Path | dict[str, Any] | BenchCase, *, check: bool = True) -> Any:
        if isinstance(source, BenchCase):
            cases = [source]
        elif isinstance(source, dict):
            cases = load_graph_data(source)
        else:
            cases = load_graph_file(source)
        _webnn_trace(webnn_target)
        comparisons = []
        for case in cases:
            results, outputs = [], {}
            for item in plan([case], [webnn_target], impls):
                r, out = webnn_runner.run(item, request.node.nodeid)
                results.append(r)
                if out:
                    outputs[r.label] = out
            comparisons.append(Comparison(case, results, outputs))
        print("\n".join(c.table() for c in comparisons))
        if check:
            for c in comparisons:
                c.assert_ok()
        return comparisons[0] if len(comparisons) == 1 else comparisons

    return compare


# ---------------------------------------------------------------------------------------------- reporting


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        return  # the controller writes the report once every worker is done
    run_dir = config.stash[_RUN_DIR_KEY]
    if not run_dir.is_dir():
        return  # no bench test ran
    res.merge(run_dir)
    from bench.report.comparison import write_report

    meta = {
        "id": run_dir.name,
        "started": config.stash[_REPORT_KEY]["started"],
        "finished": res.now_iso(),
        "command": " ".join(shlex.quote(a) for a in ["pytest", *sys.argv[1:]]),
        "runner": "pytest",
        "exitstatus": int(exitstatus),
    }
    path = write_report(run_dir, meta)
    config.stash[_REPORT_KEY]["report"] = str(path)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    path = config.stash.get(_REPORT_KEY, {}).get("report")
    if path:
        terminalreporter.write_sep("-", "webnn bench")
        terminalreporter.write_line(f"results and report: {Path(path).parent}/  (report.html, results.jsonl)")

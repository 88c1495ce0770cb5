"""web/ under hostile input: report routes stay inside the reports folder (symlinks too),
everything read from a run is escaped in HTML, a bad run.json is skipped with a warning, gallery sample images
are written atomically under concurrent first requests, and every response carries nosniff."""

from __future__ import annotations

import json
import logging
import threading
import warnings
from pathlib import Path

import httpx
import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # StarletteDeprecationWarning: it prefers httpx2; httpx works
    from fastapi.testclient import TestClient

from bench import results
from bench.report import comparison as report
from bench.results import Result
from bench.server import free_port, serve_app
from web.app import create_app
from web.settings import PYODIDE_VERSION, Settings

ROOT = Path(__file__).resolve().parents[2]
# Markup a hostile run could carry: tags, an attribute break-out, an entity.
XSS = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;"


def _run(d: Path, meta: object, report_html: str | None = "<!doctype html><p>report</p>") -> Path:
    d.mkdir(parents=True)
    (d / "run.json").write_text(meta if isinstance(meta, str) else json.dumps(meta), encoding="utf-8")
    (d / "results.jsonl").write_text('{"kind": "probe", "target": "chromium"}\n')
    if report_html is not None:
        (d / "report.html").write_text(report_html)
    return d


def _client(tmp_path: Path, reports: Path, repo_root: Path = ROOT) -> TestClient:
    settings = Settings(cache_dir=tmp_path / "cache", repo_root=repo_root, reports_dir=reports)
    return TestClient(create_app(settings), raise_server_exceptions=False)


def _assert_not_served(response: httpx.Response, secret: str) -> None:
    assert response.status_code == 404, (response.request.url, response.status_code)
    assert secret not in response.text


# ----------------------------------------------------------------------------------- paths and symlinks


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A reports folder with one ordinary run, a run symlinked in from outside, a run whose report.html and
    results.jsonl are symlinks out, and an alias symlink to a run inside (allowed)."""
    root = tmp_path / "reports"
    outside = _run(tmp_path / "outside" / "run-x", {"started": "2026", "cases": 1}, "SECRET report")
    (outside / "results.jsonl").write_text("SECRET results\n")
    (tmp_path / "outside" / "secret.txt").write_text("SECRET file\n")
    _run(root / "20260101-000000-good", {"started": "2026-01-01", "cases": 3, "targets": ["chromium"]})
    (root / "linked").symlink_to(outside, target_is_directory=True)
    leaky = _run(root / "20260102-000000-leaky", {"started": "2026-01-02", "cases": 2}, report_html=None)
    (leaky / "report.html").symlink_to(outside / "report.html")
    (leaky / "results.jsonl").unlink()
    (leaky / "results.jsonl").symlink_to(outside / "results.jsonl")
    (leaky / "secret.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / "alias").symlink_to(root / "20260101-000000-good", target_is_directory=True)
    return root


def test_report_routes_do_not_follow_symlinks_out(tmp_path: Path, reports: Path) -> None:
    client = _client(tmp_path, reports)
    for path in (
        "/reports/linked/",
        "/reports/linked/report.html",
        "/reports/linked/results.jsonl",
        "/reports/linked/run.json",
        "/reports/20260102-000000-leaky/",
        "/reports/20260102-000000-leaky/report.html",
        "/reports/20260102-000000-leaky/results.jsonl",
        "/reports/20260102-000000-leaky/secret.txt",
    ):
        _assert_not_served(client.get(path), "SECRET")
    # the leaky run itself is listed (its run.json is real) but without a report link
    listing = client.get("/reports/").text
    assert "SECRET" not in listing and "20260102-000000-leaky (no report yet)" in listing
    assert "linked: skipped: it (or its run.json) is a symlink out of the reports folder" in listing
    assert {r["id"] for r in client.get("/api/reports").json()} == {
        "20260101-000000-good",
        "20260102-000000-leaky",
        "alias",
    }


def test_symlinks_that_stay_inside_are_served(tmp_path: Path, reports: Path) -> None:
    client = _client(tmp_path, reports)
    for run in ("20260101-000000-good", "alias"):
        page = client.get(f"/reports/{run}/")
        assert page.status_code == 200 and "<p>report</p>" in page.text
        assert client.get(f"/reports/{run}/results.jsonl").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/reports/..%2Foutside%2Frun-x/",
        "/reports/..%2Foutside%2Frun-x%2Freport.html",
        "/reports/%2e%2e/outside/secret.txt",
        "/reports/%2e%2e%2foutside%2fsecret.txt",
        "/reports/20260101-000000-good/..%2F..%2Foutside%2Fsecret.txt",
        "/reports/%2Ftmp/",
    ],
)
def test_report_routes_refuse_traversal(tmp_path: Path, reports: Path, path: str) -> None:
    _assert_not_served(_client(tmp_path, reports).get(path), "SECRET")


def test_reports_root_itself_a_symlink(tmp_path: Path, reports: Path) -> None:
    """A reports folder reached through a symlink (PYODIDE_WEBNN_REPORTS=~/link) still serves its runs and
    still refuses links out of its real location."""
    link = tmp_path / "reports-link"
    link.symlink_to(reports, target_is_directory=True)
    client = _client(tmp_path, link)
    assert client.get("/reports/20260101-000000-good/").status_code == 200
    _assert_not_served(client.get("/reports/linked/"), "SECRET")
    _assert_not_served(client.get("/reports/20260102-000000-leaky/results.jsonl"), "SECRET")


# ---------------------------------------------------------------------------------------------- escaping


def test_listing_escapes_every_run_field(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    meta = {
        "started": XSS,
        "finished": XSS,
        "command": XSS,
        "cases": 4,
        "targets": [XSS, "chromium"],
        "counts": {XSS: 2, "pass": 1},
    }
    _run(root / "20260101-000000-xss", meta)
    _run(root / "20260101-000000-cases", {"started": "2026", "cases": "<script>alert(3)</script>"})
    page = _client(tmp_path, root).get("/reports/")
    assert page.status_code == 200
    assert "<script" not in page.text and "<img" not in page.text, page.text
    assert page.text.count("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;&gt;&lt;img") == 3  # started,
    assert "&amp;amp;" in page.text  # targets, counts: the entity itself shows as text
    # a `cases` that is not a number skips the run, and the warning line shows the value escaped
    assert "20260101-000000-cases: skipped: run.json field &#x27;cases&#x27; should be an integer" in page.text
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page.text


def _hostile_result(**over: object) -> Result:
    base: dict[str, object] = {
        "case": f"conv2d/{XSS}",
        "implementation": "polyfill",
        "variant": XSS,
        "status": XSS,
        "browser": "chromium",
        "browser_version": XSS,
        "target": XSS,
        "ops": [XSS],
        "op": XSS,
        "model": XSS,
        "errors": [XSS, 7],
        "max_ulp": 3.0,
        "max_abs": None,
        "tolerance": {XSS: 1},
        "timings": {"median_ms": 1.5},
    }
    base.update(over)
    return Result.from_json(base)


def test_report_page_escapes_every_field(tmp_path: Path) -> None:
    meta = {
        "id": XSS,
        "started": XSS,
        "finished": XSS,
        "cases": XSS,
        "command": XSS,
        "reference": {"python": XSS, "numpy": XSS, "platform": XSS},
        "host": {"platform": XSS, "cpus": XSS},
    }
    probe = {
        "target": XSS,
        "browser": XSS,
        "browser_version": XSS,
        "environment": {
            "userAgent": XSS,
            "isSecureContext": XSS,
            "crossOriginIsolated": XSS,
            "hardwareConcurrency": XSS,
            "polyfill": XSS,
            "polyfillBoot": {XSS: XSS},
        },
        "states": [
            {
                "variant": XSS,
                "impl": "polyfill",
                "state": XSS,
                "accelerated": XSS,
                "error": {"name": XSS, "message": XSS},
            }
        ],
    }
    rs = [
        _hostile_result(),
        _hostile_result(status=results.PASS, implementation="native", errors=[]),
        _hostile_result(status=results.UNAVAILABLE, implementation="native", variant="gpu", errors=[XSS * 30]),
        _hostile_result(implementation="reference", status=results.PASS, target="cpython", errors=[]),
    ]
    html = report.render(tmp_path, meta, [probe], rs)
    for raw in ("<script", "<img", "\"'>"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&amp;amp;" in html
    # long error lists are cut before escaping: no entity is left cut in half at the end of a cell
    for cell in html.split("<td")[1:]:
        body = cell.split(">", 1)[1].split("</td>", 1)[0]
        assert not body.rstrip().endswith(("&", "&l", "&lt", "&a", "&am", "&amp", "&#", "&#x", "&q")), body[-20:]


def test_written_report_served_escaped(tmp_path: Path) -> None:
    """A run with markup in its case names and messages, through write_report and the dev server."""
    root = tmp_path / "reports"
    run_dir = root / "20260101-000000-hostile"
    writer = results.RunWriter(run_dir)
    writer.probe({"target": "chromium", "browser": "chromium", "environment": {"userAgent": XSS}, "states": []})
    writer.result(_hostile_result(target="chromium"))
    report.write_report(run_dir, {"started": XSS, "command": XSS})
    client = _client(tmp_path, root)
    listing = client.get("/reports/")
    page = client.get(f"/reports/{run_dir.name}/")
    assert listing.status_code == page.status_code == 200
    assert run_dir.name in listing.text
    for body in (listing.text, page.text):
        assert "<script" not in body and "<img" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


# -------------------------------------------------------------------------------------- malformed run.json

BAD_RUN_JSON = {
    "truncated": ('{"started": "2026-01-0', "run.json is not valid JSON"),
    "empty": ("", "run.json is not valid JSON"),
    "latin1": ('{"started": "caf\xe9"}'.encode("latin-1"), "run.json is not valid JSON"),
    "list": ("[1, 2]", "run.json holds [1, 2], not an object"),
    "null": ("null", "run.json holds null, not an object"),
    "counts-list": ('{"counts": [1, 2]}', "run.json field 'counts' should be an object of integers"),
    "counts-str": ('{"counts": {"pass": "<b>9</b>"}}', "run.json field 'counts' should be an object of integers"),
    "targets-str": ('{"targets": "chromium"}', "run.json field 'targets' should be a list of strings"),
    "targets-mixed": ('{"targets": ["chromium", 3]}', "run.json field 'targets' should be a list of strings"),
    "started-int": ('{"started": 5}', "run.json field 'started' should be a string"),
    "cases-bool": ('{"cases": true}', "run.json field 'cases' should be an integer"),
}


def test_malformed_run_json_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "reports"
    _run(root / "20260101-000000-good", {"started": "2026-01-01", "cases": 3, "counts": {"pass": 3}})
    for name, (content, _) in BAD_RUN_JSON.items():
        d = _run(root / f"bad-{name}", "{}")
        path = d / "run.json"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    client = _client(tmp_path, root)
    with caplog.at_level(logging.WARNING, logger="bench.report.routes"):
        page = client.get("/reports/")
    assert page.status_code == 200
    assert "20260101-000000-good" in page.text and "3 pass" in page.text
    assert "<b>9</b>" not in page.text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for name, (_, why) in BAD_RUN_JSON.items():
        line = f"bad-{name}: skipped: {why}"
        assert line in logged, line
        assert line.replace("'", "&#x27;") in page.text, line
    api = client.get("/api/reports")
    assert api.status_code == 200 and [r["id"] for r in api.json()] == ["20260101-000000-good"]


def test_unreadable_run_json_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    _run(root / "20260101-000000-good", {"cases": 1})
    bad = _run(root / "20260101-000000-dir", "{}")
    (bad / "run.json").unlink()
    (bad / "run.json").mkdir()  # not a file: not a run at all
    dangling = _run(root / "20260101-000000-dangling", "{}")
    (dangling / "run.json").unlink()
    (dangling / "run.json").symlink_to(tmp_path / "gone.json")
    page = _client(tmp_path, root).get("/reports/")
    assert page.status_code == 200 and "20260101-000000-good" in page.text
    assert "20260101-000000-dir" not in page.text and "20260101-000000-dangling" not in page.text


# ------------------------------------------------------------------------------ gallery samples, real server


def test_concurrent_first_sample_requests(tmp_path: Path) -> None:
    """Four clients ask for the two sample photos at once on a server that has none yet: every answer is a
    200 with the whole PNG, and no temporary file is left behind."""
    pytest.importorskip("skimage")
    from skimage import data
    from skimage.io import imread

    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    settings = Settings(
        port=free_port(), cache_dir=tmp_path / "cache", repo_root=repo, reports_dir=tmp_path / "reports"
    )
    names = ["astronaut", "cameraman"] * 2
    barrier = threading.Barrier(len(names))
    answers: dict[int, httpx.Response] = {}

    with serve_app(settings) as url:

        def fetch(i: int) -> None:
            with httpx.Client(timeout=120) as client:
                barrier.wait()
                answers[i] = client.get(f"{url}/gallery/samples/{names[i]}.png")

        threads = [threading.Thread(target=fetch, args=(i,)) for i in range(len(names))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [answers[i].status_code for i in range(len(names))] == [200] * len(names)
        assert httpx.get(f"{url}/gallery/samples/nope.png").status_code == 404

    expected = {"astronaut": np.asarray(data.astronaut()), "cameraman": np.asarray(data.camera())}
    for i, name in enumerate(names):
        r = answers[i]
        assert r.headers["content-type"] == "image/png" and r.headers["x-content-type-options"] == "nosniff"
        path = tmp_path / f"{i}.png"
        path.write_bytes(r.content)
        image = imread(path)
        got = image if image.ndim == 2 else image[..., 0] if name == "cameraman" else image
        assert np.array_equal(got, expected[name]), name
    samples = settings.samples_dir
    assert sorted(p.name for p in samples.iterdir()) == ["astronaut.png", "cameraman.png"]
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in samples.iterdir())  # readable like other files


# ------------------------------------------------------------------------------------------------- nosniff


@pytest.fixture
def nosniff_client(tmp_path: Path) -> TestClient:
    assets = tmp_path / "cache" / f"pyodide-{PYODIDE_VERSION}"
    assets.mkdir(parents=True)
    (assets / "pyodide.asm.wasm").write_bytes(b"\0asm")
    _run(tmp_path / "reports" / "20260101-000000-good", {"cases": 1})
    app = create_app(Settings(cache_dir=tmp_path / "cache", reports_dir=tmp_path / "reports"))

    def boom() -> None:
        raise RuntimeError("boom")

    app.add_api_route("/boom", boom)
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("GET", "/", 200),
        ("GET", "/api/health", 200),
        ("GET", "/core/manifest.json", 200),
        ("GET", "/gallery/", 200),
        ("GET", "/test/smoke.html", 200),
        ("GET", "/bench/bench.html", 200),
        ("GET", "/pyodide/pyodide.asm.wasm", 200),
        ("GET", "/reports/", 200),
        ("GET", "/api/reports", 200),
        ("GET", "/reports/20260101-000000-good/", 200),
        ("GET", "/reports/20260101-000000-good/results.jsonl", 200),
        ("GET", "/nope", 404),
        ("GET", "/pyodide/nope.wasm", 404),
        ("GET", "/reports/nope/", 404),
        ("GET", "/models/no_such_model.tflite", 404),
        ("GET", "/core/0000000000000000/x.whl", 404),
        ("POST", "/pyodide/pyodide.asm.wasm", 405),
        ("GET", "/boom", 500),
    ],
)
def test_nosniff_on_every_response(nosniff_client: TestClient, method: str, path: str, status: int) -> None:
    response = nosniff_client.request(method, path)
    assert response.status_code == status
    assert response.headers.get_list("x-content-type-options") == ["nosniff"]
    assert response.headers["cross-origin-opener-policy"] == "same-origin"  # the isolation headers remain


@pytest.mark.parametrize(
    "path,status,csp",
    [
        ("/reports/", 200, True),
        ("/reports", 200, True),
        ("/reports/20260101-000000-good/", 200, True),
        ("/reports/20260101-000000-good/results.jsonl", 200, True),
        ("/reports/20260101-000000-good/run.json", 200, True),
        ("/reports/nope/", 404, True),
        ("/reports/nope.html", 404, True),
        ("/reportsx", 404, False),
        ("/api/reports", 200, False),
        ("/gallery/", 200, False),
        ("/test/smoke.html", 200, False),
    ],
)
def test_reports_run_no_script(nosniff_client: TestClient, path: str, status: int, csp: bool) -> None:
    """Everything under /reports/ is a document without scripts; the pages that need scripts keep them."""
    response = nosniff_client.get(path)
    assert response.status_code == status
    policy = response.headers.get("content-security-policy", "")
    assert ("default-src 'none'" in policy and "script-src" not in policy) == csp, policy


# ------------------------------------------------------------------------ traversal in the other path routes


@pytest.mark.parametrize(
    "path",
    [
        "/gallery/..%2F..%2Fpyproject.toml",
        "/gallery/%2e%2e/%2e%2e/pyproject.toml",
        "/gallery/samples/..%2F..%2F..%2Fpyproject.png",
        "/gallery/samples/%2e%2e.png",
        "/test/..%2F..%2F..%2Fpyproject.toml",
        "/bench/..%2F..%2F..%2Fpyproject.toml",
        "/perf/..%2F..%2F..%2Fpyproject.toml",
        "/pyodide/..%2F..%2Fsecret.txt",
        "/pyodide/escape.txt",
        "/models/..%2F..%2Fpyproject.tflite",
        "/models/%2e%2e.tflite",
        "/core/..%2F..%2F/pyproject.toml",
        "/vendor/ort/..%2F..%2F..%2F..%2Fpyproject.toml",
    ],
)
def test_no_traversal_in_other_routes(tmp_path: Path, path: str) -> None:
    """Every route that takes a path stays in its folder; a symlink out of a static folder is a 404."""
    (tmp_path / "secret.txt").write_text("SECRET\n")
    assets = tmp_path / "cache" / f"pyodide-{PYODIDE_VERSION}"
    assets.mkdir(parents=True)
    (assets / "escape.txt").symlink_to(tmp_path / "secret.txt")
    response = _client(tmp_path, tmp_path / "reports").get(path)
    assert response.status_code == 404, (path, response.status_code)
    assert "SECRET" not in response.text and "[project]" not in response.text


def test_result_outputs_stay_inside_the_run(tmp_path: Path) -> None:
    """A results line names its output tensors by a path: one that leads out of the run is not read when the
    report is built."""
    run_dir = tmp_path / "reports" / "run"
    writer = results.RunWriter(run_dir)
    good = writer.result(_hostile_result(target="chromium"), {"y": np.arange(3, dtype=np.float32)})
    assert good.outputs is not None
    np.savez(tmp_path / "outside.npz", o0=np.ones(3), __names__=np.array(["y"]))
    (run_dir / "outputs" / "link.npz").symlink_to(tmp_path / "outside.npz")
    loaded = results.load_outputs(run_dir, good.outputs)
    assert loaded is not None and np.array_equal(loaded["y"], np.arange(3, dtype=np.float32))
    for rel in ("../../outside.npz", str(tmp_path / "outside.npz"), "outputs/link.npz", "outputs/../../../outside.npz"):
        assert results.load_outputs(run_dir, rel) is None, rel

"""Serving the package: the dev server's /polyfill/ and /dist/ as a CDN would (CORP cross-origin, CORS), and
Content-Encoding negotiation of make dist's precompressed siblings, in the dev server and web.static_host."""

from __future__ import annotations

import gzip
import urllib.request
import warnings
from pathlib import Path

import brotli
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # StarletteDeprecationWarning: it prefers httpx2; httpx works
    from fastapi.testclient import TestClient

from web.app import create_app
from web.settings import Settings
from web.static_host import StaticHost, accepted_encodings

SCRIPT = b"/* the entry script */ " * 64


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout with a polyfill bundle and a dist/ holding a hashed asset with .br and .gz siblings."""
    root = tmp_path / "repo"
    (root / "polyfill" / "dist").mkdir(parents=True)
    (root / "polyfill" / "dist" / "webnn-polyfill.js").write_bytes(SCRIPT)
    assets = root / "dist" / "assets"
    assets.mkdir(parents=True)
    (root / "dist" / "webnn-polyfill.js").write_bytes(SCRIPT)
    (root / "dist" / "webnn-polyfill.js.gz").write_bytes(gzip.compress(SCRIPT))
    (assets / "webnn-worker.0123456789abcdef.js").write_bytes(SCRIPT)
    (assets / "webnn-worker.0123456789abcdef.js.br").write_bytes(brotli.compress(SCRIPT))
    (assets / "webnn-worker.0123456789abcdef.js.gz").write_bytes(gzip.compress(SCRIPT))
    return root


@pytest.fixture
def client(root: Path, tmp_path: Path) -> TestClient:
    return TestClient(create_app(Settings(repo_root=root, cache_dir=tmp_path / "cache")))


def test_polyfill_and_dist_may_be_included_from_any_origin(client: TestClient) -> None:
    for path in ("/polyfill/webnn-polyfill.js", "/dist/webnn-polyfill.js", "/core/manifest.json"):
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["cross-origin-resource-policy"] == "cross-origin", path
        assert r.headers["access-control-allow-origin"] == "*", path
    page = client.get("/test/missing.html")
    assert page.headers["cross-origin-resource-policy"] == "same-origin"
    assert "access-control-allow-origin" not in page.headers


def test_dev_server_negotiates_the_precompressed_siblings(client: TestClient) -> None:
    worker = "/dist/assets/webnn-worker.0123456789abcdef.js"
    r = client.get(worker, headers={"accept-encoding": "gzip, br"})
    assert r.headers["content-encoding"] == "br" and r.headers["vary"] == "Accept-Encoding"
    assert r.content == SCRIPT  # httpx decodes br
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    r = client.get(worker, headers={"accept-encoding": "gzip;q=1, br;q=0"})
    assert r.headers["content-encoding"] == "gzip" and r.content == SCRIPT  # the client decodes gzip
    r = client.get(worker, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in r.headers and r.content == SCRIPT
    entry = client.get("/dist/webnn-polyfill.js", headers={"accept-encoding": "br, gzip"})
    assert entry.headers["content-encoding"] == "gzip"  # no .br sibling for it
    assert entry.headers["cache-control"] == "no-cache"  # a stable name: revalidated


def test_static_host_sends_cors_only_and_negotiates_when_asked(root: Path) -> None:
    assert accepted_encodings("gzip, deflate, br;q=0") == {"gzip", "deflate"}
    for precompressed in (False, True):
        with StaticHost(root / "dist", precompressed=precompressed) as host:
            url = host.url + "assets/webnn-worker.0123456789abcdef.js"
            request = urllib.request.Request(url, headers={"Accept-Encoding": "br"})
            with urllib.request.urlopen(request) as r:
                headers, body = r.headers, r.read()
            assert headers["Access-Control-Allow-Origin"] == "*"
            assert headers["Cross-Origin-Resource-Policy"] is None
            assert headers["Cross-Origin-Embedder-Policy"] is None
            if precompressed:
                assert headers["Content-Encoding"] == "br" and brotli.decompress(body) == SCRIPT
            else:
                assert headers["Content-Encoding"] is None and body == SCRIPT
            assert host.transfer.total() == len(body)

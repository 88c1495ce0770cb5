"""Server settings, read once from environment variables into a frozen dataclass."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# the one pin of the Pyodide version, shared with scripts/fetch_assets.py and the Node runners
PYODIDE_VERSION = (REPO_ROOT / "PYODIDE_VERSION").read_text().strip()


def _reports_dir() -> Path:
    """Where comparison-bench runs are written and listed: $PYODIDE_WEBNN_REPORTS or ./reports."""
    return Path(os.environ.get("PYODIDE_WEBNN_REPORTS") or "reports").expanduser().resolve()


@dataclass(frozen=True)
class Settings:
    """Where the server listens and which directories it serves."""

    host: str = "127.0.0.1"
    port: int = 8000
    cache_dir: Path = Path.home() / ".cache" / "pyodide-webnn"
    repo_root: Path = REPO_ROOT
    reports_dir: Path = field(default_factory=_reports_dir)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from PYODIDE_WEBNN_{HOST,PORT,CACHE,ROOT,REPORTS}, falling back to the defaults."""
        env = os.environ if environ is None else environ
        default = cls()
        return cls(
            host=env.get("PYODIDE_WEBNN_HOST") or default.host,
            port=int(env.get("PYODIDE_WEBNN_PORT") or default.port),
            cache_dir=Path(env.get("PYODIDE_WEBNN_CACHE") or default.cache_dir).expanduser(),
            repo_root=Path(env.get("PYODIDE_WEBNN_ROOT") or default.repo_root).expanduser().resolve(),
            reports_dir=Path(env.get("PYODIDE_WEBNN_REPORTS") or "reports").expanduser().resolve(),
        )

    @property
    def official_pyodide_dir(self) -> Path:
        """Pyodide's official files, as scripts/fetch_assets.py fills the cache."""
        return self.cache_dir / f"pyodide-{PYODIDE_VERSION}"

    @property
    def cut_pyodide_dir(self) -> Path:
        """The Pyodide the polyfill serves, its standard library and NumPy cut to what the engine imports
        (scripts/trim_pyodide.mjs, `make pyodide`)."""
        return self.repo_root / "build" / "pyodide"

    @property
    def pyodide_dir(self) -> Path:
        """The Pyodide indexURL directory served: the cut one once built, else the official files."""
        cut = self.cut_pyodide_dir
        return cut if (cut / "trim.json").is_file() else self.official_pyodide_dir

    @property
    def polyfill_dist(self) -> Path:
        """The esbuild output directory (make build)."""
        return self.repo_root / "polyfill" / "dist"

    def snapshot_asset(self, name: str = "pyodide-snapshot") -> dict[str, Any] | None:
        """A build's Pyodide snapshot (scripts/make_snapshot.mjs, beside the bundle) as the polyfill fetches it:
        {url (on the dev server), sha256 (of the .gz), size (inflated)}, and for the one taken after `import numpy`
        (name "pyodide-snapshot-numpy") also numpySha256 (the wheel it holds) and relink (polyfill/src/boot/relink.js);
        None when it is not built or was made for another Pyodide version."""
        try:
            meta = json.loads((self.polyfill_dist / f"{name}.json").read_text())
            if meta["pyodide"] != PYODIDE_VERSION or not (self.polyfill_dist / meta["file"]).is_file():
                return None
            asset = {"url": f"/polyfill/{meta['file']}", "sha256": meta["sha256"], "size": meta["snapshotSize"]}
            if "relink" in meta:
                asset.update(numpySha256=meta["numpySha256"], relink=meta["relink"])
            return asset
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def samples_dir(self) -> Path:
        """The gallery's sample photos, generated on first request by scripts/make_samples.py."""
        return self.repo_root / "web" / "gallery" / "samples"

    @property
    def core_src(self) -> Path:
        """The py_core package directory the core wheel is built from."""
        return self.repo_root / "py_core"

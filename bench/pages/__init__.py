"""The pages the bench's browsers open, and the dev-server routes serving them (an extension of web.app's
create_app, installed through the `pyodide_webnn.server` entry point):

    /bench/     bench/bench.html and bench.js: the comparison harness (webnnBench: probe, run, runClient)
    /perf/      perf/index.html and perf.js: the performance page (the harness plus onnxruntime-web), also the
                start-up page of the browser tests; /perf/models/: the graphs bench/perf/models.py writes
    /clients/   clients/index.html and clients.js: onnxruntime-web and LiteRT.js over WebNN;
                /clients/models/<name>.onnx: bench/cases/client_models.py's models, generated on first use
    /clients/transformers.html: transformers.js pipelines over WebNN (clients/transformers.js);
                /clients/transformers-models/: bench/cases/transformers_models.py's folders, generated on first use
    /vendor/    onnxruntime-web, LiteRT.js and transformers.js (with the onnxruntime-web build it bundles) from
                node_modules
    /reports/   past runs (bench/report/routes.py), under a Content-Security-Policy without scripts
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse, Response

from bench.report.routes import REPORT_CSP, add_report_routes
from web.app import LONG_CACHE, NO_CACHE, AddHeaders, AssetFiles
from web.settings import Settings

PAGES_DIR = Path(__file__).resolve().parent


def add_bench_routes(app: FastAPI, settings: Settings) -> None:
    """Add the bench's pages, the files they load and /reports/ to the dev server app."""
    app.add_middleware(AddHeaders, headers=REPORT_CSP, prefix="/reports")

    @app.get("/clients/models/{name}.onnx")
    def client_model(name: str) -> Response:
        # generated on first use (bench/cases/client_models.py, torch), cached under build/client-models
        from bench.cases import client_models  # NumPy loads with the first model asked for, not with the server

        if name not in client_models.MODELS:
            return JSONResponse({"detail": f"no client model '{name}'"}, 404)
        out = settings.repo_root / "build" / "client-models"
        try:
            client_models.generate(out)
        except ImportError:
            return JSONResponse({"detail": "torch and onnx are needed: pip install -e '.[models]'"}, 404)
        return FileResponse(out / f"{name}.onnx", media_type="application/octet-stream",
                            headers={"cache-control": NO_CACHE})

    @app.get("/clients/transformers-models/{path:path}")
    def transformers_model_file(path: str) -> Response:
        # generated on first use (bench/cases/transformers_models.py, onnx), cached under build/transformers-models
        from bench.cases import transformers_models

        try:
            out = transformers_models.generate(settings.repo_root / "build" / "transformers-models")
        except ImportError:
            return JSONResponse({"detail": "onnx is needed: pip install -e '.[models]'"}, 404)
        file = (out / path).resolve()
        if not file.is_relative_to(out.resolve()) or not file.is_file():
            return JSONResponse({"detail": f"no transformers.js model file '{path}'"}, 404)
        return FileResponse(file, headers={"cache-control": NO_CACHE})

    add_report_routes(app, settings.reports_dir)  # /reports/: the listing and each run's page
    app.mount("/bench", AssetFiles(PAGES_DIR / "bench", NO_CACHE, html=True), name="bench")
    app.mount("/reports", AssetFiles(settings.reports_dir, NO_CACHE), name="reports")
    bench_models = settings.repo_root / "build" / "bench-models"
    app.mount("/perf/models", AssetFiles(bench_models, NO_CACHE), name="perf-models")
    app.mount("/perf", AssetFiles(PAGES_DIR / "perf", NO_CACHE, html=True), name="perf")
    node_modules = settings.repo_root / "node_modules"
    app.mount("/vendor/ort", AssetFiles(node_modules / "onnxruntime-web" / "dist", LONG_CACHE), name="vendor-ort")
    app.mount("/vendor/litert-wasm-utils", AssetFiles(node_modules / "@litertjs" / "wasm-utils" / "dist", LONG_CACHE),
              name="vendor-litert-wasm-utils")
    app.mount("/vendor/litert", AssetFiles(node_modules / "@litertjs" / "core", LONG_CACHE), name="vendor-litert")
    transformers = node_modules / "@huggingface" / "transformers"
    app.mount("/vendor/transformers", AssetFiles(transformers / "dist", LONG_CACHE), name="vendor-transformers")
    # the onnxruntime-web build transformers.js bundles (its .wasm and .mjs), not the one /vendor/ort serves
    app.mount("/vendor/transformers-ort", AssetFiles(transformers / "node_modules" / "onnxruntime-web" / "dist",
                                                     LONG_CACHE), name="vendor-transformers-ort")
    app.mount("/clients", AssetFiles(PAGES_DIR / "clients", NO_CACHE, html=True), name="clients")

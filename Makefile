# pyodide-webnn: `make run` serves the dev server, `make test` runs the tests. Both set up what they need first
# (venv, npm toolchain, Pyodide assets, browsers) and are no-ops for the parts already in place.

PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
# `make run` installs what serving needs; test tools (torch, onnx, playwright, pytest...) come with `make test`.
RUN_EXTRAS  := server,models
DIST_EXTRAS := dist
EXTRAS      := server,models,test,dev,dist
STAMP       := $(VENV)/.installed-stamp
RUN_STAMP   := $(VENV)/.installed-run-stamp
DIST_STAMP  := $(VENV)/.installed-dist-stamp
NODE_STAMP := node_modules/.installed-stamp
ESBUILD := node_modules/.bin/esbuild
HOST    ?= 127.0.0.1
PORT    ?= 8000
PYTEST_ARGS ?=
# Browser tests run in the three engines; pytest-playwright makes each (test, browser) its own test id.  WebKit
# is WebKitGTK through WebDriver unless Playwright's own WebKit build is installed (tests/browser/pages.py).
BROWSERS ?= --browser chromium --browser firefox --browser webkit

POLYFILL_SRC := $(shell find polyfill/src -type f -name '*.js' 2>/dev/null)
DIST := polyfill/dist
# The JS builder methods come from the core's spec table: regenerate them before bundling.
GEN_SCRIPT := scripts/gen_op_table.py
GEN_OPS  := $(if $(wildcard $(GEN_SCRIPT)),polyfill/src/generated/ops.json polyfill/src/generated/types.json)
SPEC_SRC := $(shell find py_core/spec py_core/types.py -name '*.py' 2>/dev/null)

.PHONY: setup venv venv-run node assets browsers native-chromium build pyodide snapshot dist run test fuzz bench lint clean help

help:
	@echo "make run    set up what serving needs, build the polyfill, serve http://$(HOST):$(PORT)"
	@echo "make test   set everything up, build the polyfill, run pytest (PYTEST_ARGS=...)"
	@echo "make setup  venv + npm toolchain + Pyodide assets + browsers + the native-WebNN Chromium (idempotent)"
	@echo "make build  compile the C kernels (clang, gcc), bundle polyfill/src with esbuild into polyfill/dist"
	@echo "make pyodide  the Pyodide the polyfill serves, cut to what the engine imports (part of run, test, dist)"
	@echo "make snapshot  the Pyodide memory snapshots a first visit restores (Node; part of run, test, dist)"
	@echo "make dist   the deployable package in dist/ (static folder + npm package root; cd dist && npm pack)"
	@echo "make lint   ruff check + mypy"
	@echo "make fuzz   the deep run of the kernel fuzzer (FUZZ_EXAMPLES=2000 per operator family)"
	@echo "make bench  polyfill vs onnxruntime-web and LiteRT, startup, memory (BENCH_ARGS=...)"

setup: venv node assets browsers native-chromium

venv: $(STAMP)
venv-run: $(RUN_STAMP)

$(PY):
	$(PYTHON3) -m venv $(VENV)

# Reinstall only when pyproject.toml changed since the last successful install.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e ".[$(EXTRAS)]"
	touch $@

# A subset of the extras: nothing to do when the full install above is current.
define install_subset
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then echo "venv: [$(1)] is part of the full install"; \
	else $(PY) -m pip install -e ".[$(1)]"; fi
	@touch $@
endef

$(RUN_STAMP): pyproject.toml | $(PY)
	$(call install_subset,$(RUN_EXTRAS))

$(DIST_STAMP): pyproject.toml | $(PY)
	$(call install_subset,$(DIST_EXTRAS))

node: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# Verifies the cache in well under a second when it is complete; downloads only what is missing or corrupt.
# (fetch_assets.py needs only the standard library and pip.)
assets: | $(PY)
	$(PY) scripts/fetch_assets.py

browsers: $(STAMP)
	bash scripts/setup_browsers.sh

# The npm Chromium 153 whose native WebNN works, for the bench's and the tests' native variants.  Checked in
# about 0.1 s when installed; where it cannot be installed it says why and exits 0 (those tests then skip).
native-chromium: $(STAMP)
	$(PY) scripts/setup_native_chromium.py

build: node venv-run
	bash scripts/build_native.sh
	@if [ ! -f polyfill/src/index.js ]; then \
	  echo "build: polyfill/src/index.js does not exist yet; skipping the polyfill bundle"; \
	else \
	  $(MAKE) --no-print-directory $(DIST)/webnn-polyfill.js $(DIST)/webnn-worker.js $(DIST)/webnn-engine.js; \
	fi

$(DIST)/webnn-polyfill.js: $(POLYFILL_SRC) $(GEN_OPS) $(NODE_STAMP)
	$(ESBUILD) polyfill/src/index.js --bundle --format=iife --sourcemap --outfile=$@

$(DIST)/webnn-worker.js: $(POLYFILL_SRC) $(GEN_OPS) $(NODE_STAMP)
	$(ESBUILD) polyfill/src/worker.js --bundle --format=esm --sourcemap --outfile=$@

# the engine as a classic script, for the scopes that run it in their own thread (polyfill/src/engine-script.js)
$(DIST)/webnn-engine.js: $(POLYFILL_SRC) $(GEN_OPS) $(NODE_STAMP)
	$(ESBUILD) polyfill/src/engine-script.js --bundle --format=iife --sourcemap --outfile=$@

# gen_op_table.py rewrites a file only when its content changes; touch both so make sees them as current.
polyfill/src/generated/ops.json polyfill/src/generated/types.json &: $(GEN_SCRIPT) $(SPEC_SRC) | $(RUN_STAMP)
	$(PY) $(GEN_SCRIPT)
	@touch polyfill/src/generated/ops.json polyfill/src/generated/types.json

# The Pyodide memory snapshots, made under Node and served gzipped beside the bundle (a first visit restores them
# instead of starting CPython): the bare interpreter's, and the worker's with NumPy imported; both with the core
# imported (the wheel the dev server serves now; after `make build`, whose C kernels it holds).  A no-op when it
# is current; it never fails the build: without it the polyfill starts CPython from its files
# (scripts/make_snapshot.mjs).
snapshot: pyodide venv-run
	$(PY) -m web.core_wheel build/core-wheel.whl
	node scripts/make_snapshot.mjs --out $(DIST) --core-wheel build/core-wheel.whl --assets build/pyodide

# The Pyodide the polyfill serves: its standard library and NumPy cut to what the engine imports, measured by
# running the engine under Node (scripts/trim_pyodide.mjs); a no-op when py_core and the assets are unchanged.
pyodide: node assets
	node scripts/trim_pyodide.mjs --out build/pyodide

# dist/ is git-ignored; the brotli results are cached by content (brotli -q 11 takes minutes the first time).
dist: $(DIST_STAMP) node assets build snapshot
	$(PY) scripts/make_dist.py

# Serving needs no browser and no test tools.
run: venv-run node assets build snapshot
	$(PY) -m web --host $(HOST) --port $(PORT)

# Same as setup, except that missing browsers stop the run here with a clear message (--strict).
test: venv node assets native-chromium build snapshot
	bash scripts/setup_browsers.sh --strict
	$(PY) -m pytest $(BROWSERS) --durations=25 $(PYTEST_ARGS)

# Not part of `make test` (which runs the same fuzzer with a small derandomized budget): random examples,
# FUZZ_EXAMPLES per operator family, hypothesis statistics at the end (2500 per family: 4 minutes here).  The address
# space is capped at 8 GB: a kernel that pads huge geometry again fails with a MemoryError, it does not eat the
# machine's memory.
FUZZ_EXAMPLES ?= 2000
fuzz: venv build
	ulimit -v 8000000; WEBNN_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider --hypothesis-show-statistics \
	  tests/core/test_fuzz_kernels.py

# Not part of `make test`: a full run takes several minutes (python -m bench perf --help for options; docs/bench.md).
BENCH_ARGS ?=
bench: setup build dist
	$(PY) -m bench perf $(BENCH_ARGS)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m mypy --strict --follow-imports=silent web bench scripts/fetch_assets.py scripts/setup_native_chromium.py

clean:
	rm -rf $(DIST) dist .pytest_cache test-results reports build *.egg-info

// Where the polyfill's assets live: next to the script that loaded it, unless the page says otherwise
// (`data-base` on the script tag, or `WEBNN_POLYFILL_CONFIG.baseURL`). Every asset URL is absolute, so the
// script works from any origin (a CDN, a static host) on a page that is not cross-origin isolated.

import {configValue} from './switches.js';

// `make dist` (scripts/make_dist.py) defines __WEBNN_DIST__ as the content-hashed asset names of the package,
// relative to the base; the dev build leaves it undefined and uses the dev server's layout.
/* global __WEBNN_DIST__ */

const DIST = typeof __WEBNN_DIST__ === 'undefined' ? null : __WEBNN_DIST__;

let moduleURL = null;

/** The ES module entry tells us its own URL (import.meta.url) before index.js installs the polyfill. */
export function setScriptURL(url) {
  moduleURL = url;
}

function scriptURL() {
  if (moduleURL) return moduleURL;
  if (typeof document !== 'undefined' && document.currentScript && document.currentScript.src) {
    return document.currentScript.src;
  }
  // In workers (importScripts) and module contexts, find our own URL in a stack trace.
  const stack = String(new Error().stack || '');
  const m = stack.match(/(https?:\/\/[^\s)]+?webnn-polyfill(?:\.[\w-]+)?\.m?js)/);
  if (m) return m[1];
  return typeof location !== 'undefined' ? location.href : 'http://127.0.0.1:8000/polyfill/webnn-polyfill.js';
}

function scriptAttribute(name) {
  if (typeof document !== 'undefined' && document.currentScript && !moduleURL) {
    return document.currentScript.getAttribute(name);
  }
  return null;
}

function installMode() {
  return scriptAttribute('data-install') || (typeof self !== 'undefined' && self.WEBNN_POLYFILL_INSTALL) || 'auto';
}

/** data-strict on the script tag (any value but "false"), or WEBNN_POLYFILL_STRICT in a worker. */
function strictMode() {
  const v = scriptAttribute('data-strict');
  if (v !== null) return v !== 'false';
  return !!(typeof self !== 'undefined' && self.WEBNN_POLYFILL_STRICT);
}

/** Resolved URLs and options; `globalThis.WEBNN_POLYFILL_CONFIG` may override any of them (its keys: switches.js). */
export function readConfig() {
  const script = scriptURL();
  const overrides = (typeof globalThis !== 'undefined' && globalThis.WEBNN_POLYFILL_CONFIG) || {};
  // a folder URL: the one holding the package's files (dist), or the dev server's /polyfill/. A given base
  // resolves as URLs in a page do (against the document's base URL); the default is the script's own folder.
  const given = configValue(overrides, 'baseURL') || scriptAttribute('data-base');
  const pageBase = typeof document !== 'undefined' && document.baseURI ? document.baseURI : script;
  let base = given ? new URL(given, pageBase).href : new URL('./', script).href;
  if (!base.endsWith('/')) base += '/';
  const urls = DIST ? {
    pyodideURL: new URL(DIST.pyodide, base).href,
    lockFileURL: new URL(DIST.lock, base).href,
    // the core wheel is known when the package is built: no manifest to fetch
    coreWheel: {url: new URL(DIST.core.wheel, base).href, sha256: DIST.core.sha256},
    // the build's Pyodide snapshot (scripts/make_snapshot.mjs), when make dist had one
    ...(DIST.snapshot ? {snapshotAsset: {...DIST.snapshot, url: new URL(DIST.snapshot.url, base).href}} : {}),
    // and the worker's, taken after `import numpy`
    ...(DIST.numpySnapshot ? {numpySnapshotAsset: {...DIST.numpySnapshot,
      url: new URL(DIST.numpySnapshot.url, base).href}} : {}),
    workerURL: new URL(DIST.worker, base).href,
    engineURL: new URL(DIST.engine, base).href,
  } : {
    pyodideURL: new URL('../pyodide/', base).href,
    coreManifestURL: new URL('../core/manifest.json', base).href,
    workerURL: new URL('webnn-worker.js', base).href,
    engineURL: new URL('webnn-engine.js', base).href,
  };
  // strict: the draft's behaviour where Chromium differs (docs/compatibility.md); default false: Chromium's
  return {scriptURL: script, baseURL: base, install: installMode(), strict: strictMode(), ...urls, ...overrides};
}

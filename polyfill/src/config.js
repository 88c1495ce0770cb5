// Where the polyfill's assets live: next to the script that loaded it, unless the page says otherwise.

function scriptURL() {
  if (typeof document !== 'undefined' && document.currentScript && document.currentScript.src) {
    return document.currentScript.src;
  }
  // In workers (importScripts) and module contexts, find our own URL in a stack trace.
  const stack = String(new Error().stack || '');
  const m = stack.match(/(https?:\/\/[^\s)]+?webnn-polyfill\.js)/);
  if (m) return m[1];
  return typeof location !== 'undefined' ? location.href : 'http://127.0.0.1:8000/polyfill/webnn-polyfill.js';
}

function installMode() {
  if (typeof document !== 'undefined' && document.currentScript) {
    return document.currentScript.getAttribute('data-install') || 'auto';
  }
  return (typeof self !== 'undefined' && self.WEBNN_POLYFILL_INSTALL) || 'auto';
}

/** data-strict on the script tag (any value but "false"), or WEBNN_POLYFILL_STRICT in a worker. */
function strictMode() {
  if (typeof document !== 'undefined' && document.currentScript) {
    const v = document.currentScript.getAttribute('data-strict');
    return v !== null && v !== 'false';
  }
  return !!(typeof self !== 'undefined' && self.WEBNN_POLYFILL_STRICT);
}

/** Resolved URLs and options; `globalThis.WEBNN_POLYFILL_CONFIG` may override any of them. */
export function readConfig() {
  const script = scriptURL();
  const root = new URL('../', script).href;
  const overrides = (typeof globalThis !== 'undefined' && globalThis.WEBNN_POLYFILL_CONFIG) || {};
  return {
    scriptURL: script,
    install: installMode(),
    // the draft's behaviour where Chromium differs (docs/compatibility.md); default false: Chromium's
    strict: strictMode(),
    pyodideURL: new URL('pyodide/', root).href,
    coreManifestURL: new URL('core/manifest.json', root).href,
    workerURL: new URL('webnn-worker.js', script).href,
    ...overrides,
  };
}

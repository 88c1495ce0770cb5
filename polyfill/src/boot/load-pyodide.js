// Loading Pyodide's loader (loadPyodide) in every scope the polyfill runs in.
//
// A page, a dedicated worker and a shared worker import pyodide.mjs; a classic worker without module import()
// falls back to importScripts. A service worker allows neither after its script has run: import() is refused
// there, and importScripts only returns scripts fetched while the script first ran. So in a classic service
// worker, index.js imports Pyodide's two scripts while the polyfill's own script runs (preloadPyodideScripts),
// and this finds loadPyodide (and pyodide.asm.js's module factory, which loadPyodide then does not fetch) global.

/** pyodide.mjs's {loadPyodide, version}; version is undefined when only the global loadPyodide exists. */
export async function importPyodide(base) {
  // only a service worker's global: a page may have a loadPyodide of its own, of another Pyodide version
  if (inServiceWorker() && typeof globalThis.loadPyodide === 'function') {
    return {loadPyodide: globalThis.loadPyodide, version: undefined};
  }
  try {
    return await import(/* webpackIgnore: true */ base + 'pyodide.mjs');
  } catch (e) {
    const failed = new Error(`${base}pyodide.mjs could not be imported: ${e && e.message ? e.message : e}`);
    if (typeof importScripts !== 'function') throw failed;
    try {
      importScripts(base + 'pyodide.js');
    } catch (_) {
      throw failed;  // (a module worker refuses importScripts: the import's own error says why)
    }
    return {loadPyodide: globalThis.loadPyodide, version: undefined};
  }
}

/** True in a service worker's global scope. */
export function inServiceWorker() {
  return typeof ServiceWorkerGlobalScope !== 'undefined' && globalThis instanceof ServiceWorkerGlobalScope;
}

/** True in Firefox (a page or a worker): where its engine was measured to need another path (boot.js, runtime/runtime.js,
 * engine/start.js say why at each use). */
export function inFirefox() {
  return typeof navigator !== 'undefined' && /\bFirefox\//.test(navigator.userAgent || '');
}

/**
 * In a classic service worker, while its script first runs: import pyodide.js and pyodide.asm.js now, the only
 * time importScripts may fetch them. Returns null, or why it could not (a module service worker has no
 * importScripts: it must import both files statically itself, see the README).
 */
export function preloadPyodideScripts(base) {
  if (!inServiceWorker() || typeof globalThis.loadPyodide === 'function') return null;
  try {
    if (typeof globalThis._createPyodideModule !== 'function') importScripts(base + 'pyodide.asm.js');
    importScripts(base + 'pyodide.js');
    return null;
  } catch (e) {
    return `Pyodide's scripts could not be imported in this service worker: ${e && e.message ? e.message : e}`;
  }
}

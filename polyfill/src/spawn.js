// Starting the execution worker from wherever the polyfill was loaded.
//
// `new Worker(url)` refuses a script on another origin (a CDN), whatever its CORS headers. A module worker
// started from a blob URL has the page's origin, and its one line imports the real worker script by its
// absolute URL, as a CORS module load: so the worker runs from any static host that sends
// `Access-Control-Allow-Origin`. Same-origin scripts are started directly (no blob: a page whose CSP has no
// `worker-src blob:` still works when it serves the polyfill itself).

function sameOrigin(url) {
  try {
    return typeof location !== 'undefined' && new URL(url).origin === new URL(location.href).origin;
  } catch (e) {
    return false;
  }
}

/** A module Worker running the worker script at `url` (absolute). */
export function spawnWorker(url) {
  const options = {type: 'module', name: 'webnn-polyfill'};
  if (sameOrigin(url)) return new Worker(url, options);
  const source = `import ${JSON.stringify(url)};\n`;
  // not revoked: a few bytes per worker started, and no race with the browser's fetch of the blob
  return new Worker(URL.createObjectURL(new Blob([source], {type: 'text/javascript'})), options);
}

// What this context's caches did while it booted, for webnnPolyfill.bootTimings.cache (one per Pyodide's context:
// the page's and the worker's): the store the snapshots use, the entries dropped (and why), the storage that
// refused to open or to keep an entry (and why), and the ms spent checking digests (snapshots', site entries').  A dropped entry or refused
// storage costs speed only: the boot takes the clean path, and this says which and why.

const log = {store: null, dropped: [], refused: [], checkMs: {snapshot: 0, site: 0}};

/** This context's record (a live object: writes that fail after the boot still land in it). */
export function cacheLog() {
  return log;
}

/** Records the snapshots' store: 'opfs', 'cache' or null. */
export function noteStore(kind) {
  log.store = kind;
}

// an entry's name as the log shows it: the last part of its key (a URL)
const entryName = (key) => String(key).slice(String(key).lastIndexOf('/') + 1);

/** Records (and says on the console, in one line) that the entry under `key` was dropped, and why. */
export function noteDropped(key, why) {
  const entry = entryName(key);
  log.dropped.push({entry, why});
  console.warn(`WebNN polyfill: dropped the cached ${entry} (${why}); booting without it`);
}

/** Records that `what` (a store, or a write into one) was refused with error `e`; said once per reason. */
export function noteRefused(what, e) {
  const why = `${what}: ${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : e}`;
  if (log.refused.includes(why)) return;
  log.refused.push(why);
  console.warn(`WebNN polyfill: storage refused (${why}); this visit keeps nothing there`);
}

/** Adds the ms a digest check of a `what` ('snapshot' or 'site') entry took. */
export function noteCheck(what, ms) {
  log.checkMs[what] = Math.round(log.checkMs[what] + ms);
}

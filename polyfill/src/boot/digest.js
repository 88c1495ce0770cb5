// sha256 digests as the polyfill's files carry them (lower-case hex: Pyodide's lock file, the manifests) and as
// fetch's `integrity` takes them (base64): wheels.js, snapshot.js, snapstore.js, sitecache.js and boot.js.

/** Whether h is a sha256 in lower-case hex. */
export const isSha256 = (h) => /^[0-9a-f]{64}$/.test(h || '');

/** A digest's bytes (ArrayBuffer or view) as lower-case hex. */
export const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** fetch's `integrity` for a hex sha256, or undefined when it is not one. */
export function integrityOf(hexSha256) {
  if (!isSha256(hexSha256)) return undefined;
  const bytes = hexSha256.match(/../g).map((h) => parseInt(h, 16));
  return `sha256-${btoa(String.fromCharCode(...bytes))}`;
}

/** Whether this scope can take digests (crypto.subtle: secure contexts only). */
export const canDigest = () => !!(globalThis.crypto && crypto.subtle);

/** The sha256 of bytes (an ArrayBuffer or view) as lower-case hex. */
export async function sha256Hex(bytes) {
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

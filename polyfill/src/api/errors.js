// Errors the spec requires: TypeError for invalid arguments, DOMExceptions by name otherwise.
// https://www.w3.org/TR/webnn/#api-mlgraphbuilder

/** An Error of the kind the spec names ("TypeError" or a DOMException name) with `message`. */
export function makeError(name, message) {
  if (name === 'TypeError') return new TypeError(message);
  if (name === 'RangeError') return new RangeError(message);
  return new DOMException(message, name || 'UnknownError');
}

/** Rebuild an error sent as {name, message} by the Python core or the worker. */
export function errorFromJson(payload) {
  return makeError(payload && payload.name, (payload && payload.message) || 'unknown error');
}

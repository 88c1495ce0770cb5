// Private state of the polyfill's objects, out of reach of page scripts (WeakMaps keyed by the objects).

export const INTERNAL = Symbol('webnn-polyfill-internal');
export const operandState = new WeakMap();
export const builderState = new WeakMap();
export const graphState = new WeakMap();
export const tensorState = new WeakMap();
export const contextState = new WeakMap();

export function illegal(token) {
  if (token !== INTERNAL) throw new TypeError('Illegal constructor');
}

/** Define read-only accessors on a prototype, reading from a state WeakMap. */
export function defineGetters(cls, map, getters) {
  for (const [name, fn] of Object.entries(getters)) {
    Object.defineProperty(cls.prototype, name, {
      get() {
        const s = map.get(this);
        if (!s) throw new TypeError(`Illegal invocation of ${cls.name}.${name}`);
        return fn(s);
      },
      enumerable: true,
      configurable: true,
    });
  }
}

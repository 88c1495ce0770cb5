// Private state of the polyfill's objects, out of reach of page scripts (WeakMaps keyed by the objects),
// and the WebIDL shape of the interface objects.  https://webidl.spec.whatwg.org/#es-interfaces

export const INTERNAL = Symbol('webnn-polyfill-internal');
export const operandState = new WeakMap();
export const builderState = new WeakMap();
export const graphState = new WeakMap();
export const tensorState = new WeakMap();
export const contextState = new WeakMap();

/** Interfaces without a constructor throw TypeError when script calls `new`. */
export function illegal(token) {
  if (token !== INTERNAL) throw new TypeError('Illegal constructor');
}

/** The private state of `self`, or TypeError("Illegal invocation") when `self` is not one of ours. */
export function stateOf(map, self, where) {
  const s = map.get(self);
  if (!s) throw new TypeError(`Illegal invocation of ${where}`);
  return s;
}

/** A WebIDL attribute getter: a function named `get <name>`, of length 0, running `body` with `this`. */
export function attributeGetter(name, body) {
  return Object.getOwnPropertyDescriptor({get [name]() { return body(this); }}, name).get;
}

/** Define read-only accessors on a prototype, reading from a state WeakMap. */
export function defineGetters(cls, map, getters) {
  for (const [name, fn] of Object.entries(getters)) {
    Object.defineProperty(cls.prototype, name, {
      get: attributeGetter(name, (self) => fn(stateOf(map, self, `${cls.name}.${name}`))),
      enumerable: true,
      configurable: true,
    });
  }
}

/**
 * Give a class the property shape WebIDL gives an interface: enumerable operations and attributes,
 * each operation's `length` its required argument count (the shortest overload), @@toStringTag, a
 * stable `name` even after bundling, and the interface object's `length`: its constructor's required
 * argument count, 0 for an interface without a constructor (whose JS constructor takes private arguments).
 * `lengths` maps operation names to their required counts.  https://webidl.spec.whatwg.org/#es-interface-call
 */
export function defineInterface(cls, name, lengths = {}, constructorLength = 0) {
  Object.defineProperty(cls, 'name', {value: name});
  Object.defineProperty(cls, 'length', {value: constructorLength});
  const proto = cls.prototype;
  for (const key of Object.getOwnPropertyNames(proto)) {
    if (key === 'constructor') continue;
    const d = Object.getOwnPropertyDescriptor(proto, key);
    if (typeof d.value === 'function' && key in lengths) {
      Object.defineProperty(d.value, 'length', {value: lengths[key]});
    }
    if (key in lengths || d.get) Object.defineProperty(proto, key, {enumerable: true});
  }
  Object.defineProperty(proto, Symbol.toStringTag, {value: name, configurable: true});
}

/** The [[Class]]-like tag of any value, used to recognise objects of another WebNN implementation. */
export function tagOf(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') ? Object.prototype.toString.call(v) : '';
}

/** A hint appended to TypeErrors when `v` is a WebNN object of another implementation (native WebNN). */
export function foreignHint(v, interfaceName, map) {
  return tagOf(v) === `[object ${interfaceName}]` && !map.has(v)
    ? ` (it is a ${interfaceName} of another WebNN implementation, e.g. the browser's native WebNN; `
      + 'native and polyfill objects cannot be mixed)'
    : '';
}

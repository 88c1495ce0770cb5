// Side by side with a native WebNN: whoever holds the global names, `new MLGraphBuilder(context)` builds with the
// implementation that owns `context`, and `instanceof` on the global interfaces is true for the objects of both.
// Clients (onnxruntime-web, LiteRT.js) construct the GLOBAL MLGraphBuilder with the context they were given, so
// this is what lets a page hand them a polyfill context while navigator.ml stays the browser's.
// Native prototypes are left as they are: the global MLGraphBuilder becomes a routing function whose prototype
// is the one the global had, and the other interfaces get a static @@hasInstance.

import {contextState} from './internal.js';

const ordinaryHasInstance = (C, v) => Function.prototype[Symbol.hasInstance].call(C, v);

/** `MLGraphBuilder` for the global object: a polyfill builder for a polyfill context, a native one otherwise
 *  (the native constructor then throws its own TypeError for anything that is not a native context); its
 *  `prototype` is `owner`'s, the class that held the global name. */
function routedBuilder(owner, poly, native) {
  const MLGraphBuilder = function MLGraphBuilder(context) {
    if (new.target === undefined) {
      throw new TypeError("Failed to construct 'MLGraphBuilder': Please use the 'new' operator");
    }
    const impl = contextState.has(context) ? poly : native;
    // a subclass of the global keeps its own prototype; the plain global gives the implementation's own object
    return new.target === MLGraphBuilder ? new impl(...arguments) : Reflect.construct(impl, arguments, new.target);
  };
  Object.defineProperty(MLGraphBuilder, 'name', {value: 'MLGraphBuilder'});  // the bundler may rename it
  Object.defineProperty(MLGraphBuilder, 'prototype', {value: owner.prototype, writable: false});
  Object.defineProperty(MLGraphBuilder, Symbol.hasInstance, {
    value: (v) => ordinaryHasInstance(poly, v) || ordinaryHasInstance(native, v), configurable: true,
  });
  return MLGraphBuilder;
}

/** Make `C[@@hasInstance]` also accept instances of `also` (defined on the constructor, not its prototype). */
function widenInstanceof(C, also) {
  if (typeof C !== 'function' || typeof also !== 'function' || C === also) return;
  Object.defineProperty(C, Symbol.hasInstance, {
    value: (v) => ordinaryHasInstance(C, v) || ordinaryHasInstance(also, v), configurable: true,
  });
}

/**
 * Install the routing on the global object.  `native` holds the browser's interface objects as found before
 * the polyfill ran (empty when there are none), `poly` the polyfill's, `polyHoldsGlobals` whether the
 * polyfill took the global names (no native WebNN, or data-install="replace").
 */
export function routeGlobals(native, poly, polyHoldsGlobals) {
  if (typeof native.MLGraphBuilder !== 'function') return;  // nothing to route to
  for (const name of ['ML', 'MLContext', 'MLGraph', 'MLOperand', 'MLTensor']) {
    if (polyHoldsGlobals) widenInstanceof(poly[name], native[name]);
    else widenInstanceof(native[name], poly[name]);
  }
  const owner = polyHoldsGlobals ? poly.MLGraphBuilder : native.MLGraphBuilder;
  Object.defineProperty(globalThis, 'MLGraphBuilder', {
    value: routedBuilder(owner, poly.MLGraphBuilder, native.MLGraphBuilder),
    configurable: true, writable: true, enumerable: false,
  });
}

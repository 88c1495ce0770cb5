// A stand-in "native" WebNN for the bench's own tests (python -m bench run --init-script this-file): it
// installs navigator.ml before the polyfill loads, so the polyfill leaves it alone and the bench probes it as
// the browser's implementation.  It forwards to the polyfill and refuses deviceType 'npu', giving the bench a
// usable native implementation and an unusable variant to report where no real one exists.
(() => {
  const ml = {
    async createContext(options = {}) {
      if (options && options.deviceType === 'npu') {
        throw new DOMException('fake native WebNN: no NPU on this device', 'NotSupportedError');
      }
      return globalThis.webnnPolyfill.ml.createContext(options);
    },
  };
  Object.defineProperty(Navigator.prototype, 'ml', {get: () => ml, configurable: true, enumerable: true});
  globalThis.MLGraphBuilder = function MLGraphBuilder(context) {
    return new globalThis.webnnPolyfill.MLGraphBuilder(context);
  };
})();

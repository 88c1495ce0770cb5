// What the execution engine uses of the boot layer, handed to createEngine (engine/engine.js) by whoever starts
// it: the worker script (worker.js), or the page bundle where the engine runs in the scope's own thread
// (runtime/spawn.js). The engine's own bundle (webnn-engine.js) thus carries no boot code: a scope running both
// keeps one copy of the boot layer and of its state (the wrapped wasm instantiation, the relink hook).

export {bootPyodide} from './boot.js';
export {cacheLog} from './cachelog.js';
export {inFirefox} from './load-pyodide.js';
export {lastRelink} from './relink.js';
export {stdlibUsed} from './stdlibpyc.js';
export {installWheel} from './wheels.js';

// The engine as a classic script (webnn-engine.js), for a scope that runs it in its own thread because it cannot
// start workers (a service worker; a shared worker in Chromium): runtime/spawn.js loads it there, and only there,
// so the page bundle carries no engine. It defines `globalThis.webnnPolyfillEngine.createEngine`; the boot layer
// comes from the page bundle (boot/for-engine.js), which the scope already runs.

import {createEngine} from './engine/engine.js';

globalThis.webnnPolyfillEngine = Object.freeze({createEngine});

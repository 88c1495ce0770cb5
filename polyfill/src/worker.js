// The execution worker: runs the engine (engine/engine.js) on its own thread, one message at a time, in order.
// Its switches (switches.js) come from this script's own URL, which may run from a blob URL that imports it
// (runtime/spawn.js).

import * as boot from './boot/for-engine.js';
import {useOpfs} from './boot/snapstore.js';
import {createEngine} from './engine/engine.js';
import {holdLifeline} from './runtime/lifeline.js';
import {switchesOf, workerSwitchOn} from './switches.js';

// first of all: the page knows this worker's script runs (runtime/rpc.js holds its messages until then)
self.postMessage({type: 'hello'});
const switches = switchesOf(import.meta.url);
// the Pyodide snapshots in the Origin Private File System, or in Cache Storage (boot/snapstore.js)
useOpfs(workerSwitchOn(switches, 'opfs'));

// the page notices this worker's end, however it ends, by this lock's release (runtime/lifeline.js)
holdLifeline(self.name, () => self.postMessage({type: 'lifeline'}));
const receive = createEngine({
  post: (message, transfer) => self.postMessage(message, transfer),
  close: () => self.close(),
  switches,
  boot,
});
self.onmessage = (e) => receive(e.data);

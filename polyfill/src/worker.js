// The execution worker: runs the engine (engine.js) on its own thread, one message at a time, in order.

import {createEngine} from './engine.js';
import {useOpfs} from './snapstore.js';

const switches = new URL(import.meta.url).searchParams;
// ?opfs=0: the Pyodide snapshots in Cache Storage, not the Origin Private File System (snapstore.js)
useOpfs(switches.get('opfs') !== '0');

const receive = createEngine({
  post: (message, transfer) => self.postMessage(message, transfer),
  close: () => self.close(),
  // URL switches (?compiler=0, ?native=0, ?blas=0, ?unpack=0: engine.js) from this script's own URL
  switches,
});
self.onmessage = (e) => receive(e.data);

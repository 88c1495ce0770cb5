// A module shared worker: the polyfill bundle as a side-effect import, then the shared task, per connection.
import '/polyfill/webnn-polyfill.js';
import './worker-task.js';

self.onconnect = (event) => {
  const port = event.ports[0];
  port.onmessage = async (e) => port.postMessage(await self.runWebnnTask(e.data.kind));
};

// A classic shared worker: the polyfill bundle through importScripts, then the shared task, per connection.
importScripts('/polyfill/webnn-polyfill.js', 'worker-task.js');
self.onconnect = (event) => {
  const port = event.ports[0];
  port.onmessage = async (e) => port.postMessage(await self.runWebnnTask(e.data.kind));
};

// Runs in a worker (dedicated, shared or service) after the polyfill loaded: uses navigator.ml as a page would.
// runWebnnTask(kind) resolves with a report; each worker script sends it back its own way (a dedicated worker
// here, on its first message).
self.runWebnnTask = async (kind) => {
  const report = {kind, hasML: 'ml' in navigator, engine: self.webnnPolyfill && self.webnnPolyfill.engine,
    nestedWorker: typeof Worker === 'function'};
  const errorName = async (fn) => {
    try { await fn(); return 'ok'; } catch (e) { return e.name; }
  };
  try {
    report.installed = self.webnnPolyfill.installed;
    report.mlIsPolyfill = navigator.ml === self.webnnPolyfill.ml;
    report.globals = ['MLGraphBuilder', 'MLContext', 'MLTensor'].every((n) => typeof self[n] === 'function');
    const t0 = performance.now();
    const ctx = await navigator.ml.createContext();
    report.bootMs = Math.round(performance.now() - t0);
    const desc = {dataType: 'int32', shape: [1]};
    const b = new MLGraphBuilder(ctx);
    const graph = await b.build({F_n: b.add(b.input('F_n-1', desc), b.input('F_n-2', desc))});
    const tensors = await Promise.all([0, 1, 2].map(() => ctx.createTensor({...desc, readable: true, writable: true})));
    ctx.writeTensor(tensors[0], new Int32Array([0]));
    ctx.writeTensor(tensors[1], new Int32Array([1]));
    for (let n = 2; n <= 40; n++) {
      ctx.dispatch(graph, {'F_n-1': tensors[(n - 1) % 3], 'F_n-2': tensors[(n - 2) % 3]}, {F_n: tensors[n % 3]});
    }
    report.fib40 = new Int32Array(await ctx.readTensor(tensors[40 % 3]))[0];
    const fb = new MLGraphBuilder(ctx);
    const x = fb.input('x', {dataType: 'float32', shape: [4]});
    const g2 = await fb.build({y: fb.relu(fb.sub(x, fb.constant('float32', 1)))});
    const res = await ctx.compute(g2, {x: new Float32Array([0, 1, 2, 3])}, {y: new Float32Array(4)});
    report.compute = Array.from(res.outputs.y);
    tensors[0].destroy();
    report.readDestroyed = await errorName(() => ctx.readTensor(tensors[0]));
    report.builderAfterBuild = await errorName(() => fb.relu(x));
    report.limitsOps = Object.keys(ctx.opSupportLimits()).length;
    ctx.destroy();
    report.lost = (await ctx.lost).message;
  } catch (e) {
    report.error = `${e.name}: ${e.message}`;
  }
  return report;
};

if (typeof DedicatedWorkerGlobalScope !== 'undefined' && self instanceof DedicatedWorkerGlobalScope) {
  self.onmessage = async (event) => self.postMessage(await self.runWebnnTask(event.data.kind));
}

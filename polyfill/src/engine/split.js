// One graph over both cores, the engine's side: a batch-separable graph (py_core/compiler/split.py)
// is built here for one part of its batch and, on the peer worker, for the other (the same part graph); a
// dispatch sends the other part of its inputs to the peer on a MessageChannel between the two workers (not
// through the page), runs its own part meanwhile, and copies the peer's outputs into the output tensors beside
// its own (py_core/bridge/split_glue.py).  Without a peer (it could not start, was lost, or failed a run)
// every part runs here, one after the other: slower, never different.  The owner's queue stays the tensors'
// timeline: the split dispatch holds it until its outputs are whole.
//
// The peer answers requests on the port as they arrive, not in its own queue: its queue may itself be waiting
// for this worker (both workers may own split graphs), and no Python runs while a queue waits.
// Off with the worker URL switch ?split=0; on only where the page's config asks for it (runtime/pool.js).

import {workerSwitchOn} from '../switches.js';
import {takeBytes, unwrap} from './glue.js';

/** The split half of an engine: `pyodide()`, `glue()` (py_core.bridge.pyodide_glue) as the engine has them. */
export function createSplit({pyodide, glue, switches, outputsDone = () => {}}) {
  const on = workerSwitchOn(switches, 'split');
  let module = null;
  let port = null;
  let nextId = 1;
  const pending = new Map();  // request id -> {resolve, reject}
  const graphs = new Map();  // gid -> {ctx, parts, peer}: graphs built here for a part of their batch
  const stash = new Map();  // gid -> what the peer builds from, until the page says whether there is one
  const last = {local: 0, wait: 0, served: 0};
  const counts = {peer: 0, here: 0};  // parts past the first: run by the peer, run here (no peer, or it failed)  // ms of the last split dispatch's own part, its wait, a peer run
  const served = new Map();  // gid -> ctx (both negated) of the part graphs this worker holds for its peer

  function sg() {
    if (!module) module = pyodide().pyimport('py_core.bridge.split_glue');
    return module;
  }

  function request(type, payload, transfer = []) {
    if (!port) return Promise.reject(new Error('no peer'));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, {resolve, reject});
      port.postMessage({id, type, ...payload}, transfer);
    });
  }

  function notify(type, payload) {
    if (port) port.postMessage({type, ...payload});
  }

  // the peer's side: requests from the other worker, answered at once
  function serve(msg) {
    const answer = (result, transfer = []) => { if (msg.id) port.postMessage({re: msg.id, result}, transfer); };
    try {
      const g = glue();
      if (msg.type === 'build') {
        unwrap(g.build(msg.ctx, msg.gid, msg.graph, msg.constIds, msg.buffers, '{}'));
        served.set(msg.gid, msg.ctx);
        answer(true);
      } else if (msg.type === 'run') {
        const t0 = performance.now();
        const result = unwrap(g.compute(msg.ctx, msg.gid, JSON.stringify(msg.names), msg.inputs));
        const out = {};
        try {
          const names = JSON.parse(result.get(0));
          const views = result.get(1);
          try {
            names.forEach((name, i) => {
              out[name] = takeBytes(views.get(i));
            });
          } finally {
            views.destroy();
          }
        } finally {
          result.destroy();
        }
        last.served = performance.now() - t0;
        answer(out, Object.values(out));
      } else if (msg.type === 'destroyGraph') {
        served.delete(msg.gid);
        unwrap(g.destroy_graph(msg.gid));
      } else if (msg.type === 'destroyContext') {
        for (const [gid, ctx] of [...served]) if (ctx === msg.ctx) served.delete(gid);
        unwrap(g.destroy_context(msg.ctx));
      }
    } catch (e) {
      if (msg.id) port.postMessage({re: msg.id, error: {name: e && e.name || 'OperationError', message: e && e.message || String(e)}});
    }
  }

  function receive(e) {
    const msg = e.data;
    if (msg.re) {
      const entry = pending.get(msg.re);
      if (!entry) return;
      pending.delete(msg.re);
      if (msg.error) entry.reject(msg.error);
      else entry.resolve(msg.result);
      return;
    }
    serve(msg);
  }

  /** The page linked this worker with its peer. */
  function link(newPort) {
    if (port) port.close();
    port = newPort;
    port.onmessage = receive;
  }

  /** The peer is gone: everything runs here; what this worker held for it is released. */
  function peerLost() {
    if (port) port.close();
    port = null;
    for (const g of graphs.values()) g.peer = false;
    for (const {reject} of pending.values()) reject(new Error('the peer worker was lost'));
    pending.clear();
    for (const ctx of new Set(served.values())) {
      try { unwrap(glue().destroy_context(ctx)); } catch (_) { /* reported nowhere: it was the peer's */ }
    }
    served.clear();
  }

  /** build: a separable graph for one part of its batch (info.split: parts), else the whole graph.  With a peer
   *  linked already, the peer builds its part graph while this worker builds its own. */
  function build(m) {
    const {parts, minFlops} = m.split;
    const part = unwrap(sg().plan(m.ctx, m.gid, m.graph, m.constIds, m.buffers, m.constantTensors, parts,
      typeof minFlops === 'number' ? minFlops : null));  // the constants are copied into Python here
    let peerBuild = null;
    if (part && port) {
      peerBuild = request('build', {ctx: -m.ctx, gid: -m.gid, graph: part, constIds: m.constIds,
        buffers: m.buffers}, [...new Set(m.buffers.map((b) => b.buffer))]);
      peerBuild.catch(() => {});
    }
    let info;
    try {
      info = unwrap(sg().build(m.ctx, m.gid));
    } catch (e) {
      if (peerBuild) peerBuild.then(() => notify('destroyGraph', {gid: -m.gid}), () => {});
      throw e;
    }
    if (peerBuild || part) {
      const split = info.get('split');
      if (!split && peerBuild) peerBuild.then(() => notify('destroyGraph', {gid: -m.gid}), () => {});
      if (split) {
        graphs.set(m.gid, {ctx: m.ctx, parts: split, peer: false});
        stash.set(m.gid, peerBuild ? {peerBuild} : {graph: part, constIds: m.constIds, buffers: m.buffers});
      }
    }
    return info;
  }

  /** The build's info for the page (the part graph's JSON stays here). */
  function built(m, info) {
    const out = info.toJs({dict_converter: Object.fromEntries});
    info.destroy();
    delete out.splitGraph;
    return out;
  }

  /** splitPeer: the page found a peer (or none): build the part graph there. */
  async function attach(m) {
    const g = graphs.get(m.gid);
    const kept = stash.get(m.gid);
    stash.delete(m.gid);
    if (!g || !kept) return {peer: false};
    if (!kept.peerBuild && (!m.peer || !port)) return {peer: false};
    try {
      await (kept.peerBuild || request('build', {ctx: -g.ctx, gid: -m.gid, graph: kept.graph,
        constIds: kept.constIds, buffers: kept.buffers}, [...new Set(kept.buffers.map((b) => b.buffer))]));
      if (graphs.get(m.gid) === g) g.peer = true;
    } catch (e) {
      console.warn(`WebNN polyfill: the graph runs on one worker: the peer could not build it: ${e && e.message}`);
    }
    return {peer: g.peer};
  }

  /** dispatch of a split graph: the peer's part there, the rest here; the outputs' error state set either way. */
  async function dispatch(m) {
    try {
      await dispatchParts(m);
    } catch (e) {
      outputsDone(m.outputs, e && e.message ? e : {message: String(e)});
      throw e;
    }
    outputsDone(m.outputs, null);
  }

  async function dispatchParts(m) {
    const g = graphs.get(m.gid);
    const s = sg();
    let peerRun = null;
    if (g.peer && port) {
      const at = JSON.parse(unwrap(s.inputs_at(m.ctx, m.gid, m.inputs, m.outputs, 1)));
      const heap = pyodide()._module.HEAPU8;
      const inputs = at.map(([, address, n]) => heap.slice(address, address + n));
      peerRun = request('run', {ctx: -g.ctx, gid: -m.gid, names: at.map(([name]) => name), inputs},
        inputs.map((b) => b.buffer));
      peerRun.catch(() => {});
    }
    const t0 = performance.now();
    try {
      unwrap(s.run(m.ctx, m.gid, m.inputs, m.outputs, 0));
      last.local = performance.now() - t0;
    } catch (e) {
      if (peerRun) await peerRun.catch(() => {});
      throw e;
    }
    for (let index = 1; index < g.parts; index++) {
      if (index === 1 && peerRun) {
        let out = null;
        const t1 = performance.now();
        try {
          out = await peerRun;
          last.wait = performance.now() - t1;
        } catch (e) {
          console.warn(`WebNN polyfill: a part of a split dispatch runs here: ${e && e.message}`);
        }
        // the outputs may have been destroyed, or the graph, while this waited: then this fails as usual
        if (out) {
          const at = JSON.parse(unwrap(s.outputs_at(m.ctx, m.gid, m.outputs, 1)));
          if (at.every(([name, , n]) => out[name] && out[name].byteLength === n)) {
            const heap = pyodide()._module.HEAPU8;
            for (const [name, address] of at) heap.set(new Uint8Array(out[name]), address);
            counts.peer++;
            continue;
          }
        }
      }
      unwrap(s.run(m.ctx, m.gid, m.inputs, m.outputs, index));
      counts.here++;
    }
    return undefined;
  }

  function forget(gid) {
    const g = graphs.get(gid);
    stash.delete(gid);
    if (!g) return;
    graphs.delete(gid);
    unwrap(sg().drop(gid));
    notify('destroyGraph', {gid: -gid});
  }

  function forgetContext(ctx) {
    let any = false;
    for (const [gid, g] of [...graphs]) {
      if (g.ctx !== ctx) continue;
      graphs.delete(gid);
      stash.delete(gid);
      any = true;
    }
    if (!any) return;
    unwrap(sg().drop_context(ctx));
    notify('destroyContext', {ctx: -ctx});
  }

  return {
    on,
    has: (gid) => graphs.has(gid),
    glue: sg,
    build, built, attach, dispatch, forget, forgetContext, link, peerLost,
    stats: () => ({splitGraphs: graphs.size, splitPeerGraphs: [...graphs.values()].filter((g) => g.peer).length,
      splitServed: served.size, splitLast: {...last}, splitPartsOnPeer: counts.peer, splitPartsHere: counts.here}),
  };
}

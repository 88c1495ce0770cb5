// WebGPU interop in Chromium's shape: createContext(GPUDevice), createExportableTensor(descriptor, device),
// exportToGPU(tensor) and MLTensor.gpuDevice, with the MLTensor explainer's rental semantics: an exported tensor is
// rented to WebGPU, WebNN refuses work with it (TypeError) until WebGPU gives it back with GPUBuffer.destroy(), and
// the bytes WebGPU wrote flow back into the tensor.
// https://github.com/webmachinelearning/webnn/blob/main/mltensor-explainer.md
//
// The engine runs on the CPU in a worker, so it cannot share memory with the GPU: every export and every return
// copies the tensor's bytes (counted in webgpuStats(), documented in docs/compatibility.md):
//   export: the worker copies the tensor out of the WebAssembly heap (transferred to this thread, no copy), and
//           this thread copies it into the new GPUBuffer's mapped range: 2 copies.
//   return: a GPU copy into a MAP_READ staging buffer, a copy out of its mapped range, and the worker's copy into
//           the WebAssembly heap: 3 copies.

import {byteLengthOf} from './buffers.js';

const STORAGE = 0x80, COPY_SRC = 0x04, COPY_DST = 0x08, MAP_READ = 0x01;  // GPUBufferUsage, GPUMapMode.READ
const EXPORT_USAGE = STORAGE | COPY_SRC | COPY_DST;

const stats = {exports: 0, exportedBytes: 0, returns: 0, returnedBytes: 0, copies: 0, lostRentals: 0};

/** Counters of this global's WebGPU interop: exports, returns, their bytes, and the copies they made. */
export function webgpuStats() {
  return {...stats};
}

/** Whether `v` is a GPUDevice of this global: a platform object, as WebIDL's overload resolution asks (an object
 *  that only inherits from GPUDevice.prototype is not one, and createContext() reads it as MLContextOptions). */
export function isGPUDevice(v) {
  if (typeof GPUDevice !== 'function' || !(v instanceof GPUDevice)) return false;
  try {
    Object.getOwnPropertyDescriptor(GPUDevice.prototype, 'queue').get.call(v);  // the getter's brand check
    return true;
  } catch (_) {
    return false;
  }
}

/** The TypeError of a GPUDevice argument that is not one, saying what the browser lacks when it has no WebGPU. */
export function notAGPUDevice(where, position) {
  const why = typeof GPUDevice === 'function' ? ''
    : ' (this browser has no WebGPU: GPUDevice is not defined, so WebNN/WebGPU interop is not available)';
  return new TypeError(`${where}: parameter ${position} is not of type 'GPUDevice'${why}`);
}

// device -> {lost, rentals}: whether device.lost resolved, and the rentals to end when it does
const devices = new WeakMap();

function deviceEntry(device) {
  let entry = devices.get(device);
  if (!entry) {
    entry = {lost: false, rentals: new Set()};
    devices.set(device, entry);
    device.lost.then(() => {
      entry.lost = true;
      // WebGPU cannot give these back any more (the buffers died with the device): the tensors return to WebNN
      // with the bytes they had when they were exported
      for (const rental of entry.rentals) endRental(rental);
      stats.lostRentals += entry.rentals.size;
      entry.rentals.clear();
    });
  }
  return entry;
}

/** Whether the device was lost or destroyed (seen once its `lost` promise resolved). */
export function deviceLost(device) {
  return deviceEntry(device).lost;
}

function endRental(rental) {
  rental.returned = true;
  if (rental.tensor.rental === rental) rental.tensor.rental = null;
}

// ----------------------------------------------------------------------------------- the context's timeline gate

const RAW = Symbol('raw worker');

/** The worker client a context posts to, unwrapped (the runtime compares clients when a worker dies). */
export function rawWorker(worker) {
  return worker[RAW] || worker;
}

/**
 * A context's worker client whose messages can be held: while a destroyed GPUBuffer's bytes are on their way back
 * (a GPU copy, then mapAsync), work script queues on the context waits, so a dispatch or read issued after
 * GPUBuffer.destroy() sees WebGPU's writes.  Messages keep their order; only this context's are held.
 */
function gated(worker) {
  if (worker[RAW]) return worker;
  const held = [];
  let holds = 0;
  const defer = (send) => new Promise((resolve, reject) => held.push(() => send().then(resolve, reject)));
  const gate = {
    request: (type, payload, transfer) => (holds ? defer(() => worker.request(type, payload, transfer))
      : worker.request(type, payload, transfer)),
    post: (type, payload, transfer) => {
      if (!holds) { worker.post(type, payload, transfer); return; }
      held.push(() => { worker.post(type, payload, transfer); return Promise.resolve(); });
    },
    call: (type, payload, transfer, resolve, reject) => {
      if (!holds) { worker.call(type, payload, transfer, resolve, reject); return; }
      held.push(() => { worker.call(type, payload, transfer, resolve, reject); return Promise.resolve(); });
    },
    /** Hold this context's messages until `task` (which talks to the raw worker) settles. */
    hold: (task) => {
      holds++;
      return Promise.resolve().then(task).catch((e) => {
        if (typeof console !== 'undefined') console.warn('[webnn-polyfill] WebGPU return failed:', e && e.message);
      }).finally(() => {
        if (--holds) return;
        for (const send of held.splice(0)) send();
      });
    },
  };
  return new Proxy(worker, {
    get(target, prop) {
      if (prop === RAW) return target;
      if (prop in gate) return gate[prop];
      const v = Reflect.get(target, prop);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

// ----------------------------------------------------------------------------------------------------- the rental

/** exportToGPU's steps after the context checks: rent the tensor to WebGPU as a GPUBuffer holding its bytes. */
export async function exportTensor(c, t, where) {
  if (!t.gpuDevice) {
    throw new TypeError(`${where}: the tensor does not support WebGPU interop (only a tensor made by `
      + 'createExportableTensor() can be exported)');
  }
  if (t.destroyed) throw new DOMException(`${where}: the tensor has been destroyed`, 'InvalidStateError');
  if (t.rental && !t.rental.buffer) throw new TypeError(`${where}: the tensor is pending export to WebGPU`);
  if (t.rental) return t.rental.buffer;
  const rental = {tensor: t, buffer: null, returned: false};
  t.rental = rental;
  c.worker = gated(c.worker);
  const device = t.gpuDevice;
  const n = byteLengthOf(t);
  let bytes;
  try {
    bytes = await c.untilLost(c.worker.request('read', {ctx: c.id, tid: t.id, n}), where);
    if (t.destroyed) throw new DOMException(`${where}: the tensor has been destroyed`, 'InvalidStateError');
    if (deviceLost(device)) {
      throw new DOMException(`${where}: the GPUDevice was lost or destroyed`, 'InvalidStateError');
    }
  } catch (e) {
    endRental(rental);
    throw e;
  }
  // WebGPU maps and copies in multiples of 4 bytes: an odd-sized tensor (e.g. 3 x float16) gets up to 3 more
  const size = Math.max(4, Math.ceil(n / 4) * 4);
  const buffer = device.createBuffer({label: 'tensor', size, usage: EXPORT_USAGE, mappedAtCreation: true});
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(bytes, 0, n));
  buffer.unmap();
  stats.exports++;
  stats.exportedBytes += n;
  stats.copies += 2;
  rental.buffer = buffer;
  deviceEntry(device).rentals.add(rental);
  const realDestroy = buffer.destroy;
  // GPUBuffer.destroy() on this buffer gives the tensor back (GPUBuffer.prototype.destroy.call(buffer) bypasses it)
  Object.defineProperty(buffer, 'destroy', {
    value: {destroy() { giveBack(c, rental, device, size, n, () => realDestroy.call(buffer)); }}.destroy,
    configurable: true, writable: true, enumerable: false,
  });
  return buffer;
}

/** GPUBuffer.destroy() on an exported buffer: WebNN may use the tensor again, and WebGPU's bytes flow back. */
function giveBack(c, rental, device, size, n, destroy) {
  if (rental.returned) { destroy(); return; }
  endRental(rental);
  deviceEntry(device).rentals.delete(rental);
  const t = rental.tensor;
  const buffer = rental.buffer;
  if (t.destroyed || c.lost || deviceLost(device) || buffer.mapState !== 'unmapped') { destroy(); return; }
  const staging = device.createBuffer({label: 'tensor return', size, usage: MAP_READ | COPY_DST});
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  // WebGPU defers freeing a destroyed buffer until the submitted copy that reads it has run
  destroy();
  const raw = rawWorker(c.worker);
  c.worker.hold(async () => {
    try {
      await staging.mapAsync(MAP_READ);
      const bytes = staging.getMappedRange(0, size).slice(0, n);
      if (t.destroyed || c.lost) return;
      stats.returns++;
      stats.returnedBytes += n;
      stats.copies += 3;
      raw.post('write', {ctx: c.id, tid: t.id, data: new Uint8Array(bytes)}, [bytes]);
    } finally {
      staging.destroy();
    }
  });
}

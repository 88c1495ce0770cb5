// ML: navigator.ml.createContext().  https://www.w3.org/TR/webnn/#api-ml

import {makeContext} from './context.js';
import {acquireWorker} from '../runtime/pool.js';
import {toDictionary, toEnum} from './idl.js';
import {isStrict} from './compat.js';
import {INTERNAL, defineInterface, illegal, stateOf} from './internal.js';
import {isGPUDevice} from './webgpu.js';

const POWER_PREFERENCES = ['default', 'high-performance', 'low-power'];
// Earlier drafts had deviceType (and WPT still passes it); every device of the polyfill is the CPU, in a worker.
const DEVICE_TYPES = ['cpu', 'gpu', 'npu'];
const mlState = new WeakMap();

export class ML {
  constructor(token, runtime) {
    illegal(token);
    mlState.set(this, {runtime});
  }

  /** createContext(options) | createContext(gpuDevice): boots the runtime once per global.
   *  https://www.w3.org/TR/webnn/#api-ml-createcontext */
  async createContext(options) {
    const where = 'ML.createContext';
    const {runtime} = stateOf(mlState, this, where);
    if (isGPUDevice(options)) {
      // Graphs still run in the polyfill's engine (the CPU, in a worker); the context remembers the device, and
      // tensors reach it through createExportableTensor() / exportToGPU(), with copies (webgpu.js).
      // A lost or destroyed device is accepted, as Chromium 153 does (its createExportableTensor() refuses it).
      const opts = {powerPreference: 'default', accelerated: true, gpuDevice: options};
      return makeContext(runtime, await acquireWorker(runtime, opts), opts);
    }
    const o = toDictionary(options, `${where}: options`);
    const opts = {
      powerPreference: o.powerPreference === undefined ? 'default'
        : toEnum(o.powerPreference, `${where}: options.powerPreference`, POWER_PREFERENCES, 'MLPowerPreference'),
      accelerated: o.accelerated === undefined ? true : Boolean(o.accelerated),
    };
    // Chromium still validates the legacy deviceType; the draft no longer has it, so strict mode ignores it
    if (o.deviceType !== undefined && !isStrict()) {
      opts.deviceType = toEnum(o.deviceType, `${where}: options.deviceType`, DEVICE_TYPES, 'MLDeviceType');
    }
    // a worker of its own where one is free or may be started, so contexts run concurrently (runtime/pool.js)
    const worker = await acquireWorker(runtime, opts);
    return makeContext(runtime, worker, opts);
  }
}
defineInterface(ML, 'ML', {createContext: 0});

/** The one ML object of this global (navigator.ml / webnnPolyfill.ml). */
export function makeML(runtime) {
  return new ML(INTERNAL, runtime);
}

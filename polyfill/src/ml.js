// ML: navigator.ml.createContext().  https://www.w3.org/TR/webnn/#api-ml

import {makeContext} from './context.js';
import {toDictionary, toEnum} from './idl.js';
import {INTERNAL, illegal} from './internal.js';

const POWER_PREFERENCES = ['default', 'high-performance', 'low-power'];
// Legacy drafts had deviceType; every device of the polyfill is the CPU, through the worker.
const DEVICE_TYPES = ['cpu', 'gpu', 'npu'];

export class ML {
  constructor(token, runtime) {
    illegal(token);
    Object.defineProperty(this, '_runtime', {value: runtime, enumerable: false});
  }

  /** createContext(options): boots the runtime once per page.  https://www.w3.org/TR/webnn/#api-ml-createcontext */
  async createContext(options) {
    if (typeof GPUDevice !== 'undefined' && options instanceof GPUDevice) {
      throw new DOMException('createContext: WebGPU interop (a GPUDevice) is not supported by the polyfill, '
        + 'which runs graphs on the CPU in a worker', 'NotSupportedError');
    }
    const o = toDictionary(options, 'ML.createContext: options');
    const opts = {
      powerPreference: o.powerPreference === undefined ? 'default'
        : toEnum(o.powerPreference, 'ML.createContext: powerPreference', POWER_PREFERENCES, 'MLPowerPreference'),
      accelerated: o.accelerated === undefined ? true : Boolean(o.accelerated),
    };
    if (o.deviceType !== undefined) {
      opts.deviceType = toEnum(o.deviceType, 'ML.createContext: deviceType', DEVICE_TYPES, 'MLDeviceType');
    }
    const worker = await this._runtime.boot();
    return makeContext(this._runtime, worker, opts);
  }
}
Object.defineProperty(ML.prototype, Symbol.toStringTag, {value: 'ML'});

export function makeML(runtime) {
  return new ML(INTERNAL, runtime);
}

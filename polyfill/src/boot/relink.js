// Restoring a Pyodide memory snapshot taken after extension modules were imported (NumPy's `.so`), which Pyodide
// 0.27 cannot do itself: its snapshot is the WebAssembly heap, and an extension module is also a WebAssembly
// instance of its own, with its functions in the shared function table, that a restore does not bring back.
//
// Each module `import` linked went through Emscripten's dlopen, whose handle (a `struct dso` in the heap) records
// where the module's data went (mem_allocated, mem_addr) and where its functions went in the table (table_addr),
// and keeps the file's bytes (file_data).  Emscripten's loader (`loadWebAssemblyModule`) reuses those addresses
// for a handle whose memory is already allocated (its path for a second thread).  So right after Pyodide copies
// the heap back (`API.restoreSnapshot`), and before anything runs in the interpreter, each handle is loaded
// again, in the order the imports loaded them (`Module.dlopenInternal`): the instances come back at the same
// addresses and table slots, and the table grows exactly as it did (the functions the modules' GOT entries named
// get the same slots).  Instantiating writes the modules' initial data and runs their constructors over the
// restored state, so the whole heap is copied back once more.  The table's length before and after is checked
// against the one recorded when the snapshot was taken: any difference (another Pyodide build, a function added
// to the table in between) throws before anything runs, and the caller boots another way.
//
// record() runs where the snapshot is taken (scripts/make_snapshot.mjs, under Node); hook() and relinkFor() where
// it is restored (snapshot.js).  hook() also mends, after every restore, a pointer a snapshot made under Node
// lacks (restoreCountArgs).

const relinks = new WeakMap();  // snapshot bytes given to loadPyodide -> their record
let hooked = false;
let last = null;
// the compiles relinkFor started, which the module factory awaits once its own module is instantiated
let compiles = null;

/** The last relink: {ms: how long it took (the modules loaded again, the heap copied back), precompiled: how many
 * modules came compiled ahead, at: {factory, created, restore, restored, and the factory's steps: markSteps}:
 * performance.now() when pyodide.asm.js's module factory was called, when its module was ready (instantiated,
 * exports linked), when the heap's restore began and when it ended}, or null. */
export function lastRelink() {
  return last;
}

/** What a restore needs ({handles, tableBefore, tableAfter}) of `py`, whose table had `tableBefore` entries
 * before its imports linked extension modules; throws when a module was not loaded by dlopen (no handle). */
export function record(py, tableBefore) {
  const M = py._module;
  const handleOf = new Map(Object.entries(M.LDSO.loadedLibsByHandle).map(([h, dso]) => [dso, Number(h)]));
  const handles = [];
  // loadedLibsByName keeps insertion order: the order the modules were loaded in
  for (const [name, dso] of Object.entries(M.LDSO.loadedLibsByName)) {
    if (name === '__main__') continue;
    const handle = handleOf.get(dso);
    if (!handle || !M.HEAP8[handle + 8]) throw new Error(`${name} was not loaded by dlopen: it cannot be relinked`);
    handles.push(handle);
  }
  return {handles, tableBefore, tableAfter: M.wasmTable.length};
}

/** The function-table length of `py` now (record()'s tableBefore, read before the imports). */
export function tableLength(py) {
  return py._module.wasmTable.length;
}

// The module factory's steps, as performance.now() in the object returned (lastRelink's `at`): `instantiate`
// (the module's instantiation asked for), `instantiated` (the instance handed back: its exports are linked
// next, then Emscripten's preRun), `preRun` (Pyodide's file-system set-up begins) and `initialized` (the
// runtime's initializers ran).  Measured in a warm Chromium worker: 40-60 ms from the factory's call
// to `instantiate`, 40 to `instantiated`, 100-130 to `preRun` (export linking), 20-100 to `initialized`.
function markSteps(moduleArg) {
  const at = {};
  const instantiate = moduleArg.instantiateWasm;
  if (typeof instantiate === 'function') {
    moduleArg.instantiateWasm = function instantiateWasm(imports, done) {
      at.instantiate = performance.now();
      return instantiate.call(this, imports, (...args) => {
        at.instantiated = performance.now();
        return done(...args);
      });
    };
  }
  // preRun functions run last to first: this one first
  moduleArg.preRun = [...(moduleArg.preRun || []), () => { at.preRun = performance.now(); }];
  const initialized = moduleArg.onRuntimeInitialized;
  moduleArg.onRuntimeInitialized = function onRuntimeInitialized(...args) {
    at.initialized = performance.now();
    return typeof initialized === 'function' ? initialized.apply(this, args) : undefined;
  };
  return at;
}

/**
 * Wraps pyodide.asm.js's module factory (global once its script ran) so that the restore of `bytes` handed to
 * relinkFor() relinks; false when the factory is not there (its script not imported yet).
 */
export function hook() {
  if (hooked) return true;
  const create = globalThis._createPyodideModule;
  if (typeof create !== 'function') return false;
  globalThis._createPyodideModule = async function createPyodideModule(moduleArg, ...rest) {
    const factory = performance.now();
    const steps = moduleArg ? markSteps(moduleArg) : {};
    const M = await create.call(this, moduleArg, ...rest);
    const created = performance.now();
    // loadPyodide restores the heap right after this resolves: the extension modules' compiles, started as the
    // snapshot was read, ran beside this instantiation (SpiderMonkey compiles a module up front: 100-400 ms)
    if (compiles) {
      const waiting = compiles;
      compiles = null;
      await waiting;
    }
    const api = moduleArg && moduleArg.API;
    if (api && typeof api.restoreSnapshot === 'function') {
      const restore = api.restoreSnapshot;
      api.restoreSnapshot = function restoreSnapshot(bytes) {
        const begun = performance.now();
        const out = restore.call(this, bytes);
        const rec = relinks.get(bytes);
        if (rec) {
          const t0 = performance.now();
          const precompiled = rec.compiled.filter(Boolean).length;
          relink(M, bytes, rec);
          last = {ms: Math.round(performance.now() - t0), precompiled,
            at: {factory, ...steps, created, restore: begun, restored: performance.now()}};
        }
        restoreCountArgs(M);
        return out;
      };
    }
    return M;
  };
  hooked = true;
  return true;
}

/** `bytes` (a snapshot given to loadPyodide's _loadSnapshot, after hook()) relinks with `rec` when restored;
 * resolves to `bytes` at once, the modules compiling from the snapshot's copy of their files (WebAssembly.compile,
 * off this thread: SpiderMonkey compiles all of a module up front, 180-470 ms of Firefox's worker for NumPy's
 * three when the relink did it) while pyodide.asm.wasm is instantiated: the hooked module factory awaits them
 * before the restore (awaiting them before the factory is called would cost 300-400 ms of Firefox's warm
 * start).  `after`: a promise the compiles wait for (pyodide.asm.wasm's own early compile: begun
 * beside it, SpiderMonkey finished NumPy's three 250-400 ms later than begun after it, once the snapshot came from
 * the Origin Private File System at 100-150 ms instead of 270 ms).  One that did not compile is compiled by the
 * relink itself, synchronously; `precompile: false`: all of them (make_snapshot.mjs's self-test runs both ways). */
export async function relinkFor(bytes, rec, {precompile = true, after = null} = {}) {
  const compiled = rec.handles.map(() => null);
  const compileAll = () => {
    const compiling = [];
    try {
      if (!precompile) throw new Error('compiled at the relink');
      const heap = heapOf(bytes);
      const words = new Uint32Array(heap.buffer, heap.byteOffset, heap.length >> 2);
      rec.handles.forEach((handle, i) => {
        // struct dso: file_data at +28, file_data_size at +32 (the bytes dlopen read the module from)
        const data = words[(handle + 28) >> 2];
        const size = words[(handle + 32) >> 2];
        if (!data || !size || data + size > heap.length) return;
        compiling.push(WebAssembly.compile(heap.subarray(data, data + size)).then((m) => { compiled[i] = m; }, () => {}));
      });
    } catch (e) {
      // compiled synchronously at the relink instead
    }
    return Promise.all(compiling);
  };
  relinks.set(bytes, {...rec, compiled});
  compiles = after ? Promise.resolve(after).catch(() => {}).then(compileAll) : compileAll();
  return bytes;
}

// CPython calls C functions through a trampoline that asks a small WebAssembly function how many arguments they
// take (`_PyRuntime.emscripten_count_args_function`); Pyodide's preRun makes it where WebAssembly GC's type
// reflection exists (Chromium, Firefox) and writes its table slot into the heap, which the restore then
// overwrites with the snapshot's: 0 for one made under Node (which has none), and every such call then goes
// through JavaScript instead.  Written back here, as a fresh start has it.
function restoreCountArgs(M) {
  const ptr = M._PyEM_CountArgsPtr;
  const runtime = M.__PyRuntime;
  const offsetAt = M.__PyEM_EMSCRIPTEN_COUNT_ARGS_OFFSET;
  if (!ptr || typeof runtime !== 'number' || typeof offsetAt !== 'number' || !M.HEAP32) return;
  M.HEAP32[(runtime + M.HEAP32[offsetAt >> 2]) >> 2] = ptr;
}

/** Where a browser's Pyodide (Module `M`) has the count-args function (see restoreCountArgs) and this one has none
 * (Node 20, Safari): an empty slot in its place, so that the extension modules linked next take the same table
 * slots wherever the snapshot is made or restored. */
export function reserveCountArgsSlot(M) {
  if (!M._PyEM_CountArgsPtr) M.wasmTable.grow(1);
}

// Pyodide's snapshot layout: u32 magic, u32 header size, ..., then the heap
function heapOf(bytes) {
  return bytes.subarray(new Uint32Array(bytes.buffer, bytes.byteOffset, 2)[1]);
}

// What dlopenInternal(handle) does (pyodide.asm.js: the file name and flags from the handle, then
// loadDynamicLibrary), with the module already compiled instead of its bytes read from the handle.
function loadCompiled(M, handle, module) {
  const name = M.PATH.normalize(M.UTF8ToString(handle + 36));
  const flags = M.HEAP32[(handle + 4) >> 2];
  const global = Boolean(flags & 256);  // RTLD_GLOBAL
  const nodelete = Boolean(flags & 4096);  // RTLD_NODELETE
  const localScope = global ? null : {};
  if (M.LDSO.loadedLibsByName[name]) throw new Error(`${name} is loaded already`);
  const dso = M.newDSO(name, handle, 'loading');
  dso.refcount = nodelete ? Infinity : 1;
  dso.global = global;
  const exports = M.loadWebAssemblyModule(module, {global, nodelete, loadAsync: false}, name, localScope, handle);
  if (global) M.mergeLibSymbols(exports, name);
  else Object.assign(localScope, exports);
  dso.exports = exports;
}

function relink(M, bytes, {handles, tableBefore, tableAfter, compiled}) {
  if (!M.wasmTable || typeof M.dlopenInternal !== 'function' || !M.LDSO || !M.PATH || !M.newDSO
    || !M.loadWebAssemblyModule || !M.mergeLibSymbols || !M.UTF8ToString) {
    throw new Error('this Pyodide does not expose its dynamic linker');
  }
  reserveCountArgsSlot(M);
  if (M.wasmTable.length !== tableBefore) {
    throw new Error(`the function table has ${M.wasmTable.length} entries, the snapshot's had ${tableBefore}`);
  }
  handles.forEach((handle, i) => {
    if (compiled[i]) {
      loadCompiled(M, handle, compiled[i]);
    } else if (!M.dlopenInternal(handle, {loadAsync: false})) {  // 0 on failure (dlopen's error is set)
      throw new Error(`an extension module did not load again (handle ${handle})`);
    }
  });
  if (M.wasmTable.length !== tableAfter) {
    throw new Error(`the function table grew to ${M.wasmTable.length} entries, not ${tableAfter}`);
  }
  M.HEAP8.set(heapOf(bytes));  // HEAP8: the current view (constructors may have grown the memory)
}

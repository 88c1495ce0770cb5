// The standard library's bytecode, kept in the site-packages cache entry (sitecache.js) next to NumPy's and the
// core's .pyc.
//
// Pyodide's python_stdlib.zip holds sources only, and zipimport neither reads a __pycache__ nor writes one: every
// module of the standard library imported after Pyodide's own start (the memory snapshot has those) was compiled
// from source on every visit.  NumPy and the core import 13 of them (dataclasses, pickle, platform, json, ctypes,
// numbers, ...): compiling them took 156-208 ms in Pyodide under Node (docs/performance.md).  zipimport compiles a
// source with its module-level function `_compile_source(pathname, source)`; hookStdlib wraps it: a path whose
// source has the CRC-32 recorded with its code gets that code object back, anything else is compiled from its source
// (and, on a visit that stores the cache entry, recorded).  saveStdlib writes what was recorded as one marshal
// file into site-packages, before the entry is stored.  The same for the methods `dataclasses` writes as source
// text and compiles with exec for every class it decorates (__init__, __repr__, __eq__, __hash__, __setattr__...:
// about 100 compiles for the core's 24 dataclasses): the hook gives that module an exec that looks the text up
// first.  The modules stay zip imports in every other respect (__file__, __path__, __loader__ and what a
// package's later imports find).  The file is read once, where the hook is installed; one that does not load is
// ignored.  It is as trustworthy as the entry it came in (its sha256 is checked, its key holds the Pyodide
// version, so the bytecode is always this CPython's).

export const STDLIB_CODE_FILE = '_webnn_stdlib_code.marshal';  // in site-packages

const HOOK = `def _webnn_stdlib_hook(path, record):
    import builtins, marshal, sys, zipimport, zlib
    try:
        with open(path, "rb") as f:
            cached = marshal.load(f)
        if not isinstance(cached, dict):
            cached = {}
    except Exception:  # none yet (a first visit), or a file that does not load: compile as usual
        cached = {}
    state = {"record": record, "compiled": {}, "used": 0}
    original = getattr(zipimport._compile_source, "_webnn_original", zipimport._compile_source)

    def _compile_source(pathname, source):
        crc = zlib.crc32(source)
        hit = cached.get(pathname)
        if type(hit) is tuple and len(hit) == 2 and hit[0] == crc:
            state["used"] += 1
            return hit[1]
        code = original(pathname, source)
        if state["record"]:
            state["compiled"][pathname] = (crc, code)
        return code

    def _exec(source, globals=None, locals=None, /):
        # dataclasses' own exec: each generated method's text compiled once, then kept under that text
        if type(source) is str:
            key = ("exec", source)
            code = cached.get(key)
            if type(code) is type(_exec.__code__):
                state["used"] += 1
            else:
                code = compile(source, "<string>", "exec")
                if state["record"]:
                    state["compiled"][key] = code
            source = code
        if globals is None:
            globals = sys._getframe(1).f_globals
        return builtins.exec(source, globals, locals)

    _compile_source._webnn_original = original
    _compile_source._webnn_state = state
    zipimport._compile_source = _compile_source
    import dataclasses  # from here on through the hook above
    dataclasses.exec = _exec
    return len(cached), state


def _webnn_stdlib_save(path, state):
    import marshal
    compiled, state["record"], state["compiled"] = state["compiled"], False, {}
    with open(path, "wb") as f:
        marshal.dump(compiled, f)
    return len(compiled)
`;

const recorded = new WeakMap();  // py -> {ns, state}: the hook's namespace and its recording state (PyProxy)

/** Install the hook in py: code from site-packages' STDLIB_CODE_FILE where its source matches; with `record`,
 *  what is compiled is kept for save().  Returns how many code objects the file had. */
export function hookStdlib(py, site, record) {
  const ns = py.runPython('{}');
  try {
    py.runPython(HOOK, {globals: ns});
    const hook = ns.get('_webnn_stdlib_hook');
    const result = hook(`${site}/${STDLIB_CODE_FILE}`, record);
    hook.destroy();
    try {
      if (record) recorded.set(py, {ns, state: result.get(1)});
      return result.get(0);
    } finally {
      result.destroy();
    }
  } finally {
    if (!record) ns.destroy();
  }
}

/** How many compiles the hook has answered from the stored file so far (modules and dataclasses' methods); 0
 *  without a hook.  Shown in webnnPolyfill.bootTimings.stdlibCode. */
export function stdlibUsed(py) {
  return py.runPython(`import zipimport
getattr(zipimport._compile_source, "_webnn_state", {}).get("used", 0)`);
}

/** Write what the hook recorded since hookStdlib(py, site, true) into site-packages; the count written. */
export function saveStdlib(py, site) {
  const r = recorded.get(py);
  if (!r) return 0;
  recorded.delete(py);
  const save = r.ns.get('_webnn_stdlib_save');
  try {
    return save(`${site}/${STDLIB_CODE_FILE}`, r.state);
  } finally {
    save.destroy();
    r.state.destroy();
    r.ns.destroy();
  }
}

// scripts/profile_recurrent.py inside Pyodide under Node (the worker's engine without a page): where a run of the
// lstm_gru tagger's two WebNN graphs goes, the wasm build of the C kernels.  Not part of `make bench`.
//   node scripts/profile_recurrent.mjs [RUNS]
import fs from 'fs';
import path from 'path';

import {copyTree, nodePyodide, root} from './pyodide_node.mjs';

const py = await nodePyodide({numpy: true, stdout: console.log, stderr: console.error});
copyTree(py, path.join(root, 'py_core'), '/home/pyodide/py_core', /\.(py|json)$|\.wasm32\.wasm$/);
py.globals.set('RUNS', process.argv[2] || '200');
// the plain build (the one Node 20 compiles without a flag): use_native(True) reopens the library, and a second
// try of the relaxed file that Node refused finds no symbols
py.runPython('import os, sys; os.environ["PYODIDE_WEBNN_RELAXED"] = "0"; sys.argv = ["profile_recurrent.py", RUNS]');
await py.runPythonAsync(fs.readFileSync(path.join(root, 'scripts', 'profile_recurrent.py'), 'utf8'));

// The polyfill's module is bundled into the app; its assets (Pyodide, NumPy, the core, the worker) are not
// modules: copy the package's assets/ folder next to the build, where src/webnn-config.js points baseURL.
import {cpSync} from 'node:fs';
import {createRequire} from 'node:module';
import {dirname, join} from 'node:path';
import {defineConfig} from 'vite';

const packageDir = dirname(createRequire(import.meta.url).resolve('pyodide-webnn/package.json'));

export default defineConfig({
  plugins: [{
    name: 'copy-webnn-assets',
    apply: 'build',
    writeBundle(options) {
      cpSync(join(packageDir, 'assets'), join(options.dir, 'webnn', 'assets'), {recursive: true});
    },
  }],
});

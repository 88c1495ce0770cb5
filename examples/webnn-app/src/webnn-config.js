// Imported before the package: where its assets/ folder is served (relative to this page, as URLs in a page
// are). The bundler moves the package's module into this app's own chunk, so the polyfill cannot find its
// assets next to itself; vite.config.js copies them to webnn/ in the build output.
globalThis.WEBNN_POLYFILL_CONFIG = {baseURL: 'webnn/'};

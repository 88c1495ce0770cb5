// Imported first by the ES module entry, so that config.js knows the module's own URL before index.js runs.
import {setScriptURL} from './config.js';

setScriptURL(import.meta.url);

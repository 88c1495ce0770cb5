// The engine's message loop: requests are handled one at a time, in the order they arrive, which is what orders
// writes, dispatches and reads on each tensor (the MLTensor timeline). Each handler's value or error becomes a
// reply; the replies to the messages that arrived together (one batch from runtime/rpc.js) leave as one message.

/**
 * A message loop over `handlers` (type -> handler(msg), returning a value, {value, transfer}, or a promise of
 * either). `post(message, transfer)` sends to the client, `close()` ends the engine after a fatal error.
 * `ready()`: whether requests other than 'init' may run. `gate(msg)`: a promise the request must wait for, or
 * null. `extra()`: messages to send with the next flush ({messages, transfer}), or null. `urgent(batch)`: handles
 * at once what must not wait in the queue and returns the rest.
 * Returns `receive(message)`, which queues one message or a batch (an array).
 */
export function createMessageLoop({handlers, post, close, ready = () => true, gate = () => null,
  extra = () => null, urgent = (batch) => batch}) {
  const queue = [];
  const BATCH_END = {};  // in `queue` after each batch's last message
  let pumping = false;
  let outbox = [];
  let outTransfer = [];

  function reply(message, transfer = []) {
    outbox.push(message);
    if (transfer.length) outTransfer.push(...transfer);
  }

  function flush() {
    const more = extra();
    if (more) {
      outbox.push(...more.messages);
      outTransfer.push(...more.transfer);
    }
    if (!outbox.length) return;
    const batch = outbox.length === 1 ? outbox[0] : outbox;
    const transfer = outTransfer;
    outbox = [];
    outTransfer = [];
    post(batch, transfer);
  }

  function done(msg, value) {
    let result = value;
    let transfer = [];
    try {
      if (result && typeof result === 'object' && 'transfer' in result) {
        transfer = result.transfer;
        result = result.value;
      }
      if (result && typeof result === 'object' && typeof result.destroy === 'function') {
        const proxy = result;
        result = proxy.toJs({dict_converter: Object.fromEntries});
        proxy.destroy();
      }
    } catch (e) {
      failed(msg, e);
      return;
    }
    if (!msg.quiet) reply({id: msg.id, result: result === undefined ? null : result}, transfer);
  }

  // msg's error reply (a quiet message's names its type, as the page expects no answer to it otherwise)
  function replyError(msg, name, message) {
    reply({id: msg.id, error: {name, message}, ...(msg.quiet ? {quiet: msg.type} : {})});
  }

  function failed(msg, e) {
    if (e && typeof e === 'object' && 'name' in e && 'message' in e && !(e instanceof Error)) {
      replyError(msg, e.name, e.message);
      return;
    }
    // Anything else is a failure of the runtime itself (e.g. a WebAssembly trap): report it and stop, so
    // the page marks this worker's contexts lost and starts a fresh worker for new ones.
    // A Python exception that escaped the glue is an engine bug: its traceback goes to this worker's console,
    // the page gets a message without Python text (py_core.errors.internal_error does the same in Python).
    const python = e && typeof e === 'object' && e.constructor && e.constructor.name === 'PythonError';
    if (python) console.error(`pyodide-webnn: ${msg.type}: ${e.message}`);
    // An allocation that failed outside the glue's own handler (e.g. the reply of a call made at the memory
    // limit): Python raised it cleanly and its state is whole, so the call fails as py_core.errors words it and
    // the engine goes on
    if (python && /\bMemoryError\b/.test(e.message)) {
      replyError(msg, 'OperationError', `${msg.type}: out of memory in the WebNN worker`);
      return;
    }
    const detail = python ? "internal error in the WebNN engine (details in the worker's console)"
      : (e && e.message ? e.message : String(e));
    const message = `${msg.type} failed: ${detail}`;
    replyError(msg, msg.type === 'init' ? 'NotSupportedError' : 'OperationError', message);
    if (msg.type !== 'init') {
      reply({type: 'fatal', message});
      flush();
      close();
    }
  }

  // One request: its reply (or error) queued for the next flush.  Returns a promise only when the handler is
  // asynchronous (init, build, loadModel); the timeline's calls are handled synchronously, with no await.
  function handle(msg) {
    const waitFor = gate(msg);
    if (waitFor) return waitFor.then(() => handle(msg), (e) => failed(msg, e));
    const handler = handlers[msg.type];
    let result;
    try {
      if (!handler) throw {name: 'UnknownError', message: `unknown worker message ${msg.type}`};
      if (msg.type !== 'init' && !ready()) throw {name: 'InvalidStateError', message: 'the worker is not initialized'};
      result = handler(msg);
    } catch (e) {
      failed(msg, e);
      return null;
    }
    if (result && typeof result.then === 'function') {
      return result.then((value) => done(msg, value), (e) => failed(msg, e));
    }
    done(msg, result);
    return null;
  }

  // Handles what is queued, in order, synchronously until a handler has to wait; replies leave after the last
  // message of each batch (or when the queue runs dry).
  function pump() {
    pumping = true;
    while (queue.length) {
      const msg = queue.shift();
      if (msg === BATCH_END) continue;  // an empty batch
      const last = queue.length === 0 || queue[0] === BATCH_END;
      if (queue[0] === BATCH_END) queue.shift();
      const waiting = handle(msg);
      if (waiting) {
        waiting.then(() => {
          if (last) flush();
          pump();
        });
        return;
      }
      if (last) flush();
    }
    pumping = false;
  }

  return (message) => {
    // an array is a batch: its replies go back together, after its last message
    const batch = urgent(Array.isArray(message) ? message : [message]);
    if (!batch.length) return;
    queue.push(...batch);
    queue.push(BATCH_END);
    if (!pumping) pump();
  };
}

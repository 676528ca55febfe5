// Injected before the page loads (page.addInitScript): a stand-in for the Tauri shell. Commands
// answer from `window.__mock` (set by the test); calls are recorded in `window.__calls`;
// `window.__emit(event, payload)` delivers an event as the shell would.
(() => {
  const callbacks = new Map();
  const listeners = new Map();
  let nextId = 1;
  window.__calls = [];
  window.__mock = window.__mock || {};
  window.__TAURI_INTERNALS__ = {
    metadata: { currentWindow: { label: 'main' }, currentWebview: { windowLabel: 'main', label: 'main' } },
    transformCallback(callback, once) {
      const id = nextId++;
      callbacks.set(id, (data) => {
        if (once) callbacks.delete(id);
        return callback && callback(data);
      });
      return id;
    },
    unregisterCallback(id) {
      callbacks.delete(id);
    },
    async invoke(cmd, args) {
      if (cmd === 'plugin:event|listen') {
        if (!listeners.has(args.event)) listeners.set(args.event, []);
        listeners.get(args.event).push(args.handler);
        return args.handler;
      }
      if (cmd === 'plugin:event|unlisten') return null;
      window.__calls.push([cmd, args ?? {}]);
      const handler = window.__mock[cmd];
      if (!handler) throw { code: 'unmocked', message: `command ${cmd} is not mocked` };
      return handler(args ?? {});
    },
    convertFileSrc(path) {
      return path;
    },
  };
  window.__TAURI_EVENT_PLUGIN_INTERNALS__ = {
    unregisterListener(_event, id) {
      callbacks.delete(id);
    },
  };
  window.__emit = (event, payload) => {
    for (const id of listeners.get(event) || []) {
      const cb = callbacks.get(id);
      if (cb) cb({ event, id, payload });
    }
  };
})();

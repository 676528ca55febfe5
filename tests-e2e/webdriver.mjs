// A minimal W3C WebDriver client over fetch (Node 20): just what the end-to-end test needs.

export class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  static async create(base, capabilities) {
    const value = await request(base, 'POST', '/session', { capabilities });
    return new Session(base, value.sessionId);
  }

  cmd(method, path, body) {
    return request(this.base, method, `/session/${this.id}${path}`, body);
  }

  /** Runs `script` (a function body; `arguments` holds `args`) in the page and returns its value. */
  exec(script, ...args) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }

  /** Like `exec`, for a script that calls `arguments[arguments.length - 1](value)` when done. */
  execAsync(script, ...args) {
    return this.cmd('POST', '/execute/async', { script, args });
  }

  async find(css) {
    const value = await this.cmd('POST', '/element', { using: 'css selector', value: css });
    return Object.values(value)[0];
  }

  click(element) {
    return this.cmd('POST', `/element/${element}/click`, {});
  }

  /**
   * Finds `css` and clicks it, finding it again whenever the page is not there yet: the element
   * missing, re-rendered between the find and the click (`stale element reference`), or covered or
   * not yet interactable. Any other error is thrown at once. Bounded like `until`.
   */
  async clickFresh(css, { tries = 150, everyMs = 200 } = {}) {
    let last;
    for (let i = 0; i < tries; i++) {
      try {
        await this.click(await this.find(css));
        return;
      } catch (e) {
        if (!RETRY_CLICK.has(e.code)) throw e;
        last = e;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
    throw new Error(`timed out clicking ${css} (last: ${last?.message})`);
  }

  async screenshotPng() {
    return Buffer.from(await this.cmd('GET', '/screenshot'), 'base64');
  }

  close() {
    return this.cmd('DELETE', '', undefined);
  }
}

/** WebDriver errors after which finding the element again and clicking it again is right. */
const RETRY_CLICK = new Set([
  'no such element',
  'stale element reference',
  'element not interactable',
  'element click intercepted',
]);

async function request(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok || (json.value && json.value.error)) {
    const err = new Error(`webdriver ${method} ${path}: ${res.status} ${JSON.stringify(json.value ?? json)}`);
    err.code = json.value?.error;
    throw err;
  }
  return json.value;
}

/** Polls `probe` until it returns a truthy value; bounded by `tries` × `everyMs`. */
export async function until(what, probe, { tries = 150, everyMs = 200 } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

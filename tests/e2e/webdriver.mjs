// A minimal W3C WebDriver client over fetch, enough to drive the app through WebKitWebDriver.
// Waits are on DOM state, never on fixed sleeps.

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

export class WebDriverError extends Error {}

export class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  static async create(base, binary, args = []) {
    const body = {
      capabilities: {
        alwaysMatch: {
          browserName: 'wry',
          'webkitgtk:browserOptions': { binary, args },
        },
      },
    };
    // A new session right after one closed has met a connection the driver had just dropped
    // ("fetch failed" before any answer): such a request never reached the driver, so it is sent
    // again, a few times, once the driver says it is ready.
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await request(base, 'POST', '/session', body);
        return new Session(base, value.sessionId);
      } catch (e) {
        if (e instanceof WebDriverError || attempt === 4) throw e;
        await waitReady(base);
      }
    }
  }

  cmd(method, path, body) {
    return request(this.base, method, `/session/${this.id}${path}`, body);
  }

  async close() {
    await this.cmd('DELETE', '');
    await waitReady(this.base);
  }

  async find(css) {
    const value = await this.cmd('POST', '/element', { using: 'css selector', value: css });
    return value[ELEMENT];
  }

  async findAll(css) {
    const value = await this.cmd('POST', '/elements', { using: 'css selector', value: css });
    return value.map((v) => v[ELEMENT]);
  }

  async click(css) {
    const el = await this.waitFor(css);
    // Centre it first: scrolled to the top edge, the sticky window header would cover it.
    await this.cmd('POST', '/execute/sync', {
      script: 'arguments[0].scrollIntoView({ block: "center", inline: "nearest" });',
      args: [{ [ELEMENT]: el }],
    });
    await this.cmd('POST', `/element/${el}/click`, {});
  }

  async type(css, text) {
    const el = await this.waitFor(css);
    await this.cmd('POST', `/element/${el}/clear`, {});
    await this.cmd('POST', `/element/${el}/value`, { text });
  }

  async text(css) {
    const el = await this.waitFor(css);
    return this.cmd('GET', `/element/${el}/text`);
  }

  async texts(css) {
    const els = await this.findAll(css);
    return Promise.all(els.map((el) => this.cmd('GET', `/element/${el}/text`)));
  }

  async attr(css, name) {
    const el = await this.waitFor(css);
    return this.cmd('GET', `/element/${el}/attribute/${name}`);
  }

  async script(source, args = []) {
    return this.cmd('POST', '/execute/sync', { script: source, args });
  }

  /**
   * A PNG of the window, taken after the page has painted twice (screenshots can lag the DOM).
   *
   * Without GL compositing (the app's choice on a machine without a GPU render node), WebKitGTK
   * takes a WebDriver screenshot at the page's next painted frame, and a page where nothing
   * changes paints none: the request would wait forever. So while the screenshot is taken, one
   * pixel at the top left changes its alpha by 1/255 on every frame, and is removed after.
   */
  async screenshotPng() {
    await this.cmd('POST', '/execute/async', {
      script:
        'const done = arguments[arguments.length - 1];' +
        'requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 250)));',
      args: [],
    });
    await this.cmd('POST', '/execute/sync', {
      script:
        'const d = document.createElement("div");' +
        'd.style.cssText = "position:fixed;left:0;top:0;width:1px;height:1px;pointer-events:none;z-index:2147483647";' +
        'document.body.appendChild(d);' +
        'window.__kvgateShotPixel = d;' +
        'const until = performance.now() + 10000; let k = 0;' +
        'const tick = () => {' +
        '  if (window.__kvgateShotPixel !== d || performance.now() > until) { d.remove(); return; }' +
        '  d.style.background = k++ % 2 ? "rgba(0,0,0,0)" : "rgba(0,0,0,0.004)";' +
        '  requestAnimationFrame(tick);' +
        '};' +
        'requestAnimationFrame(tick);',
      args: [],
    });
    try {
      return Buffer.from(await this.cmd('GET', '/screenshot'), 'base64');
    } finally {
      await this.cmd('POST', '/execute/sync', {
        script: 'window.__kvgateShotPixel?.remove(); window.__kvgateShotPixel = undefined;',
        args: [],
      }).catch(() => {});
    }
  }

  /** Waits until `css` matches an element (and `predicate(session)` holds, when given). */
  async waitFor(css, { timeoutMs = 20000, predicate } = {}) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
      try {
        const el = await this.find(css);
        if (!predicate || (await predicate(el))) return el;
        last = new Error(`predicate not met for ${css}`);
      } catch (e) {
        last = e;
      }
      if (Date.now() > deadline) {
        throw new WebDriverError(`timed out after ${timeoutMs} ms waiting for ${css}: ${last?.message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Waits until the texts of all elements matching `css` satisfy `check(texts)`. */
  async waitForTexts(css, check, { timeoutMs = 20000 } = {}) {
    const deadline = Date.now() + timeoutMs;
    let texts = [];
    for (;;) {
      try {
        texts = await this.texts(css);
        if (check(texts)) return texts;
      } catch {
        // the page may be re-rendering; try again
      }
      if (Date.now() > deadline) {
        throw new WebDriverError(`timed out waiting on ${css}; last texts: ${JSON.stringify(texts)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Waits (up to 10 s) until the driver answers /status as ready for a new session. */
async function waitReady(base) {
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      const res = await fetch(`${base}/status`);
      const json = await res.json().catch(() => ({}));
      if (res.ok && json.value?.ready !== false) return;
    } catch {
      /* the driver is between connections */
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function request(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok || (json.value && json.value.error)) {
    const v = json.value || {};
    throw new WebDriverError(`${method} ${path}: ${res.status} ${v.error || ''} ${v.message || ''}`.trim());
  }
  return json.value;
}

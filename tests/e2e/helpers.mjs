// Helpers shared by the journeys: assertions and waits on DOM state (never fixed sleeps).

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/** Polls `read()` until `check(value)` holds; the message names what was awaited and the last value. */
export async function waitUntil(read, check, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await read();
      if (check(last)) return last;
    } catch (e) {
      last = `error: ${e.message}`;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The live `value` property (WebDriver's attribute endpoint returns the attribute only). */
export function valueOf(s, css) {
  return s.script('const el = document.querySelector(arguments[0]); return el ? el.value : null;', [css]);
}

/** Picks an option of a select by clicking it, as a user does; falls back to a change event. */
export async function choose(s, css, value) {
  await s.click(`${css} option[value="${value}"]`).catch(() => {});
  if ((await valueOf(s, css)) !== value) {
    await s.script(
      'const el = document.querySelector(arguments[0]);' +
        'el.value = arguments[1];' +
        'el.dispatchEvent(new Event("change", { bubbles: true }));',
      [css, value],
    );
  }
  await waitUntil(() => valueOf(s, css), (v) => v === value, `${css} = ${value}`);
}

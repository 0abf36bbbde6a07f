// Helpers shared by the journeys: assertions and waits on DOM state (never fixed sleeps).

import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

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

/**
 * Through the CLI: a study with the CPU cells B0 and Q8 frozen and the demo's recorded runs
 * imported; with `lock`, the demo policy is locked before the runs arrive.
 */
export function recordedStudy(ctx, db, study, { lock = false } = {}) {
  ctx.kvgate(['--db', db, 'study', 'create', study]);
  for (const m of ['smollm2-135m-cpu-b0.json', 'smollm2-135m-cpu-q8.json']) {
    ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', study, resolve(repositoryRoot, 'fixtures/manifests', m)]);
  }
  if (lock) {
    ctx.kvgate(['--db', db, 'policy', 'lock', '--study', study, '--file', resolve(repositoryRoot, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
  }
  for (const [cell, file] of [['B0', 'b0-f16'], ['Q8', 'q8-q8_0']]) {
    ctx.kvgate(['--db', db, 'import', '--study', study, '--cell', cell, '--format', 'jsonl',
      resolve(repositoryRoot, 'fixtures/demo/runs', `${file}.kvgate-run.jsonl`)]);
  }
}

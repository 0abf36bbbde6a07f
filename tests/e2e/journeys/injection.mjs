// Model output is untrusted text. A recorded llama.cpp run whose answers were replaced by markup
// (`<img src=x onerror=…>`) is imported; the Review and Runs screens show that markup as text:
// no element is created from it and no handler runs.

import { assert, waitUntil } from '../helpers.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Untrusted output';
const PAYLOAD = '<img src=x onerror="window.__kvgatePwned=1"><b data-injected="1">bold</b>';

/** The recorded Q8 run with every measured answer replaced by the payload. */
function injectedRun(dir) {
  const lines = readFileSync(resolve(root, 'fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl'), 'utf8').trim().split('\n');
  const out = lines.map((l) => {
    const d = JSON.parse(l);
    if (d.request && !d.request.warmup) d.request.record.output_text = PAYLOAD;
    return JSON.stringify(d);
  });
  const path = join(dir, 'q8-injected.kvgate-run.jsonl');
  writeFileSync(path, out.join('\n') + '\n');
  return path;
}

function injected(s) {
  return s.script(
    'return { img: document.querySelectorAll("img[src=x]").length, b: document.querySelectorAll("[data-injected]").length, pwned: window.__kvgatePwned ?? null };',
  );
}

export const journeys = [
  {
    name: 'injection: markup in a model answer is shown as text on the Review and Runs screens, never run',
    async run(ctx) {
      const db = ctx.db('injection');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      for (const m of ['smollm2-135m-cpu-b0.json', 'smollm2-135m-cpu-q8.json']) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, 'fixtures/manifests', m)]);
      }
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', STUDY, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      ctx.kvgate(['--db', db, 'import', '--study', STUDY, '--cell', 'B0', '--format', 'jsonl', resolve(root, 'fixtures/demo/runs/b0-f16.kvgate-run.jsonl')]);
      ctx.kvgate(['--db', db, 'import', '--study', STUDY, '--cell', 'Q8', '--format', 'jsonl', injectedRun(ctx.work)]);

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);

      // Review: both sides of a pair, one of them the payload, shown as text.
      await s.click('[data-testid="nav-review"]');
      await s.waitFor('[data-testid="review-filter-agreeing"]');
      await s.script(
        'const el = document.querySelector(\'[data-testid="review-filter-agreeing"]\'); el.value = "2"; el.dispatchEvent(new Event("change", { bubbles: true }));',
      );
      const outputs = await waitUntil(() => s.texts('[data-testid="review-side-output"]'), (t) => t.length === 2, 'both sides shown', 30000);
      assert(outputs.some((t) => t.includes(PAYLOAD)), `the payload shown verbatim: ${JSON.stringify(outputs)}`);
      const r = await injected(s);
      assert(r.img === 0 && r.b === 0 && r.pwned === null, `no element made from the answer, nothing ran: ${JSON.stringify(r)}`);
      await ctx.screenshot(s, 'injection-review');

      // Runs: the request's output in the run detail.
      await s.click('[data-testid="nav-runs"]');
      await s.waitFor('[data-testid="run-row"]', { timeoutMs: 30000 });
      const q8 = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="run-row"]\')].map((r) => r.dataset.runId).pop();',
      );
      await s.click(`[data-testid="run-row"][data-run-id="${q8}"] [data-testid="run-row-open"]`);
      await s.waitFor('[data-testid="run-request-output"]', { timeoutMs: 30000 });
      await s.script('document.querySelectorAll(\'[data-testid="run-requests"] details\').forEach((d) => (d.open = true));');
      const shown = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="run-request-output"]\')].map((e) => e.textContent);',
      );
      assert(shown.filter((t) => t === PAYLOAD).length >= 1, `run detail shows the payload as text: ${shown.slice(0, 3)}`);
      const after = await injected(s);
      assert(after.img === 0 && after.b === 0 && after.pwned === null, `still nothing made or run: ${JSON.stringify(after)}`);
      await ctx.screenshot(s, 'injection-runs');

      // A script that sends the window elsewhere is refused: it never shows a remote page.
      const before = await s.script('return location.href;');
      await s.script('location.href = "https://example.invalid/pwned"; return null;');
      await new Promise((r) => setTimeout(r, 1000));
      const now = await s.script('return { href: location.href, runs: !!document.querySelector(\'[data-testid="run-row"]\') };');
      assert(now.href === before && now.runs, `the window stayed on the app: ${JSON.stringify({ before, now })}`);
      await s.close();
    },
  },
];

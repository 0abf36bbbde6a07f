// Journey of the architect on the recorded llama.cpp runs (f16 KV = B0, q8_0 KV = Q8): export the
// architecture-review packet from the Packet screen, verify it with the CLI, read its report.html
// in the app's webview, change one byte of one file, and see both the CLI and the app name it.

import { assert, waitUntil, recordedStudy } from '../helpers.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Recorded q8_0 packet';

function setValue(s, css, value) {
  return s.script(
    'const el = document.querySelector(arguments[0]);' +
      'el.value = arguments[1];' +
      'el.dispatchEvent(new Event("input", { bubbles: true }));',
    [css, value],
  );
}

export const journeys = [
  {
    name: 'packet: export from the app, verify with the CLI, read report.html in the webview, a changed byte is named',
    async run(ctx) {
      const db = ctx.db('packet');
      recordedStudy(ctx, db, STUDY, { lock: true });
      ctx.kvgate(['--db', db, 'recovery', 'record', '--study', STUDY, '--file', resolve(root, 'fixtures/recovery/demo-cpu.json'), '--by', 'owner']);
      ctx.kvgate(['--db', db, 'signoff', '--study', STUDY, '--check', 'compatibility', '--by', 'architect']);
      const out = join(ctx.work, 'review-packet');

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
      await s.click('[data-testid="nav-packet"]');
      await s.waitFor('[data-testid="packet-export-form"]');
      await setValue(s, '[data-testid="packet-out"]', out);
      await s.click('[data-testid="packet-export"]');
      await s.waitFor('[data-testid="packet-result"]', { timeoutMs: 60000 });
      const sha = (await s.text('[data-testid="packet-index-sha"]')).trim();
      assert(/^[0-9a-f]{64}$/.test(sha), `index sha256 shown: ${sha}`);
      assert((await s.findAll('[data-testid="packet-warning"]')).length === 0, 'nothing left out of the packet');
      const files = await s.script('return [...document.querySelectorAll(\'[data-testid="packet-file"]\')].map((r) => r.dataset.path);');
      for (const f of ['report.html', 'trace/arrivals.csv', 'results/paired.parquet', 'charts/paired-delta.svg']) {
        assert(files.includes(f), `${f} listed: ${files}`);
      }
      // The window counts what index.json lists, as `kvgate packet verify` does.
      assert(!files.includes('index.json'), `index.json is not listed in itself: ${files}`);
      const totals = (await s.text('[data-testid="packet-totals"]')).trim();
      assert(totals.startsWith(`${files.length} files listed in index.json, `), `totals: ${totals}`);
      await ctx.screenshot(s, 'packet-exported');

      // The CLI verifies what the app wrote, and its index is the one shown.
      const ok = ctx.kvgateStatus(['--db', db, 'packet', 'verify', out]);
      assert(ok.code === 0 && ok.out.startsWith(`verified: ${files.length} files listed in index.json match`), `verify: ${ok.code} ${ok.out}`);
      const index = readFileSync(join(out, 'index.json'));
      const { createHash } = await import('node:crypto');
      assert(createHash('sha256').update(index).digest('hex') === sha, 'the shown sha256 is that of index.json');

      // report.html rendered in the webview: the frame holds the report, stand-in labelled.
      await s.click('[data-testid="packet-verify"]');
      await s.waitFor('[data-testid="packet-verification"][data-verified="true"]', { timeoutMs: 30000 });
      const frame = await s.find('[data-testid="packet-report"]');
      await s.cmd('POST', '/frame', { id: { 'element-6066-11e4-a52e-4f735466cecf': frame } });
      try {
        const h1 = await waitUntil(() => s.script('return document.querySelector("h1")?.textContent ?? "";'), (t) => t.length > 0, 'the report rendered');
        assert(h1 === `Architecture review: ${STUDY}`, `report title: ${h1}`);
        const origin = await s.script('return document.querySelector("#origin")?.textContent ?? "";');
        assert(origin.includes('an 8-bit stand-in — not FP8, not a GPU measurement'), `stand-in labelled: ${origin}`);
        // Every chart file of the packet inline: Δ, goodput, latency and each cell's engine load.
        const charts = await s.script('return document.querySelectorAll("svg").length;');
        const drawn = files.filter((f) => f.startsWith('charts/') && f.endsWith('.svg'));
        assert(drawn.length >= 3 && charts === drawn.length, `the packet's ${drawn.length} charts inline: ${charts} (${drawn})`);
      } finally {
        await s.cmd('POST', '/frame/parent', {});
      }
      await s.script('document.querySelector(\'[data-testid="packet-report"]\').scrollIntoView();');
      await ctx.screenshot(s, 'packet-report');

      // One byte of one file changed: the CLI and the app name it.
      const target = join(out, 'results/paired.csv');
      const bytes = readFileSync(target);
      bytes[20] = bytes[20] === 0x41 ? 0x42 : 0x41;
      writeFileSync(target, bytes);
      const bad = ctx.kvgateStatus(['--db', db, 'packet', 'verify', out]);
      assert(bad.code === 1 && bad.out.includes('modified: results/paired.csv: expected sha256 '), `verify after the edit: ${bad.code} ${bad.out}`);
      await s.click('[data-testid="packet-verify"]');
      await s.waitFor('[data-testid="packet-verification"][data-verified="false"]', { timeoutMs: 30000 });
      const modified = await s.texts('[data-testid="packet-modified"]');
      assert(modified.length === 1 && modified[0].includes('results/paired.csv'), `the app names the file: ${modified}`);
      await s.waitFor('[data-testid="packet-report-unverified"]');
      await ctx.screenshot(s, 'packet-modified');
      await waitUntil(() => s.findAll('[data-testid="packet-report"]'), (f) => f.length === 1, 'the report still readable, marked untrusted');
      await s.close();
    },
  },
];

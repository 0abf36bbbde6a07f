// Journeys of the Manifests screen: author B0, derive and edit C1, freeze both, compare them;
// and a draft that survives a restart.

import { assert, waitUntil, valueOf, choose } from '../helpers.mjs';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const B0_TEXT = readFileSync(resolve(root, 'fixtures/manifests/llama31-8b-h100-b0.json'), 'utf8');

const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';
const field = (path) => `[data-testid="field-${path}"]`;
const row = (cell) => `[data-testid="manifest-row"][data-cell="${cell}"]`;

function isDisabled(s, css) {
  return s.script('const el = document.querySelector(arguments[0]); return el ? el.matches(":disabled") : null;', [
    css,
  ]);
}

/** Pastes text into a textarea as one input event: typing kilobytes key by key over WebDriver is slow. */
async function paste(s, css, text) {
  await s.waitFor(css);
  await s.script(
    'const el = document.querySelector(arguments[0]);' +
      'el.value = arguments[1];' +
      'el.dispatchEvent(new Event("input", { bubbles: true }));',
    [css, text],
  );
}

function editorDoc(s) {
  return valueOf(s, '[data-testid="manifest-json"]').then((text) => JSON.parse(text));
}

function problems(s) {
  return s.script(
    'return [...document.querySelectorAll(\'[data-testid="manifest-problem"]\')].map((p) => p.textContent.trim());',
  );
}

/** Waits until the backend reports no problem for the saved draft and the freeze button is enabled. */
async function waitFreezable(s, cell) {
  await waitUntil(
    async () => ({
      valid: (await s.findAll('[data-testid="manifest-valid"]')).length,
      problems: await problems(s),
      disabled: await isDisabled(s, '[data-testid="manifest-freeze"]'),
    }),
    (state) => state.valid === 1 && state.problems.length === 0 && state.disabled === false,
    `${cell} to have no problems and be freezable`,
  );
}

async function freeze(s, cell) {
  await waitFreezable(s, cell);
  await s.click('[data-testid="manifest-freeze"]');
  await s.waitFor('[data-testid="freeze-dialog"]');
  const digest = await s.text('[data-testid="freeze-digest"]');
  assert(/^[0-9a-f]{64}$/.test(digest), `freeze dialog shows ${JSON.stringify(digest)}, expected 64 hex`);
  await s.click('[data-testid="freeze-confirm"]');
  await s.waitForTexts(`${row(cell)} [data-testid="manifest-row-status"]`, (t) => t[0] === 'frozen');
  const short = await s.text(`${row(cell)} [data-testid="manifest-row-digest"]`);
  assert(short === digest.slice(0, 12), `row digest ${short}, confirmed ${digest}`);
  const banner = await s.text('[data-testid="frozen-banner"]');
  assert(banner.includes(digest), `frozen banner says: ${banner}`);
  return digest;
}

async function openStudy(s, name) {
  // An empty database shows the form at once; otherwise it opens from "New study…".
  await s.waitFor('[data-testid="studies-welcome"], [data-testid="studies-table"]');
  if ((await s.findAll('[data-testid="studies-table"]')).length > 0) await s.click('[data-testid="study-new"]');
  await s.type('[data-testid="study-name"]', name);
  await s.click('[data-testid="study-create"]');
  await s.waitForTexts(rowNames, (t) => t.includes(name));
  await s.click('[data-testid="study-open"]');
  await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === name);
  await s.click('[data-testid="nav-manifests"]');
  await s.waitFor('[data-testid="screen-manifests"]');
}

export const journeys = [
  {
    name: 'author B0 in the form, derive C1, change kv_dtype to fp8, freeze both, see the diff',
    async run(ctx) {
      const s = await ctx.launch(['--db', ctx.db('manifests')]);
      await openStudy(s, 'FP8 KV manifests');
      await s.waitFor('[data-testid="manifests-empty"]');

      // B0: paste the example, then change a field through the form.
      await s.click('[data-testid="manifest-new-b0"]');
      await waitUntil(() => valueOf(s, field('cell')), (v) => v === 'B0', 'the new B0 skeleton in the form');
      await paste(s, '[data-testid="manifest-json"]', B0_TEXT);
      await waitUntil(() => valueOf(s, field('kv_dtype')), (v) => v === 'auto', 'field-kv_dtype to show auto');
      await s.type(field('label'), 'B0 authored in the KV Gate form');
      await waitUntil(
        () => editorDoc(s),
        (doc) => doc.label === 'B0 authored in the KV Gate form' && doc.kv_dtype === 'auto',
        'the form edit in the JSON text',
      );
      await s.click('[data-testid="manifest-save"]');
      await s.waitForTexts(`${row('B0')} [data-testid="manifest-row-status"]`, (t) => t[0] === 'draft');
      await freeze(s, 'B0');
      // Frozen: a compact read-only view of what is set, no form left to type into.
      await s.waitFor('[data-testid="manifest-frozen-view"]');
      assert((await s.findAll(field('kv_dtype'))).length === 0, 'a frozen manifest shows no form field');
      const frozenKv = await s.text('[data-testid="manifest-frozen-view"] [data-field="kv_dtype"]');
      assert(frozenKv.trim() === 'auto', `the frozen view shows kv_dtype: ${frozenKv}`);
      const readOnly = await s.script('return document.querySelector(\'[data-testid="manifest-json"]\').readOnly;');
      assert(readOnly === true, 'a frozen manifest keeps its JSON read-only');

      // C1: derived from B0, then the candidate's changes through the form.
      await s.click('[data-testid="manifest-derive"]');
      await s.waitFor('[data-testid="derive-dialog"]');
      await s.type('[data-testid="derive-cell"]', 'C1');
      await s.click('[data-testid="derive-confirm"]');
      await s.waitForTexts(`${row('C1')} [data-testid="manifest-row-status"]`, (t) => t[0] === 'draft');
      await s.waitForTexts('#manifest-editor-title', (t) => t[0] === 'Cell C1');
      await waitUntil(() => valueOf(s, field('kv_dtype')), (v) => v === 'auto', 'C1 to start from B0 (kv_dtype auto)');
      await s.type(field('kv_dtype'), 'fp8');
      await s.type(field('candidate_id'), 'llama31-8b-h100-c1');
      await s.type(field('label'), 'C1: FP8 KV cache, default scales');
      await choose(s, field('scale_granularity'), 'per_tensor');
      await choose(s, field('scale_source'), 'default');
      await s.type(field('effective_args.kv_cache_dtype'), 'fp8');
      await waitUntil(
        () => editorDoc(s),
        (doc) =>
          doc.kv_dtype === 'fp8' &&
          doc.candidate_id === 'llama31-8b-h100-c1' &&
          doc.scale_granularity === 'per_tensor' &&
          doc.scale_source === 'default' &&
          doc.effective_args.kv_cache_dtype === 'fp8',
        'the C1 edits in the JSON text',
      );
      await s.click('[data-testid="manifest-save"]');
      await waitUntil(
        () => s.findAll('[data-testid="manifest-row-unsaved"]'),
        (els) => els.length === 0,
        'C1 to be saved',
      );
      await freeze(s, 'C1');

      // The comparison: kv_dtype is the intervention, nothing held constant differs.
      await choose(s, '[data-testid="diff-reference"]', 'B0');
      await choose(s, '[data-testid="diff-candidate"]', 'C1');
      await s.click('[data-testid="diff-run"]');
      await s.waitFor('[data-testid="diff-row"]');
      const rows = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="diff-row"]\')]' +
          '.map((r) => ({ path: r.dataset.path, severity: r.dataset.severity, kind: r.dataset.kind }));',
      );
      const kv = rows.find((r) => r.path === 'kv_dtype');
      assert(kv, `no diff row for kv_dtype: ${JSON.stringify(rows)}`);
      assert(kv.kind === 'intervention', `kv_dtype is ${kv.kind}`);
      const red = rows.filter((r) => r.severity === 'red');
      assert(red.length === 0, `red rows: ${JSON.stringify(red)}`);
      const redCount = await s.text('[data-testid="diff-red-count"]');
      assert(redCount === '0', `red count says ${redCount}`);
      await ctx.screenshot(s, 'manifests-diff-b0-c1');
    },
  },
  {
    name: 'a manifest draft is stored: after a restart it is still there',
    async run(ctx) {
      const db = ctx.db('manifest-draft');
      let s = await ctx.launch(['--db', db]);
      await openStudy(s, 'Drafts survive');
      await s.click('[data-testid="manifest-new-b0"]');
      const draft = { ...JSON.parse(B0_TEXT), label: 'kept across restart', kv_block_size: 32 };
      await paste(s, '[data-testid="manifest-json"]', JSON.stringify(draft, null, 2));
      await waitUntil(() => valueOf(s, field('kv_block_size')), (v) => v === '32', 'field-kv_block_size to show 32');
      // Ctrl+S saves from anywhere in the editor.
      const label = await s.waitFor(field('label'));
      await s.cmd('POST', `/element/${label}/value`, { text: '\uE009s\uE000' });
      await s.waitForTexts(`${row('B0')} [data-testid="manifest-row-status"]`, (t) => t[0] === 'draft');
      // kv_block_size 32 disagrees with effective_args.block_size 16: the backend names it.
      await waitUntil(
        () => s.script('return [...document.querySelectorAll(\'[data-testid="manifest-problem"]\')].map((p) => p.dataset.path);'),
        (paths) => paths.includes('effective_args.block_size'),
        'the block_size problem',
      );
      await s.close();

      s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === 'Drafts survive');
      await s.click('[data-testid="nav-manifests"]');
      await s.waitForTexts(`${row('B0')} [data-testid="manifest-row-status"]`, (t) => t[0] === 'draft');
      const problemCount = await s.text(`${row('B0')} [data-testid="manifest-row-problems"]`);
      assert(Number(problemCount) >= 1, `problems column says ${problemCount}`);
      await waitUntil(() => valueOf(s, field('label')), (v) => v.startsWith('kept across restart'), 'the saved label');
      await waitUntil(() => valueOf(s, field('kv_block_size')), (v) => v === '32', 'the saved kv_block_size');
    },
  },
];

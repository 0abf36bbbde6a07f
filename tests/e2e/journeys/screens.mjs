// Journeys of the screens as a newcomer meets them: an empty database offers the demo and the
// first steps; the locked policy reads as a summary; every screen fits 1280×800 in the states a
// user sees (rules in ../layout.mjs); lists follow the database when the CLI writes to it, F5
// reads a screen again, and each screen opens at its top.

import { assert, valueOf, waitUntil } from '../helpers.mjs';
import { layoutProblems, openDetails } from '../layout.mjs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';
const DEMO = 'Demo: q8_0 KV cache on llama.cpp (recorded on CPU)';
const tasks = ['studies', 'manifests', 'policy', 'fixtures', 'runs', 'results', 'review', 'signoff', 'packet'];

function setValue(s, css, value) {
  return s.script(
    'const el = document.querySelector(arguments[0]);' +
      'el.value = arguments[1];' +
      'el.dispatchEvent(new Event("input", { bubbles: true }));',
    [css, value],
  );
}

/** The layout of the window now, screenshot taken (at the top, or at `show`); problems collected under `state`. */
async function check(ctx, s, state, found, show = null) {
  await openDetails(s);
  await s.script(
    'const el = arguments[0] && document.querySelector(`[data-testid="${arguments[0]}"]`);' +
      'if (el) el.scrollIntoView({ block: "start" }); else document.getElementById("main").scrollTop = 0; return true;',
    [show],
  );
  const { problems, scrolling } = await layoutProblems(s);
  for (const p of problems) found.push(`${state}: ${p}`);
  if (scrolling.length > 0) console.log(`     ${state}: scrolls inside on purpose: ${scrolling.join('; ')}`);
  await ctx.screenshot(s, `screen-${state}`);
}

async function go(s, task) {
  await s.click(`[data-testid="nav-${task}"]`);
  await s.waitFor(`[data-testid="screen-${task}"]`);
}

/** A study of the recorded Qwen2.5-Coder runs with three real disagreements, by the CLI. */
function disagreementsStudy(ctx, db, study) {
  ctx.kvgate(['--db', db, 'study', 'create', study]);
  for (const m of ['qwen25-coder-05b-cpu-b0.json', 'qwen25-coder-05b-cpu-q8.json']) {
    ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', study, resolve(root, 'fixtures/manifests', m)]);
  }
  ctx.kvgate(['--db', db, 'policy', 'lock', '--study', study, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
  for (const [cell, file] of [['B0', 'qwen-b0-f16'], ['Q8', 'qwen-q8-q8_0']]) {
    ctx.kvgate(['--db', db, 'import', '--study', study, '--cell', cell, '--format', 'jsonl',
      resolve(root, 'fixtures/disagreements/runs', `${file}.kvgate-run.jsonl`)]);
  }
}

export const journeys = [
  {
    name: 'first steps: an empty database offers the demo and the first steps, each a link; the demo opens in it',
    async run(ctx) {
      const db = ctx.db('first-steps');
      const s = await ctx.launch(['--db', db]);
      await s.waitFor('[data-testid="studies-welcome"]');
      const links = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="first-steps"] [data-testid="first-step-link"]\')].map((a) => [a.textContent.trim(), a.getAttribute("href")]);',
      );
      assert(
        JSON.stringify(links) ===
          JSON.stringify([
            ['Author B0 and a candidate', '#/manifests'],
            ['Lock the policy', '#/policy'],
            ['Run or import', '#/runs'],
            ['Review', '#/review'],
            ['Sign', '#/signoff'],
            ['Export', '#/packet'],
          ]),
        `first steps: ${JSON.stringify(links)}`,
      );
      await ctx.screenshot(s, 'studies-empty-database');
      // Each step is a link to its screen.
      await s.click('[data-testid="first-steps"] [data-testid="first-step"][data-step="lock_policy"] a');
      await s.waitFor('[data-testid="screen-policy"]');
      await s.waitFor('[data-testid="policy-no-study"]');
      await go(s, 'studies');

      await s.click('[data-testid="open-demo"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === DEMO, { timeoutMs: 60000 });
      // The demo and, beside it, the long set.
      await s.waitForTexts(rowNames, (t) => t.length === 2 && t[0] === DEMO && t[1].startsWith('Demo: long context'));
      const badges = await s.texts('[data-testid="study-row"] [data-testid="provenance-badge"]');
      assert(badges.length === 2 && badges.every((b) => b === 'recorded demo'), `the demos are labelled: ${badges}`);
      // Seeded into this database file, not the default one.
      const listed = JSON.parse(ctx.kvgate(['--db', db, 'study', 'list', '--json']));
      assert(listed.length === 2 && listed.every((l) => l.provenance === 'recorded_demo'), `the file holds the demos: ${JSON.stringify(listed)}`);
      // Its next step and its steps, each with where it stands.
      const next = await s.waitFor('[data-testid="next-step-link"]', { timeoutMs: 30000 });
      assert(next, 'a next step');
      const step = await s.attr('[data-testid="next-step-link"]', 'data-step');
      const progress = JSON.parse(ctx.kvgate(['--db', db, 'study', 'progress', DEMO, '--json']));
      assert(step === progress.next, `the window's next step ${step} is the backend's ${progress.next}`);
      const states = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="study-steps"] [data-testid="first-step"]\')].map((li) => li.dataset.state);',
      );
      assert(states.slice(0, 3).every((x) => x === 'done'), `manifests, policy and runs done for the demo: ${states}`);
      await ctx.screenshot(s, 'studies-demo-opened');
      const href = await s.script('return document.querySelector(\'[data-testid="next-step-link"]\').getAttribute("href");');
      await s.click('[data-testid="next-step-link"]');
      await s.waitFor(`[data-testid="screen-${href.replace('#/', '')}"]`);
    },
  },
  {
    name: 'policy: the locked policy reads as a summary; a change is edited and locked as a new version',
    async run(ctx) {
      const db = ctx.db('policy-summary');
      ctx.kvgate(['--db', db, 'study', 'demo']);
      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === DEMO);
      await go(s, 'policy');
      await s.waitFor('[data-testid="policy-summary"][data-version="1"]');
      const live = await s.script(
        'return { inputs: document.querySelectorAll(\'[data-testid="policy-summary"] input, [data-testid="policy-summary"] select, [data-testid="policy-summary"] textarea\').length,' +
          ' json: !!document.querySelector(\'[data-testid="policy-json"]\'),' +
          ' mayBeLocked: document.getElementById("main").textContent.includes("may be locked") };',
      );
      assert(live.inputs === 0 && !live.json && !live.mayBeLocked, `a read-only summary, not a live form: ${JSON.stringify(live)}`);
      const classes = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="policy-summary-class"]\')].map((r) => [...r.children].map((c) => c.textContent.trim()));',
      );
      assert(
        JSON.stringify(classes) ===
          JSON.stringify([
            ['short', '799 tokens', 'every route', '30.0 s', '250 ms', '1 min 00 s', '1.0%', '95.0%'],
            ['medium', '1,299 tokens', 'every route', '1 min 00 s', '250 ms', '1 min 30 s', 'not declared', 'not declared'],
            ['long', '2,047 tokens', 'every route', '2 min 00 s', '250 ms', '3 min 00 s', 'not declared', 'not declared'],
          ]),
        `classes and SLOs: ${JSON.stringify(classes)}`,
      );
      const segments = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="policy-summary-segment"]\')].map((r) => [...r.children].map((c) => c.textContent.trim()));',
      );
      assert(
        JSON.stringify(segments[0]) === JSON.stringify(['de', 'language de', '10.0%', '−5.0 pp', 'protected']) &&
          JSON.stringify(segments[3]) === JSON.stringify(['absent-asset refusals', 'answer kind absent', 'none', '−10.0 pp', 'reported']),
        `floors and margins: ${JSON.stringify(segments)}`,
      );
      for (const [id, want] of [['interval', '3 min 00 s'], ['drain', '1 min 00 s'], ['alpha', '0.05'], ['envelope', 'every class at least 10.0% good'], ['cost', '0.1']]) {
        const got = (await s.text(`[data-testid="policy-summary-${id}"]`)).trim();
        assert(got === want, `${id}: ${got}, expected ${want}`);
      }
      await ctx.screenshot(s, 'policy-summary');

      await s.click('[data-testid="policy-edit-new-version"]');
      await s.waitFor('[data-testid="policy-json"]');
      const heading = await s.text('#policy-editor-title');
      assert(heading.includes('Edit as version 2'), `the editor names the new version: ${heading}`);
      const text = await valueOf(s, '[data-testid="policy-json"]');
      await setValue(s, '[data-testid="policy-json"]', text.replace('"alpha": 0.05', '"alpha": 0.025'));
      await s.type('[data-testid="policy-locked-by"]', 'service owner');
      await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="policy-lock-open"]\').disabled;'),
        (d) => d === false,
        'the lock button enabled',
      );
      await s.click('[data-testid="policy-lock-open"]');
      await s.click('[data-testid="lock-policy-confirm"]');
      await s.waitFor('[data-testid="policy-summary"][data-version="2"]');
      const alpha = (await s.text('[data-testid="policy-summary-alpha"]')).trim();
      assert(alpha === '0.025', `the summary shows what was locked: α ${alpha}`);
      const shown = (await s.text('[data-testid="policy-just-locked-sha"]')).trim();
      const stored = JSON.parse(ctx.kvgate(['--db', db, 'policy', 'show', '--study', DEMO, '--json']));
      assert(stored.current.version === 2 && stored.current.sha256 === shown, `version 2 stored with the sha shown: ${shown}`);
      await ctx.screenshot(s, 'policy-summary-v2');
    },
  },
  {
    name: 'screens fit 1280×800: every screen, in the states a user sees, has nothing wider than the window',
    async run(ctx) {
      const found = [];
      // An empty database: the welcome, and every screen without a study.
      let s = await ctx.launch(['--db', ctx.db('fit-empty')]);
      await s.waitFor('[data-testid="studies-welcome"]');
      const size = await s.script('return [window.innerWidth, window.innerHeight];');
      assert(size[0] === 1280, `the window is 1280 px wide: ${size}`);
      for (const task of tasks) {
        await go(s, task);
        await check(ctx, s, `empty-${task}`, found);
      }
      await s.close();

      // The recorded demo, each screen with what it shows.
      const db = ctx.db('fit-demo');
      ctx.kvgate(['--db', db, 'study', 'demo']);
      s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === DEMO);
      await s.waitFor('[data-testid="study-steps"]', { timeoutMs: 30000 });
      await check(ctx, s, 'studies', found);

      await go(s, 'manifests');
      await s.waitFor('[data-testid="manifest-frozen-view"]');
      await check(ctx, s, 'manifests-frozen', found);
      await s.click('[data-testid="manifest-row"][data-cell="Q8"] [data-testid="manifest-row-compare"]');
      await s.waitFor('[data-testid="diff-result"]');
      await check(ctx, s, 'manifests-compare', found, 'manifest-diff');

      await go(s, 'policy');
      await s.waitFor('[data-testid="policy-summary"]');
      await check(ctx, s, 'policy', found);
      await s.click('[data-testid="policy-edit-new-version"]');
      await s.waitFor('[data-testid="policy-form"]');
      await check(ctx, s, 'policy-editing', found);
      await s.click('[data-testid="policy-edit-cancel"]');

      await go(s, 'fixtures');
      await s.type('[data-testid="fixtures-open-dir"]', resolve(root, 'fixtures/demo/corpus'));
      await s.click('[data-testid="fixtures-open"]');
      await s.waitFor('[data-testid="stratum-grid"]', { timeoutMs: 60000 });
      await check(ctx, s, 'fixtures', found);

      await go(s, 'runs');
      await s.click('[data-testid="run-row-open"]');
      await s.waitFor('[data-testid="run-detail"]', { timeoutMs: 30000 });
      await check(ctx, s, 'runs', found, 'run-detail');

      await go(s, 'results');
      await s.waitFor('[data-testid="cell-card"]', { timeoutMs: 60000 });
      await check(ctx, s, 'results', found);
      // The recorded sweep's envelope against offered load, and the short class's contracts.
      await s.waitFor('[data-testid="chart-envelope"]');
      const figures = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="chart-envelope-choice"] option\')].map((o) => o.textContent);',
      );
      assert(
        JSON.stringify(figures) === JSON.stringify(['useful goodput', 'good share', 'TTFT p90', 'end-to-end p90', 'cost per good response']),
        `envelope figures: ${JSON.stringify(figures)}`,
      );
      await check(ctx, s, 'results-envelope', found, 'chart-envelope');
      const contracts = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="contract-row"]\')].map((r) => r.dataset.kind + " " + r.dataset.passes);',
      );
      assert(
        JSON.stringify(contracts) ===
          JSON.stringify(['max_error_rate true', 'min_completion_rate true', 'max_error_rate true', 'min_completion_rate true']),
        `contracts of B0 and Q8: ${JSON.stringify(contracts)}`,
      );
      await check(ctx, s, 'results-contracts', found, 'cell-contracts');

      await go(s, 'review');
      await s.waitFor('[data-testid="review-count-disagreements"]', { timeoutMs: 30000 });
      await check(ctx, s, 'review-demo', found);

      await go(s, 'signoff');
      await s.waitFor('[data-testid="signoff-check"]', { timeoutMs: 60000 });
      await check(ctx, s, 'signoff', found);

      await go(s, 'packet');
      await setValue(s, '[data-testid="packet-out"]', join(ctx.work, 'fit-packet'));
      await s.click('[data-testid="packet-export"]');
      await s.waitFor('[data-testid="packet-result"]', { timeoutMs: 120000 });
      await s.click('[data-testid="packet-verify"]');
      await s.waitFor('[data-testid="packet-verification"]', { timeoutMs: 60000 });
      await check(ctx, s, 'packet', found, 'packet-open-form');
      await s.close();

      // Real disagreements: the review queue with its pairs, blind.
      const qdb = ctx.db('fit-review');
      disagreementsStudy(ctx, qdb, 'Recorded disagreements');
      s = await ctx.launch(['--db', qdb]);
      await s.waitForTexts(rowNames, (t) => t.includes('Recorded disagreements'));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === 'Recorded disagreements');
      await go(s, 'review');
      await s.waitFor('[data-testid="review-pair"]', { timeoutMs: 60000 });
      await check(ctx, s, 'review', found);
      await go(s, 'results');
      await s.waitFor('[data-testid="cell-card"]', { timeoutMs: 60000 });
      await check(ctx, s, 'results-disagreements', found);
      await go(s, 'signoff');
      await s.waitFor('[data-testid="signoff-check"]', { timeoutMs: 60000 });
      await check(ctx, s, 'signoff-review', found);

      assert(found.length === 0, `${found.length} layout problems:\n  ${found.join('\n  ')}`);
    },
  },
  {
    name: 'lists follow the database: the CLI writes, the window lists it; F5 reads again; each screen opens at its top',
    async run(ctx) {
      const db = ctx.db('watch');
      const study = 'Watched';
      ctx.kvgate(['--db', db, 'study', 'create', study]);
      for (const m of ['smollm2-135m-cpu-b0.json', 'smollm2-135m-cpu-q8.json']) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', study, resolve(root, 'fixtures/manifests', m)]);
      }
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', study, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts(rowNames, (t) => t.length === 1);
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === study);

      // Another process writes: the list follows within a few seconds, no click.
      ctx.kvgate(['--db', db, 'study', 'create', 'Written by the CLI']);
      await s.waitForTexts(rowNames, (t) => t.includes('Written by the CLI'), { timeoutMs: 10000 });

      // On the Runs screen: runs imported by the CLI appear.
      await go(s, 'runs');
      await s.waitFor('[data-testid="runs-empty"]');
      for (const [cell, file] of [['B0', 'b0-f16'], ['Q8', 'q8-q8_0']]) {
        ctx.kvgate(['--db', db, 'import', '--study', study, '--cell', cell, '--format', 'jsonl',
          resolve(root, 'fixtures/demo/runs', `${file}.kvgate-run.jsonl`)]);
      }
      await waitUntil(() => s.findAll('[data-testid="run-row"]'), (rows) => rows.length === 2, 'the two imported runs listed', 15000);

      // Results: F5 analyses again (the watch alone leaves an analysis as it is).
      await go(s, 'results');
      await s.waitFor('[data-testid="cell-card"]', { timeoutMs: 60000 });
      await s.cmd('POST', '/actions', {
        actions: [{ type: 'key', id: 'keyboard', actions: [{ type: 'keyDown', value: '\uE035' }, { type: 'keyUp', value: '\uE035' }] }],
      });
      await s.cmd('DELETE', '/actions');
      await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="read-again-status"]\').textContent;'),
        (t) => t.startsWith('Read again'),
        'F5 read the screen again',
      );
      await s.waitFor('[data-testid="cell-card"]', { timeoutMs: 60000 });
      // The window was not reloaded: the screen and the study are as they were.
      assert((await s.attr('[data-testid="nav-results"]', 'aria-current')) === 'page', 'still on Results');

      // Scrolled down on Results, the next screen opens at its top.
      const scrolled = await s.script('const m = document.getElementById("main"); m.scrollTop = m.scrollHeight; return m.scrollTop;');
      assert(scrolled > 0, `Results is longer than the window: scrolled to ${scrolled}`);
      for (const task of ['signoff', 'policy', 'results']) {
        await go(s, task);
        const top = await s.script('return document.getElementById("main").scrollTop;');
        assert(top === 0, `${task} opens at its top, at ${top}`);
        await s.script('const m = document.getElementById("main"); m.scrollTop = m.scrollHeight; return true;');
      }
    },
  },
];

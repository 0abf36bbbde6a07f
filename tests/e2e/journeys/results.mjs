// Journey of the service owner and the reviewer on real recorded llama.cpp runs (f16 KV = B0,
// q8_0 KV = Q8): results are hidden until a policy is locked; the policy is written as JSON,
// checked and locked with a confirmation; the Results screen then shows each cell with the same
// paired counts as `kvgate analyze --json`; a later change locked through the CLI is marked as
// changed after results, in the window too.

import { assert, waitUntil, recordedStudy } from '../helpers.mjs';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Recorded q8_0 results';
const POLICY = readFileSync(resolve(root, 'fixtures/policies/demo-cpu.json'), 'utf8');

/** Sets a textarea's text as typing would (one input event), for a long JSON document. */
function setText(s, css, text) {
  return s.script(
    'const el = document.querySelector(arguments[0]);' +
      'el.value = arguments[1];' +
      'el.dispatchEvent(new Event("input", { bubbles: true }));',
    [css, text],
  );
}

function show(s, testid) {
  return s.script('document.querySelector(`[data-testid="${arguments[0]}"]`)?.scrollIntoView({ block: "start" });', [testid]);
}

export const journeys = [
  {
    name: 'results: hidden until a policy is locked; lock it in the Policy screen; cells, paired counts and a later change shown',
    async run(ctx) {
      const db = ctx.db('results');
      recordedStudy(ctx, db, STUDY);

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);

      // No policy: no result, and the reason.
      await s.click('[data-testid="nav-results"]');
      const hidden = await s.waitFor('[data-testid="results-policy-not-locked"]');
      assert(hidden, 'the not-locked notice');
      const why = await s.text('[data-testid="results-policy-not-locked"]');
      assert(/hidden/i.test(why), `the notice says results are hidden: ${why}`);
      assert((await s.findAll('[data-testid="cell-card"]')).length === 0, 'no cell is shown before the lock');
      await ctx.screenshot(s, 'results-hidden');

      // The Policy screen: write, check, lock with confirmation.
      await s.click('[data-testid="results-go-policy"]');
      await s.waitFor('[data-testid="policy-none"]');
      await s.waitFor('[data-testid="policy-json"]');
      await setText(s, '[data-testid="policy-json"]', POLICY.replace('"alpha": 0.05', '"alpha": 0.5'));
      const problem = await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="policy-editor"]\')?.textContent ?? "";'),
        (t) => t.includes('significance level'),
        'the alpha problem shown by the live check',
      );
      assert(problem.includes('0.5'), 'the problem names what was found');
      assert(await s.script('return document.querySelector(\'[data-testid="policy-lock-open"]\').disabled;'),
        'lock is blocked while the policy has a problem');
      await setText(s, '[data-testid="policy-json"]', POLICY);
      await s.type('[data-testid="policy-locked-by"]', 'service owner');
      await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="policy-lock-open"]\').disabled;'),
        (d) => d === false,
        'the lock button enabled for a valid policy',
      );
      await s.click('[data-testid="policy-lock-open"]');
      await s.waitFor('[data-testid="lock-policy-confirm"]');
      await ctx.screenshot(s, 'policy-lock-confirm');
      await s.click('[data-testid="lock-policy-confirm"]');
      await s.waitFor('[data-testid="policy-just-locked-sha"]');
      const shownSha = (await s.text('[data-testid="policy-just-locked-sha"]')).trim();
      const status = JSON.parse(ctx.kvgate(['--db', db, 'policy', 'show', '--study', STUDY, '--json']));
      assert(status.current.sha256 === shownSha, `window sha ${shownSha}, store ${status.current.sha256}`);
      assert(status.current.locked_by === 'service owner' && status.current.version === 1, JSON.stringify(status.current));
      assert(status.current.changed_after_results === false, 'a first lock is not a change');
      // The runs were there before the lock: the first lock is marked so, for good.
      assert(status.current.first_lock_after_results === true, 'a first lock after results is marked so');

      // Results: each cell, the same numbers as the CLI.
      const cli = JSON.parse(ctx.kvgate(['--db', db, 'analyze', '--study', STUDY, '--json']));
      await s.click('[data-testid="nav-results"]');
      await s.click('[data-testid="results-refresh"]').catch(() => {});
      await waitUntil(() => s.findAll('[data-testid="cell-card"]'), (cards) => cards.length === 2, 'two cell cards');
      const late = await s.text('[data-testid="results-first-lock-after-results"]');
      assert(late.includes('first locked after results'), `the late first lock is shown: ${late}`);
      const policyText = await s.text('[data-testid="results-policy"]');
      assert(policyText.includes(shownSha), `the results name the policy: ${policyText}`);
      const label = await s.text('[data-testid="results-provenance-label"]').catch(() => '');
      const q8 = cli.cells.find((c) => c.cell === 'Q8');
      const overall = q8.paired.find((p) => p.stratum === 'overall');
      const row = await s.script(
        'const r = document.querySelector(\'[data-testid="cell-card"][data-cell="Q8"] [data-testid="paired-row"][data-stratum="overall"]\');' +
          'return r ? [...r.querySelectorAll("td")].map((td) => td.textContent.trim()) : null;',
      );
      assert(row && Number(row[0]) === overall.n && Number(row[1]) === overall.b && Number(row[2]) === overall.c,
        `window overall row ${JSON.stringify(row)}, CLI n ${overall.n} b ${overall.b} c ${overall.c}`);
      const verdicts = await s.texts('[data-testid="cell-card"][data-cell="Q8"] [data-testid="paired-verdict"]');
      assert(verdicts.length > 0 && verdicts.every((v) => !/equivalent/i.test(v)), `verdicts ${JSON.stringify(verdicts)}`);
      // The headline says what the gates say: the backend's sentence, the same in the window as in
      // the CLI; an undecided quality gate reads "collect more evidence", never "quality holds".
      const outcome = (await s.text('[data-testid="cell-card"][data-cell="Q8"] [data-testid="cell-outcome"]')).trim();
      assert(outcome === q8.decision.headline, `headline ${JSON.stringify(outcome)}, CLI ${JSON.stringify(q8.decision.headline)}`);
      const qualityGate = (await s.text('[data-testid="cell-card"][data-cell="Q8"] [data-testid="gate-quality"]')).trim();
      if (q8.decision.quality_qualifies === null) {
        assert(outcome.startsWith('collect more evidence') && qualityGate === 'undecided', `undecided quality: ${outcome} / ${qualityGate}`);
      }
      assert(!/quality holds/.test(outcome) || q8.decision.quality_qualifies === true, `headline overstates: ${outcome}`);
      const classGates = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="cell-card"][data-cell="Q8"] [data-testid="class-gate"]\')].map((g) => [g.dataset.class, g.dataset.status]);',
      );
      assert(
        JSON.stringify(classGates) === JSON.stringify(q8.decision.goodput_by_class.map((g) => [g.class, g.status])),
        `class gates ${JSON.stringify(classGates)}`,
      );
      const segments = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="cell-card"][data-cell="Q8"] [data-testid="paired-row"][data-protected="true"]\')].map((r) => r.dataset.stratum);',
      );
      assert(['de', 'long-context', 'numeric'].every((n) => segments.includes(n)), `protected rows ${JSON.stringify(segments)}`);
      assert((await s.findAll('[data-testid="forest-row"]')).length > 0, 'the forest plot drawn');
      assert(label === '' || label.length > 0, 'provenance label read');
      await show(s, 'results-header');
      await ctx.screenshot(s, 'results-cells');
      // Pairs are the same prompts: the window lists what the CLI lists as unpaired (nothing for
      // these recordings) and names the operating point the goodput is at.
      const unpaired = await s.findAll('[data-testid="cell-card"][data-cell="Q8"] [data-testid="unpaired-entry"]');
      assert(unpaired.length === Math.min(q8.unpaired.length, 20), `unpaired ${unpaired.length}, CLI ${q8.unpaired.length}`);
      const point = await s.text('[data-testid="cell-card"][data-cell="Q8"] [data-testid="cell-operating-point"]');
      assert(/closed loop × 1 · admission limit 1/.test(point), `operating point ${point}`);
      await s.script('document.querySelector(\'[data-testid="cell-card"][data-cell="Q8"] [data-testid="cell-goodput-total"]\')?.scrollIntoView({ block: "start" });');
      await ctx.screenshot(s, 'results-q8-goodput-point');

      // A later change, locked from the CLI, is marked in the window for good.
      const changed = join(ctx.work, 'policy-v2.json');
      writeFileSync(changed, POLICY.replace('"margin": 0.1', '"margin": 0.2'));
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', STUDY, '--file', changed, '--by', 'someone']);
      await s.click('[data-testid="results-refresh"]');
      await s.waitFor('[data-testid="results-changed-after-results"]', { timeoutMs: 20000 });
      await s.click('[data-testid="nav-policy"]');
      await s.waitFor('[data-testid="policy-changed-after-results"]');
      const rows = await s.findAll('[data-testid="policy-version-row"]');
      assert(rows.length === 2, `two versions listed, found ${rows.length}`);
      await ctx.screenshot(s, 'policy-changed-after-results');
      await s.close();
    },
  },
];

// Journey of the Fixtures screen: generate a corpus with the pinned tokenizer, read its grid,
// inspect an item's evidence and distractors, then re-open the folder and check the digest.

import { assert, waitUntil, valueOf, choose } from '../helpers.mjs';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

/** The summary's source and digest, or the inline error: fails at once when the backend refused. */
function summaryState(s) {
  return s.script(
    'const q = (t) => document.querySelector(`[data-testid="${t}"]`);' +
      'const error = q("fixtures-error");' +
      'const summary = q("corpus-summary");' +
      'return {' +
      '  error: error ? error.textContent.trim() : null,' +
      '  source: summary ? summary.dataset.source : null,' +
      '  count: q("corpus-item-count")?.textContent.trim() ?? null,' +
      '  sha: q("corpus-items-sha256")?.textContent.trim() ?? null,' +
      '  synthetic: q("corpus-synthetic")?.textContent.trim() ?? null,' +
      '  dir: q("corpus-dir")?.textContent.trim() ?? null,' +
      '};',
  );
}

async function waitSummary(s, source, timeoutMs) {
  const state = await waitUntil(
    () => summaryState(s),
    (st) => st.error !== null || st.source === source,
    `the corpus summary (${source})`,
    timeoutMs,
  );
  assert(state.error === null, `the backend refused: ${state.error}`);
  return state;
}

export const journeys = [
  {
    name: 'generate a corpus, read its grid, inspect an item, re-open the folder with the same digest',
    async run(ctx) {
      const out = join(ctx.work, 'corpus-seed-7');
      const s = await ctx.launch(['--db', ctx.db('fixtures')]);
      await s.waitFor('[data-testid="screen-studies"]');
      await s.click('[data-testid="nav-fixtures"]');
      await s.waitFor('[data-testid="screen-fixtures"]');
      await s.waitFor('[data-testid="fixtures-empty"]');

      await s.type('[data-testid="fixtures-seed"]', '7');
      await choose(s, '[data-testid="fixtures-preset"]', 'test-2k');
      await choose(s, '[data-testid="fixtures-split"]', 'evaluation');
      await s.type('[data-testid="fixtures-per-stratum"]', '1');
      await s.type('[data-testid="fixtures-out"]', out);
      await waitUntil(() => valueOf(s, '[data-testid="fixtures-seed"]'), (v) => v === '7', 'seed 7 in the form');
      await s.click('[data-testid="fixtures-generate"]');

      // Tokenizing every prompt takes seconds in a debug build; the button says so meanwhile.
      const generated = await waitSummary(s, 'generated', 180000);
      assert(generated.count === '72', `item count ${generated.count}, expected 72`);
      assert(generated.synthetic === 'synthetic', `synthetic label says ${JSON.stringify(generated.synthetic)}`);
      assert(/^[0-9a-f]{64}$/.test(generated.sha), `items sha256 ${JSON.stringify(generated.sha)}`);
      assert(generated.dir === out, `corpus folder ${generated.dir}, expected ${out}`);
      const disabled = await s.script('return document.querySelector(\'[data-testid="fixtures-generate"]\').disabled;');
      assert(disabled === false, 'the generate button is enabled again');

      // The grid: every cell of language × length × position × task, from corpus.json's counts.
      const cells = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="stratum-cell"]\')].map((c) => ({ ...c.dataset }));',
      );
      assert(cells.length === 72, `grid has ${cells.length} cells, expected 72`);
      const total = cells.reduce((n, c) => n + Number(c.present) + Number(c.absent), 0);
      assert(total === 72, `grid counts sum to ${total}, expected 72`);
      const target = cells.find((c) => Number(c.present) > 0);
      assert(target, `no cell with a present item: ${JSON.stringify(cells.slice(0, 4))}`);
      const cellCss =
        `[data-testid="stratum-cell"][data-language="${target.language}"][data-length="${target.length}"]` +
        `[data-position="${target.position}"][data-task="${target.task}"]`;
      await s.click(cellCss);
      const strata = `-${target.language}-${target.length}-${target.position}-${target.task}-`;
      const ids = await waitUntil(
        () => s.script('return [...document.querySelectorAll(\'[data-testid="item-row"]\')].map((r) => r.dataset.id);'),
        (list) => list.length === Number(target.present) + Number(target.absent) && list.every((id) => id.includes(strata)),
        `the item list filtered to ${strata}`,
      );

      // Open a present item: its evidence is highlighted, its distractors marked with their kinds.
      const present = await s.script(
        'return document.querySelector(\'[data-testid="item-row"][data-answer="present"]\')?.dataset.id ?? null;',
      );
      assert(present && ids.includes(present), `a present item among ${JSON.stringify(ids)}`);
      await s.click(`[data-testid="item-row"][data-id="${present}"] [data-testid="item-row-open"]`);
      await waitUntil(() => s.attr('[data-testid="item-viewer"]', 'data-id'), (id) => id === present, `the viewer on ${present}`);
      const evidence = await s.findAll('[data-testid="item-viewer"] [data-testid="item-evidence"]');
      assert(evidence.length >= 1, `item-evidence elements: ${evidence.length}`);
      const kinds = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="item-viewer"] [data-testid="item-distractor"]\')]' +
          '.map((d) => d.dataset.kinds);',
      );
      assert(kinds.length >= 3, `item-distractor elements: ${JSON.stringify(kinds)}`);
      assert(
        kinds.every((k) => k && k.split(' ').every((kind) => /^[a-z_]+$/.test(kind))),
        `every distractor names its kinds: ${JSON.stringify(kinds)}`,
      );
      const tokens = await s.attr('[data-testid="item-token-count"]', 'data-tokens');
      assert(/^[1-9]\d*$/.test(tokens ?? ''), `token count ${tokens}`);
      await ctx.screenshot(s, 'fixtures-item-viewer');

      // Re-open the folder: items.jsonl is checked against corpus.json, the digest is the same.
      await s.type('[data-testid="fixtures-open-dir"]', out);
      await s.click('[data-testid="fixtures-open"]');
      const opened = await waitSummary(s, 'opened', 60000);
      assert(opened.sha === generated.sha, `re-opened sha256 ${opened.sha}, generated ${generated.sha}`);
      assert(opened.count === '72', `re-opened item count ${opened.count}`);
      assert(opened.synthetic === 'synthetic', `re-opened synthetic label ${JSON.stringify(opened.synthetic)}`);

      // A corpus checked against itself shares every item: the check sees overlap.
      const a = await valueOf(s, '[data-testid="check-a"]');
      assert(a === out, `check A defaults to the open corpus, found ${a}`);
      await s.type('[data-testid="check-b"]', out);
      await s.click('[data-testid="check-run"]');
      await waitUntil(
        () => s.attr('[data-testid="check-result"]', 'data-disjoint'),
        (v) => v === 'false',
        'the disjointness check to report overlap',
        60000,
      );
      const shared = await s.findAll('[data-testid="check-shared-item"]');
      assert(shared.length === 72, `shared items ${shared.length}, expected 72`);
    },
  },
  {
    name: 'generate a variable-tracking corpus: its own grid columns, the chain as evidence, the earlier number marked',
    async run(ctx) {
      const out = join(ctx.work, 'corpus-tracking');
      const s = await ctx.launch(['--db', ctx.db('fixtures-tracking')]);
      await s.waitFor('[data-testid="screen-studies"]');
      await s.click('[data-testid="nav-fixtures"]');
      await s.waitFor('[data-testid="fixtures-empty"]');
      await s.type('[data-testid="fixtures-seed"]', '11');
      await choose(s, '[data-testid="fixtures-preset"]', 'test-2k');
      // Only variable tracking: the four single extractions are ticked by default.
      for (const t of ['literal', 'numeric', 'multi_document', 'business_rule', 'variable_tracking']) {
        await s.click(`[data-testid="fixtures-task-${t}"]`);
      }
      const ticked = await s.script(
        'return [...document.querySelectorAll(\'[data-testid^="fixtures-task-"]\')].filter((c) => c.checked).map((c) => c.value);',
      );
      assert(JSON.stringify(ticked) === '["variable_tracking"]', `ticked ${JSON.stringify(ticked)}`);
      await s.type('[data-testid="fixtures-out"]', out);
      await ctx.screenshot(s, 'fixtures-generate-form');
      await s.click('[data-testid="fixtures-generate"]');
      const generated = await waitSummary(s, 'generated', 180000);
      assert(generated.count === '18', `item count ${generated.count}, expected 18`);

      const tasks = await s.script(
        'return [...new Set([...document.querySelectorAll(\'[data-testid="stratum-cell"]\')].map((c) => c.dataset.task))];',
      );
      assert(JSON.stringify(tasks) === '["variable_tracking"]', `grid columns ${JSON.stringify(tasks)}`);

      const present = await s.script(
        'return document.querySelector(\'[data-testid="item-row"][data-answer="present"]\')?.dataset.id ?? null;',
      );
      assert(present && present.includes('-variable_tracking-present-'), `a present item: ${present}`);
      await s.click(`[data-testid="item-row"][data-id="${present}"] [data-testid="item-row-open"]`);
      await waitUntil(() => s.attr('[data-testid="item-viewer"]', 'data-id'), (id) => id === present, `the viewer on ${present}`);
      const evidence = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="item-viewer"] [data-testid="item-evidence"]\')].map((e) => e.textContent.trim());',
      );
      const links = evidence.filter((t) => /became|wurde zu/.test(t));
      assert(links.length >= 2 && links.length === evidence.length - 1, `evidence: ${JSON.stringify(evidence)}`);
      const kinds = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="item-viewer"] [data-testid="item-distractor"]\')].map((d) => d.dataset.kinds);',
      );
      assert(kinds.includes('earlier_number'), `distractor kinds ${JSON.stringify(kinds)}`);
      await ctx.screenshot(s, 'fixtures-variable-tracking');
    },
  },
  {
    name: 'generate several-key and several-value items: a list answer shown whole, within the screen',
    async run(ctx) {
      const out = join(ctx.work, 'corpus-lists');
      const s = await ctx.launch(['--db', ctx.db('fixtures-lists')]);
      await s.waitFor('[data-testid="screen-studies"]');
      await s.click('[data-testid="nav-fixtures"]');
      await s.waitFor('[data-testid="fixtures-empty"]');
      await s.type('[data-testid="fixtures-seed"]', '12');
      for (const t of ['literal', 'numeric', 'multi_document', 'business_rule', 'multi_key', 'multi_value']) {
        await s.click(`[data-testid="fixtures-task-${t}"]`);
      }
      await s.type('[data-testid="fixtures-out"]', out);
      await s.click('[data-testid="fixtures-generate"]');
      const generated = await waitSummary(s, 'generated', 180000);
      assert(generated.count === '36', `item count ${generated.count}, expected 36`);
      const id = await s.script(
        'return document.querySelector(\'[data-testid="item-row"][data-id*="-multi_value-present-"]\')?.dataset.id ?? null;',
      );
      assert(id, 'a present several-value item');
      await s.click(`[data-testid="item-row"][data-id="${id}"] [data-testid="item-row-open"]`);
      await waitUntil(() => s.attr('[data-testid="item-viewer"]', 'data-id'), (v) => v === id, `the viewer on ${id}`);
      const expected = JSON.parse((await s.texts('[data-testid="item-expected"]'))[0]);
      assert(Array.isArray(expected.answers) && expected.answers.length === 3, `three answers: ${JSON.stringify(expected)}`);
      const evidence = await s.findAll('[data-testid="item-viewer"] [data-testid="item-evidence"]');
      assert(evidence.length === 3, `each revision is evidence: ${evidence.length}`);
      const overflow = await s.script(
        'const r = document.querySelector(\'[data-testid="item-expected"]\').getBoundingClientRect(); return r.right - window.innerWidth;',
      );
      assert(overflow <= 0, `the approved answer ends ${overflow}px past the window`);
      await s.script('document.querySelector(\'[data-testid="item-expected"]\').scrollIntoView({ block: "center" });');
      await ctx.screenshot(s, 'fixtures-several-values');
    },
  },
  {
    name: "import a team's own prompts: a bad line named and nothing written, then the corpus with its labels and checks",
    async run(ctx) {
      // The team's file, written for this journey: each answer check once, English and German.
      const line = (id, language, user, check) =>
        JSON.stringify({ id, messages: [{ role: 'system', content: 'Answer from the text only.' }, { role: 'user', content: user }], labels: { language, task: id.split('-')[0] }, check });
      const good = [
        line('notice-1', 'en', 'Contract A: the notice period is 30 days. How many days?', { kind: 'number', value: 30, tolerance: 0 }),
        line('clause-1', 'en', 'Contract C: clause 7.2 sets the penalty. Which clause?', { kind: 'exact_text', text: 'Clause 7.2' }),
        line('clause-2', 'de', 'Vertrag D: Ziffer 9 regelt die Haftung. Welche Ziffer?', { kind: 'regex', pattern: '(Ziffer )?9' }),
        line('invoice-1', 'de', 'Rechnung F: Summe 1.250,50 EUR. Summe und Währung als JSON.', { kind: 'json_fields', expected: { total: 1250.5, currency: 'EUR' } }),
        line('refusal-1', 'en', 'Contract G names no arbitration venue. Where is arbitration held?', { kind: 'refusal' }),
      ];
      const bad = [good[0], good[1].replace('"exact_text","text":"Clause 7.2"', '"regex","pattern":"(Clause"'), ...good.slice(2)];
      const badFile = join(ctx.work, 'team-bad.jsonl');
      const goodFile = join(ctx.work, 'team.jsonl');
      writeFileSync(badFile, bad.join('\n') + '\n');
      writeFileSync(goodFile, good.join('\n') + '\n');
      const out = join(ctx.work, 'team-corpus');

      const s = await ctx.launch(['--db', ctx.db('fixtures-team')]);
      await s.waitFor('[data-testid="screen-studies"]');
      await s.click('[data-testid="nav-fixtures"]');
      await s.waitFor('[data-testid="fixtures-empty"]');
      await s.type('[data-testid="fixtures-import-file"]', badFile);
      await choose(s, '[data-testid="fixtures-import-split"]', 'evaluation');
      await s.type('[data-testid="fixtures-import-out"]', out);
      await s.click('[data-testid="fixtures-import"]');
      const error = await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="fixtures-import-error"]\')?.textContent ?? null;'),
        (t) => t !== null,
        'the import error',
        60000,
      );
      assert(error.includes('line 2, $.check.pattern') && error.includes('nothing was written'), `error: ${error}`);
      await ctx.screenshot(s, 'fixtures-team-import-error');

      await s.type('[data-testid="fixtures-import-file"]', goodFile);
      await s.click('[data-testid="fixtures-import"]');
      await waitUntil(
        () => s.attr('[data-testid="team-summary"]', 'data-source'),
        (v) => v === 'imported',
        'the team corpus summary',
        60000,
      );
      const count = (await s.texts('[data-testid="team-item-count"]'))[0];
      assert(count === '5', `items ${count}`);
      const badge = (await s.texts('[data-testid="corpus-synthetic"]'))[0];
      assert(badge.includes('not marked synthetic'), `badge ${badge}`);
      const rows = await s.findAll('[data-testid="team-item-row"]');
      assert(rows.length === 5, `rows ${rows.length}`);
      await s.click('[data-testid="team-item-row"][data-id*="invoice-1"] td');
      await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="team-item-check"]\')?.textContent ?? "";'),
        (t) => t.includes('json_fields') && t.includes('1250.5'),
        'the invoice item viewed',
      );
      await ctx.screenshot(s, 'fixtures-team-corpus');

      // The folder opens again as a team corpus, its digest verified.
      await s.type('[data-testid="fixtures-open-dir"]', out);
      await s.click('[data-testid="fixtures-open"]');
      await waitUntil(() => s.attr('[data-testid="team-summary"]', 'data-source'), (v) => v === 'opened', 'the team corpus re-opened', 60000);
    },
  },
];

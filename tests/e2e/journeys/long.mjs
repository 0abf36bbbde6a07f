// Journey of a newcomer on the recorded long set: "Open the demo" adds, beside the demo, the long
// set (Qwen2.5-Coder-0.5B at a 4k context, f16 KV = B0, q4_0 KV = Q4, 48 paired items); its Results
// screen shows each length class's paired counts exactly as `kvgate analyze --json` gives them,
// and its Review queue holds its real disagreements.

import { assert, waitUntil } from '../helpers.mjs';

const LONG = 'Demo: long context, q4_0 KV at 4k (recorded on CPU)';
const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';

export const journeys = [
  {
    name: 'long set: the second demo study shows paired length strata equal to the CLI and its disagreements to review',
    async run(ctx) {
      const db = ctx.db('long');
      ctx.kvgate(['--db', db, 'study', 'demo']);
      const cli = JSON.parse(ctx.kvgate(['--db', db, 'analyze', '--study', LONG, '--json']));
      const q4 = cli.cells.find((c) => c.cell === 'Q4');
      assert(q4 && q4.valid, `the CLI's Q4 cell: ${JSON.stringify(q4 && q4.invalid_reasons)}`);

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts(rowNames, (t) => t.includes(LONG));
      const index = (await s.texts(rowNames)).indexOf(LONG);
      await s.script('document.querySelectorAll(\'[data-testid="study-open"]\')[arguments[0]].click();', [index]);
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === LONG);

      await s.click('[data-testid="nav-results"]');
      await s.waitFor('[data-testid="cell-card"][data-cell="Q4"]', { timeoutMs: 30000 });
      await s.script('document.querySelector(\'[data-testid="cell-card"][data-cell="Q4"] [data-testid="paired-marginals"]\').open = true;');
      for (const stratum of ['overall', 'length_class=short', 'length_class=medium', 'length_class=long']) {
        const want = q4.paired.find((p) => p.stratum === stratum);
        assert(want, `the CLI has the stratum ${stratum}`);
        const row = await waitUntil(
          () => s.script(
            'const r = document.querySelector(`[data-testid="cell-card"][data-cell="Q4"] [data-testid="paired-row"][data-stratum="${arguments[0]}"]`);' +
              'return r ? [...r.querySelectorAll("td")].map((td) => td.textContent.trim()) : null;',
            [stratum],
          ),
          (r) => r !== null,
          `the window's ${stratum} row`,
        );
        assert(Number(row[0]) === want.n && Number(row[1]) === want.b && Number(row[2]) === want.c,
          `${stratum}: window ${JSON.stringify(row.slice(0, 3))}, CLI n ${want.n} b ${want.b} c ${want.c}`);
      }
      const overall = q4.paired.find((p) => p.stratum === 'overall');
      assert(overall.n === 48 && overall.b + overall.c > 0, `48 pairs with real disagreements: ${JSON.stringify(overall)}`);
      await s.script('document.querySelector(\'[data-testid="cell-card"][data-cell="Q4"] [data-testid="paired-marginals"]\').scrollIntoView({ block: "start" });');
      await ctx.screenshot(s, 'long-results-strata');

      // The disagreements wait in the review queue.
      await s.click('[data-testid="nav-review"]');
      const queue = JSON.parse(ctx.kvgate(['--db', db, 'review', 'list', '--study', LONG, '--json']));
      const pairs = queue.pairs;
      assert(pairs.length === overall.b + overall.c, `queue ${pairs.length}, disagreements ${overall.b + overall.c}`);
      await waitUntil(() => s.findAll('[data-testid="review-pair-row"]'), (r) => r.length === pairs.length, 'every disagreement queued in the window', 30000);
      await ctx.screenshot(s, 'long-review-queue');

      // A long pair's prompt is folded around its evidence; nothing of it is lost.
      const longPair = pairs.find((p) => /-(medium|long)-/.test(p.item_id));
      assert(longPair, `a medium or long disagreement: ${pairs.map((p) => p.item_id).join(', ')}`);
      await s.script(
        'document.querySelector(`[data-testid="review-pair-row"][data-pair-id="${arguments[0]}"]`).click();',
        [longPair.pair_id],
      );
      await waitUntil(() => s.findAll('[data-testid="review-fold"]'), (f) => f.length > 0, 'folded stretches in a long prompt', 15000);
      const evidence = await s.texts('[data-testid="review-evidence"]');
      assert(evidence.length > 0 || longPair.item_id.includes('-absent-'), `the evidence is marked and shown: ${longPair.item_id}`);
      const foldedLength = (await s.texts('[data-testid="review-prompt"]'))[0].length;
      await s.script('document.querySelector(\'[data-testid="review-prompt"]\').scrollIntoView({ block: "center" });');
      await ctx.screenshot(s, 'long-review-folded');
      await s.click('[data-testid="review-unfold-all"]');
      await waitUntil(() => s.findAll('[data-testid="review-fold"]'), (f) => f.length === 0, 'every fold shown', 15000);
      const whole = (await s.texts('[data-testid="review-prompt"]'))[0];
      assert(whole.length > foldedLength, `the whole prompt (${whole.length} chars) is longer than the folded one (${foldedLength})`);
    },
  },
];

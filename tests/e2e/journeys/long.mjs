// Journey of a newcomer on the recorded long set: "Open the demo" adds, beside the demo, the long
// set (Qwen2.5-Coder-0.5B at a 4k context, f16 KV = B0 against q8_0 KV = Q8 and q4_0 KV = Q4, 48
// paired items each); its Results screen shows each length class's paired counts exactly as
// `kvgate analyze --json` gives them, and its Review queue holds its real disagreements.

import { assert, waitUntil } from '../helpers.mjs';

const LONG = 'Demo: long context, q8_0 and q4_0 KV at 4k (recorded on CPU)';
const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';

export const journeys = [
  {
    name: 'long set: the second demo study shows paired length strata equal to the CLI and its disagreements to review',
    async run(ctx) {
      const db = ctx.db('long');
      ctx.kvgate(['--db', db, 'study', 'demo']);
      const cli = JSON.parse(ctx.kvgate(['--db', db, 'analyze', '--study', LONG, '--json']));
      const candidates = ['Q8', 'Q4'].map((name) => {
        const c = cli.cells.find((x) => x.cell === name);
        assert(c && c.valid, `the CLI's ${name} cell: ${JSON.stringify(c && c.invalid_reasons)}`);
        return c;
      });

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts(rowNames, (t) => t.includes(LONG));
      const index = (await s.texts(rowNames)).indexOf(LONG);
      await s.script('document.querySelectorAll(\'[data-testid="study-open"]\')[arguments[0]].click();', [index]);
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === LONG);

      await s.click('[data-testid="nav-results"]');
      let disagreements = 0;
      for (const cand of candidates) {
        const card = `[data-testid="cell-card"][data-cell="${cand.cell}"]`;
        await s.waitFor(card, { timeoutMs: 30000 });
        await s.script(`document.querySelector('${card} [data-testid="paired-marginals"]').open = true;`);
        for (const stratum of ['overall', 'length_class=short', 'length_class=medium', 'length_class=long']) {
          const want = cand.paired.find((p) => p.stratum === stratum);
          assert(want, `the CLI has the stratum ${stratum} for ${cand.cell}`);
          const row = await waitUntil(
            () => s.script(
              `const r = document.querySelector('${card} [data-testid="paired-row"][data-stratum="' + arguments[0] + '"]');` +
                'return r ? [...r.querySelectorAll("td")].map((td) => td.textContent.trim()) : null;',
              [stratum],
            ),
            (r) => r !== null,
            `the window's ${cand.cell} ${stratum} row`,
          );
          assert(Number(row[0]) === want.n && Number(row[1]) === want.b && Number(row[2]) === want.c,
            `${cand.cell} ${stratum}: window ${JSON.stringify(row.slice(0, 3))}, CLI n ${want.n} b ${want.b} c ${want.c}`);
        }
        const overall = cand.paired.find((p) => p.stratum === 'overall');
        assert(overall.n === 48, `${cand.cell}: 48 pairs: ${JSON.stringify(overall)}`);
        disagreements += overall.b + overall.c;
      }
      assert(disagreements > 0, 'real disagreements to review');
      await s.script('document.querySelector(\'[data-testid="cell-card"][data-cell="Q8"] [data-testid="paired-marginals"]\').scrollIntoView({ block: "start" });');
      await ctx.screenshot(s, 'long-results-strata');

      // The disagreements wait in the review queue.
      await s.click('[data-testid="nav-review"]');
      const queue = JSON.parse(ctx.kvgate(['--db', db, 'review', 'list', '--study', LONG, '--json']));
      const pairs = queue.pairs;
      assert(pairs.length === disagreements, `queue ${pairs.length}, disagreements ${disagreements}`);
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

// A reviewer of evaluation-harness results: the recorded lm-eval 0.4.13 round trip (f16 and q8_0
// llama.cpp servers) imported into B0 and Q8 with the CLI; the Review screen shows a pair's prompt
// as lm-eval sent it and its target, beside both answers, exactly as `kvgate review list` gives them.

import { assert, waitUntil } from '../helpers.mjs';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Harness results';
const RECORDED = resolve(root, 'fixtures/real-tools/lm-eval-0.4.13');

export const journeys = [
  {
    name: 'harness: a pair imported from lm-eval shows the prompt it sent and its target beside both answers',
    async run(ctx) {
      const db = ctx.db('harness');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      for (const m of ['smollm2-135m-cpu-b0.json', 'smollm2-135m-cpu-q8.json']) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, 'fixtures/manifests', m)]);
      }
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', STUDY, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      for (const [cell, kv] of [['B0', 'f16'], ['Q8', 'q8_0']]) {
        const dir = join(RECORDED, kv);
        ctx.kvgate(['--db', db, 'import', '--study', STUDY, '--cell', cell, '--format', 'llamacpp-log', join(dir, `server-${kv}.log`)]);
        for (const f of readdirSync(dir).filter((n) => n.startsWith('samples_')).sort()) {
          ctx.kvgate(['--db', db, 'import', '--study', STUDY, '--cell', cell, '--format', 'lm-eval-samples', join(dir, f)]);
        }
      }
      const cli = JSON.parse(ctx.kvgate(['--db', db, 'review', 'list', '--study', STUDY, '--agreeing', '6', '--json']));
      assert(cli.pairs.length > 0 && cli.pairs.every((p) => p.harness), `harness pairs from the CLI: ${cli.pairs.length}`);

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
      await s.click('[data-testid="nav-review"]');
      await s.waitFor('[data-testid="review-filter-agreeing"]');
      await s.script(
        'const el = document.querySelector(\'[data-testid="review-filter-agreeing"]\'); el.value = "2"; el.dispatchEvent(new Event("change", { bubbles: true }));',
      );
      const target = await waitUntil(() => s.texts('[data-testid="review-target"]'), (t) => t.length === 1, 'a harness target shown', 30000);
      const shownId = (await s.texts('[data-testid="review-pair"] .pair-head code'))[0];
      const pair = cli.pairs.find((p) => p.pair_id === shownId);
      assert(pair, `the shown pair is one of the CLI's: ${shownId}`);
      assert(target[0] === pair.harness.target, `target: window ${JSON.stringify(target[0])}, CLI ${JSON.stringify(pair.harness.target)}`);
      await ctx.screenshot(s, 'harness-review-pair-folded');
      await s.script('document.querySelector(\'[data-testid="review-unfold-all"]\')?.click();');
      await waitUntil(() => s.findAll('[data-testid="review-fold"]'), (f) => f.length === 0, 'the whole prompt shown', 15000);
      const prompt = (await s.texts('[data-testid="review-prompt"]'))[0];
      assert(prompt === pair.harness.prompt, `the whole prompt as lm-eval sent it (${prompt.length} chars, CLI ${pair.harness.prompt.length})`);
      assert(prompt.startsWith('system:\n') && prompt.includes('\n\nuser:\n'), 'the chat messages with their roles');
      await s.script('document.querySelector(\'[data-testid="review-target"]\').scrollIntoView({ block: "start" });');
      await ctx.screenshot(s, 'harness-review-pair');
    },
  },
];

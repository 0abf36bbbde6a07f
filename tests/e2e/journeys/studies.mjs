// Journeys of the Studies screen: the first real action, end to end.

import { assert } from '../helpers.mjs';

const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';

export const journeys = [
  {
    name: 'create a study, it is listed, restart, it is still listed and reopened',
    async run(ctx) {
      const db = ctx.db('restart');
      let s = await ctx.launch(['--db', db]);
      await s.waitFor('[data-testid="screen-studies"]');
      await s.waitForTexts(rowNames, (t) => t.length === 0);
      await s.type('[data-testid="study-name"]', 'FP8 KV for the chat route');
      await s.type('[data-testid="study-description"]', 'C1 default scales against B0');
      await s.click('[data-testid="study-create"]');
      await s.waitForTexts(rowNames, (t) => t.length === 1 && t[0] === 'FP8 KV for the chat route');
      // A created study is the current one, with its next step.
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === 'FP8 KV for the chat route');
      await s.waitFor('[data-testid="next-step-link"][data-step="manifests"]');
      const dbPath = await s.text('[data-testid="db-path"]');
      assert(dbPath.includes(db), `header shows ${dbPath}, expected ${db}`);
      await s.close();

      s = await ctx.launch(['--db', db]);
      await s.waitForTexts(rowNames, (t) => t.length === 1 && t[0] === 'FP8 KV for the chat route');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === 'FP8 KV for the chat route');
      await ctx.screenshot(s, 'studies-after-restart');
    },
  },
  {
    name: 'a rejected study shows the reason inline and adds nothing',
    async run(ctx) {
      const s = await ctx.launch(['--db', ctx.db('errors')]);
      await s.type('[data-testid="study-name"]', 'Long-context numeric gate');
      await s.click('[data-testid="study-create"]');
      await s.waitForTexts(rowNames, (t) => t.length === 1);
      await s.click('[data-testid="study-new"]');
      await s.type('[data-testid="study-name"]', 'long-context NUMERIC gate');
      await s.click('[data-testid="study-create"]');
      const error = await s.waitForTexts('[data-testid="form-error"]', (t) => t.length === 1 && t[0].length > 0);
      assert(error[0].includes('already exists'), `error says: ${error[0]}`);
      const names = await s.texts(rowNames);
      assert(names.length === 1, `expected 1 study, found ${JSON.stringify(names)}`);
    },
  },
  {
    name: 'the default database opens with the recorded demo study, labelled as such',
    async run(ctx) {
      const s = await ctx.launch([]);
      // The demo and the long set, both recorded.
      await s.waitForTexts(
        rowNames,
        (t) => t.length === 2 && t.some((n) => n.startsWith('Demo: q8_0')) && t.some((n) => n.startsWith('Demo: long context')),
      );
      const badges = await s.texts('[data-testid="study-row"] [data-testid="provenance-badge"]');
      assert(badges.length === 2 && badges.every((b) => b === 'recorded demo'), `badges say ${JSON.stringify(badges)}`);
      const description = await s.text('[data-testid="study-row"]');
      assert(description.includes('Demo: q8_0 KV cache on llama.cpp'), `row says ${JSON.stringify(description)}`);
      const dbPath = await s.text('[data-testid="db-path"]');
      assert(dbPath.includes('kvgate.sqlite') && dbPath.includes('default'), `header shows ${dbPath}`);
      await ctx.screenshot(s, 'demo-study');
    },
  },
];

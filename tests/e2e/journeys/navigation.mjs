// The navigation of the user tasks: every screen opens; screens not built yet say so.

import { assert } from '../helpers.mjs';

const tasks = ['studies', 'manifests', 'policy', 'fixtures', 'runs', 'results', 'review', 'signoff', 'packet'];
const built = ['studies', 'manifests', 'policy', 'fixtures', 'runs', 'results', 'review', 'signoff'];

export const journeys = [
  {
    name: 'every task of the navigation opens its screen, unbuilt screens say so',
    async run(ctx) {
      const s = await ctx.launch(['--db', ctx.db('nav')]);
      await s.waitFor('[data-testid="screen-studies"]');
      for (const task of tasks) {
        await s.click(`[data-testid="nav-${task}"]`);
        await s.waitFor(`[data-testid="screen-${task}"]`);
        const current = await s.attr(`[data-testid="nav-${task}"]`, 'aria-current');
        assert(current === 'page', `nav-${task} aria-current=${current}`);
        const notBuilt = await s.findAll(`[data-testid="screen-${task}"] [data-testid="not-built"]`);
        if (built.includes(task)) assert(notBuilt.length === 0, `${task} is built`);
        else assert(notBuilt.length === 1, `${task} should say it is not built yet`);
      }
    },
  },
];

// The navigation of the user tasks: every screen opens, and every one is built.

import { assert } from '../helpers.mjs';

const tasks = ['studies', 'manifests', 'policy', 'fixtures', 'runs', 'results', 'review', 'signoff', 'packet'];

export const journeys = [
  {
    name: 'every task of the navigation opens its screen, each one built',
    async run(ctx) {
      const s = await ctx.launch(['--db', ctx.db('nav')]);
      await s.waitFor('[data-testid="screen-studies"]');
      for (const task of tasks) {
        await s.click(`[data-testid="nav-${task}"]`);
        await s.waitFor(`[data-testid="screen-${task}"]`);
        const current = await s.attr(`[data-testid="nav-${task}"]`, 'aria-current');
        assert(current === 'page', `nav-${task} aria-current=${current}`);
        const notBuilt = await s.findAll(`[data-testid="screen-${task}"] [data-testid="not-built"]`);
        assert(notBuilt.length === 0, `${task} is built`);
      }
    },
  },
];

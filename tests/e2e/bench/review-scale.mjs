// Bench journey (make bench, not make test): the Review screen of a study with about 100,000
// paired disagreements, in the real window. Times are taken inside the page (performance.now()
// when a MutationObserver sees the awaited element, then one animation frame: drawn), so the
// WebDriver round trips that poll for them are not counted. Figures go to KVGATE_BENCH_OUT.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { assert, waitUntil } from '../helpers.mjs';

/** Installs an observer that stamps `window[name]` once `css` matches (holding `text` when given),
 * after one animation frame, then triggers: `click:CSS` or `key:KEY`. */
const STAMP = `
  const [name, css, text, trigger] = arguments;
  window[name] = null;
  const t0 = performance.now();
  const seen = () => {
    const el = document.querySelector(css);
    return el && (!text || el.textContent.includes(text));
  };
  const obs = new MutationObserver(() => {
    if (window[name] === null && seen()) {
      obs.disconnect();
      requestAnimationFrame(() => (window[name] = performance.now() - t0));
    }
  });
  obs.observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
  // No eval under the app's content security policy: the trigger is a click or a key.
  const [kind, what] = [trigger.slice(0, trigger.indexOf(':')), trigger.slice(trigger.indexOf(':') + 1)];
  if (kind === 'click') document.querySelector(what).click();
  else window.dispatchEvent(new KeyboardEvent('keydown', { key: what, bubbles: true }));
`;

async function stamped(s, name, css, text, trigger) {
  await s.script(STAMP, [name, css, text, trigger]);
  return waitUntil(() => s.script(`return window[arguments[0]];`, [name]), (v) => v !== null, name, 60000);
}

/** Peak and current RSS (MiB) of each process whose command line holds `needle`. */
function rssOf(match) {
  const out = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    } catch {
      continue;
    }
    if (!match(cmd)) continue;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key) => Number((status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm')) ?? [])[1] ?? NaN);
    out.push({ pid: Number(pid), cmd, hwm: kib('VmHWM') / 1024, rss: kib('VmRSS') / 1024 });
  }
  return out;
}

export const journeys = [
  {
    name: 'review-scale: first paint and label → next pair of a study with 100k disagreements',
    async run(ctx) {
      const db = process.env.KVGATE_BENCH_REVIEW_DB;
      const study = process.env.KVGATE_BENCH_REVIEW_STUDY;
      const out = process.env.KVGATE_BENCH_OUT;
      assert(db && study && out, 'KVGATE_BENCH_REVIEW_DB, KVGATE_BENCH_REVIEW_STUDY and KVGATE_BENCH_OUT are set by make bench');
      const rowNames = '[data-testid="study-row"] [data-testid="study-row-name"]';
      const open = async () => {
        const s = await ctx.launch(['--db', db]);
        await s.waitForTexts(rowNames, (t) => t.includes(study), { timeoutMs: 60000 });
        const index = (await s.texts(rowNames)).indexOf(study);
        await s.script('document.querySelectorAll(\'[data-testid="study-open"]\')[arguments[0]].click();', [index]);
        await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === study, { timeoutMs: 60000 });
        return s;
      };
      const toReview = (s) => stamped(s, 'firstPaint', '[data-testid="review-side-a"]', '', 'click:[data-testid="nav-review"]');

      // Right after the study opens, while the app still computes its progress (its analysis
      // and review counts) on both cores.
      const busy = await open();
      const afterOpen = await toReview(busy);
      await busy.close();

      // Once the study's progress is shown (the app idle): the Review screen's first paint.
      const s = await open();
      await s.waitForTexts('[data-testid="first-step"][data-step="review"]', (t) => /disagreements labelled/.test(t[0] ?? ''), { timeoutMs: 120000 });
      const firstPaint = await toReview(s);
      const listed = Number((await s.text('[data-testid="review-count-listed"]')).replace(/\D/g, ''));
      assert(listed >= 100000, `at least 100,000 pairs listed: ${listed}`);
      await ctx.screenshot(s, 'bench-review-100k');
      await s.type('[data-testid="review-reviewer"]', 'bench');

      const times = [];
      // Each label → next as its two steps: the label key to the reveal drawn, `j` to the next pair drawn.
      const parts = [];
      for (let i = 0; i < 20; i++) {
        const id = await s.script('return document.querySelector(\'[data-testid="review-pair"] code\').textContent;');
        const labelled = await stamped(s, 'labelled', '[data-testid="review-reveal"]', '',
          'key:4');
        const nextId = await s.script(
          'const c = document.querySelector(\'[data-testid="review-pair-row"][aria-current="true"]\'); return c?.nextElementSibling?.dataset.pairId ?? null;',
        );
        assert(nextId, `a pair after ${id}`);
        // Drawn when the pair shown is the next one (its header and both answers render together).
        const moved = await stamped(s, 'moved', '[data-testid="review-pair"] code', nextId,
          'key:j');
        const now = await s.script('return document.querySelector(\'[data-testid="review-pair"] code\').textContent;');
        assert(now === nextId && (await s.find('[data-testid="review-side-a"]')), `moved on from ${id} to ${nextId}: ${now}`);
        times.push(labelled + moved);
        parts.push([labelled, moved]);
      }
      times.sort((a, b) => a - b);
      const app = await waitUntil(
        () => rssOf((cmd) => cmd.includes('kvgate-desktop') && cmd.includes(db)),
        (found) => found.length === 1,
        'the first window closed: one app process',
      );
      const web = rssOf((cmd) => /WebKitWebProcess/.test(cmd));
      assert(app.length === 1, `one app process: ${JSON.stringify(app)}`);
      const figures = {
        pairs: listed,
        first_paint_ms: firstPaint,
        first_paint_after_open_ms: afterOpen,
        label_next_median_ms: times[Math.floor(times.length / 2)],
        label_next_worst_ms: times[times.length - 1],
        label_next_ms: times,
        label_then_next_ms: parts,
        app_rss_mib: app[0].hwm,
        web_rss_mib: Math.max(...web.map((w) => w.hwm)),
      };
      console.log(JSON.stringify(figures));
      writeFileSync(out, JSON.stringify(figures));
    },
  },
];

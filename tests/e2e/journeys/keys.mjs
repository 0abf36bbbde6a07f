// An endpoint's API key set in the window, on a machine where no OS keyring answers (the runner
// gives the app a session bus address with nothing behind it, so this never touches a real
// keyring): the key is refused until the warned in-memory fallback is chosen, the warning stays
// on screen, a run from the window sends the key, and the key is in no file of the database.
// The OS-keyring path itself is tested by the CLI against a real Secret Service (tests/cli/keys.rs).

import { assert, waitUntil, choose } from '../helpers.mjs';
import { createServer } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Keyed endpoint';
const KEY = 'sk-e2e-window-5d8c31';

/** An OpenAI-style server on loopback that records each POST's Authorization header. */
function recordingServer() {
  const seen = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      seen.push(req.headers.authorization ?? null);
      const events =
        'data: {"choices":[{"index":0,"delta":{"content":"12.5"}}]}\n\n' +
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n' +
        'data: [DONE]\n\n';
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': Buffer.byteLength(events) });
      res.end(events);
    });
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ server, seen, url: `http://127.0.0.1:${server.address().port}` })));
}

const status = (s) => s.script('return document.querySelector(\'[data-testid="endpoint-key-status"]\')?.textContent.trim() ?? "";');

export const journeys = [
  {
    name: 'keys: an API key without an OS keyring is refused, then kept in memory with a warning, sent by a run, stored nowhere',
    async run(ctx) {
      const db = ctx.db('keys');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, 'fixtures/manifests/smollm2-135m-cpu-b0.json')]);
      const { server, seen, url } = await recordingServer();
      try {
        const s = await ctx.launch(['--db', db]);
        await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
        await s.click('[data-testid="study-open"]');
        await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
        await s.click('[data-testid="nav-runs"]');
        await choose(s, '[data-testid="run-cell"]', 'B0');
        await choose(s, '[data-testid="run-endpoint"]', 'custom');
        await s.type('[data-testid="run-base-url"]', `${url}/v1`);
        await waitUntil(() => status(s), (t) => t === `No API key kept for ${url} (requests carry none).`, 'the key status of the typed endpoint', 15000);
        const keyring = await s.text('[data-testid="endpoint-key-keyring"]');
        assert(keyring.startsWith('No OS keyring answers: '), `the keyring's silence is said: ${keyring}`);

        // Without the fallback the key is refused, and the form keeps it for a second try.
        await s.click('[data-testid="endpoint-key-toggle"]');
        await s.type('[data-testid="endpoint-key-input"]', KEY);
        await s.click('[data-testid="endpoint-key-save"]');
        const refused = await waitUntil(() => s.texts('[data-testid="endpoint-key-error"]'), (t) => t.length === 1, 'the refusal', 15000);
        assert(refused[0].includes('no OS keyring answered') && refused[0].includes(`the key for ${url} was not kept`), `refusal: ${refused[0]}`);
        assert(!refused[0].includes(KEY), 'the refusal does not show the key');

        await s.click('[data-testid="endpoint-key-fallback"]');
        await s.click('[data-testid="endpoint-key-save"]');
        await waitUntil(() => status(s), (t) => t === `API key held in this app's memory only, for ${url}.`, 'the key held in memory', 15000);
        const warning = await s.text('[data-testid="endpoint-key-warning"]');
        assert(warning.includes('lost when the process ends') && warning.includes('not written anywhere'), `warning: ${warning}`);
        const inputs = await s.script('return document.querySelectorAll(\'[data-testid="endpoint-key-input"]\').length;');
        assert(inputs === 0, 'the key field is gone once saved');
        const page = await s.script('return document.documentElement.outerHTML;');
        assert(!page.includes(KEY), 'the key is nowhere in the page');
        await ctx.screenshot(s, 'keys-session-fallback');

        // A run from the window carries it.
        await s.type('[data-testid="run-corpus"]', resolve(root, 'fixtures/demo/corpus'));
        await s.type('[data-testid="run-limit"]', '2');
        await s.type('[data-testid="run-warmup"]', '0');
        await s.click('[data-testid="run-start"]');
        await waitUntil(
          () => s.script('return [...document.querySelectorAll(\'[data-testid="run-row"]\')].map((r) => r.dataset.state);'),
          (states) => states.length === 1 && states[0] !== 'running',
          'the run ends',
          60000,
        );
        assert(seen.length === 2 && seen.every((h) => h === `Bearer ${KEY}`), `requests carried the key: ${JSON.stringify(seen)}`);

        await s.click('[data-testid="endpoint-key-forget"]');
        await waitUntil(() => status(s), (t) => t === `No API key kept for ${url} (requests carry none).`, 'the key forgotten', 15000);
        await s.close();
      } finally {
        server.close();
      }
      const files = readdirSync(ctx.work).filter((f) => f.startsWith('keys.sqlite'));
      assert(files.length >= 1, `database files: ${files}`);
      for (const f of files) {
        assert(!readFileSync(join(ctx.work, f)).includes(KEY), `${f} does not hold the key`);
      }
    },
  },
];

// Journey of the Runs screen against real llama.cpp servers on CPU: the f16 server (B0 analogue)
// and the q8_0 server (the 8-bit candidate stand-in, not FP8), one paired-quality run each, the
// KV-cache evidence read from their startup logs, then both servers stopped from the window.
//
// Needs `make llm` (the venv and the SmolLM2-135M model in .llm/). On a 2-core CPU with both
// servers busy a request takes 10–90 s (the recorded demo runs: ~24 s f16, ~44 s q8_0 on
// average), so the runs send few items (plus one warm-up request) — now 4 and the waits are long.

import { assert, waitUntil, valueOf, choose, recordedStudy } from '../helpers.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Q8 KV on CPU';
const MANIFESTS = { B0: 'fixtures/manifests/smollm2-135m-cpu-b0.json', Q8: 'fixtures/manifests/smollm2-135m-cpu-q8.json' };
const LIMIT = 4;
/** Startup log sizes of SmolLM2-135M with a 2,048-cell cache (30 layers, 3 KV heads × 64). */
const KV_SIZE = { f16: '45.00 MiB', q8_0: '23.91 MiB' };
const SERVER_READY_MS = 240000;
const RUNS_DONE_MS = 900000;

/** The servers listed in the window, with any start error shown. */
function serversState(s) {
  return s.script(
    'const rows = [...document.querySelectorAll(\'[data-testid="server-row"]\')];' +
      'const errors = [...document.querySelectorAll(\'[data-testid^="server-error-"], [data-testid="servers-error"]\')];' +
      'return {' +
      '  servers: rows.map((r) => ({' +
      '    kv: r.dataset.kv, pid: Number(r.dataset.pid),' +
      '    url: r.querySelector(\'[data-testid="server-row-url"]\').textContent.trim(),' +
      '    log: r.querySelector(\'[data-testid="server-row-log"]\').textContent.trim(),' +
      '  })),' +
      '  errors: errors.map((e) => e.textContent.trim()),' +
      '};',
  );
}

/** The runs table and whatever went wrong starting a run. */
function runsState(s) {
  return s.script(
    'const rows = [...document.querySelectorAll(\'[data-testid="run-row"]\')];' +
      'const visible = (el) => { if (!el) return false; const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };' +
      'return {' +
      '  runs: rows.map((r) => ({' +
      '    id: Number(r.dataset.runId), cell: r.dataset.cell, state: r.dataset.state,' +
      '    label: r.querySelector(\'[data-testid="run-row-label"]\').textContent.trim(),' +
      '    progress: visible(document.querySelector(`[data-testid="run-progress-${r.dataset.runId}"]`)),' +
      '    progressText: r.querySelector(\'[data-testid="run-progress-text"]\')?.textContent.trim() ?? null,' +
      '    note: r.querySelector(\'[data-testid="run-row-note"]\')?.textContent.trim() ?? null,' +
      '  })),' +
      '  errors: [...document.querySelectorAll(\'[data-testid="run-launch-error"], [data-testid="run-form-error"], [data-testid="runs-error"]\')]' +
      '    .map((e) => e.textContent.trim()),' +
      '};',
  );
}

/** Waits on the runs table; fails at once when the window shows an error or a run ends other than completed. */
async function waitRuns(s, check, what, timeoutMs) {
  const state = await waitUntil(
    () => runsState(s),
    (st) =>
      st.errors.length > 0 ||
      st.runs.some((r) => ['failed', 'cancelled', 'interrupted'].includes(r.state)) ||
      check(st),
    what,
    timeoutMs,
  );
  assert(state.errors.length === 0, `the window shows an error: ${JSON.stringify(state.errors)}`);
  const ended = state.runs.filter((r) => ['failed', 'cancelled', 'interrupted'].includes(r.state));
  assert(ended.length === 0, `a run did not complete: ${JSON.stringify(ended)}`);
  return state;
}

async function startRun(s, cell, kv, corpus) {
  await choose(s, '[data-testid="run-cell"]', cell);
  const pid = await s.script(
    'return document.querySelector(`[data-testid="run-endpoint"] option[data-kv="${arguments[0]}"]`)?.value ?? null;',
    [kv],
  );
  assert(pid, `no ${kv} server among the endpoints`);
  await choose(s, '[data-testid="run-endpoint"]', pid);
  const url = await s.text('[data-testid="run-endpoint-url"]');
  assert(url.startsWith('http://127.0.0.1:'), `endpoint URL ${url}`);
  await s.type('[data-testid="run-corpus"]', corpus);
  await s.type('[data-testid="run-limit"]', String(LIMIT));
  await waitUntil(() => valueOf(s, '[data-testid="run-limit"]'), (v) => v === String(LIMIT), `limit ${LIMIT} in the form`);
  await s.click('[data-testid="run-start"]');
  await s.waitForTexts('[data-testid="run-start-status"]', (t) => t[0]?.includes(`quality run of ${cell}`));
}

async function checkDetail(s, run, kv) {
  await s.click(`[data-testid="run-row"][data-run-id="${run.id}"] [data-testid="run-row-open"]`);
  await s.waitFor(`[data-testid="run-detail"][data-run-id="${run.id}"]`, { timeoutMs: 30000 });
  const detail = await s.script(
    'const q = (t) => document.querySelector(`[data-testid="run-detail"] [data-testid="${t}"]`);' +
      'return {' +
      '  kvSize: q("run-kv-size")?.textContent.trim() ?? null,' +
      '  kvTypes: q("run-kv-types")?.textContent.trim() ?? null,' +
      '  valid: q("run-validity")?.dataset.valid ?? null,' +
      '  validity: q("run-validity")?.textContent.trim() ?? null,' +
      '  accepted: Number(q("run-verdict-accepted")?.textContent),' +
      '  rejected: Number(q("run-verdict-rejected")?.textContent),' +
      '  unvalidated: Number(q("run-verdict-unvalidated")?.textContent),' +
      '  measured: document.querySelectorAll(\'[data-testid="run-detail"] [data-testid="run-request-row"][data-warmup="false"]\').length,' +
      '  evidence: [...document.querySelectorAll(\'[data-testid="run-detail"] [data-testid="run-evidence-row"]\')].map((r) => r.dataset.kind),' +
      '};',
  );
  assert(detail.kvSize === KV_SIZE[kv], `run ${run.id} (${run.cell}) KV size ${JSON.stringify(detail.kvSize)}, expected ${KV_SIZE[kv]}`);
  assert(detail.kvTypes?.includes(`K ${kv}, V ${kv}`), `run ${run.id} KV types ${JSON.stringify(detail.kvTypes)}`);
  assert(detail.valid === 'true', `run ${run.id} (${run.cell}) validity: ${detail.validity}`);
  // Every measured request has a verdict: failures are rejected, never dropped.
  assert(detail.measured === LIMIT, `run ${run.id} lists ${detail.measured} measured requests, expected ${LIMIT}`);
  assert(
    detail.accepted + detail.rejected === LIMIT && detail.unvalidated === 0,
    `run ${run.id} verdicts ${JSON.stringify(detail)}`,
  );
  assert(detail.evidence.includes('startup_log'), `run ${run.id} evidence ${JSON.stringify(detail.evidence)}`);
}

/** What the open run detail shows of its verdicts. */
function verdictsShown(s) {
  return s.script(
    'const q = (t) => document.querySelector(`[data-testid="run-detail"] [data-testid="${t}"]`);' +
      'return {' +
      '  withheld: q("run-verdicts-withheld")?.textContent.replace(/\\s+/g, " ").trim() ?? null,' +
      '  link: q("run-verdicts-go-policy")?.getAttribute("href") ?? null,' +
      '  accepted: q("run-verdict-accepted")?.textContent.trim() ?? null,' +
      '  rowVerdicts: [...document.querySelectorAll(\'[data-testid="run-detail"] [data-testid="run-request-verdict"]\')].length,' +
      '  rowsWithheld: [...document.querySelectorAll(\'[data-testid="run-detail"] [data-testid="run-request-verdict-withheld"]\')].length,' +
      '};',
  );
}

async function openFirstRun(s) {
  await waitUntil(() => s.findAll('[data-testid="run-row"]'), (rows) => rows.length === 2, 'the two recorded runs listed', 15000);
  await s.click('[data-testid="run-row"] [data-testid="run-row-open"]');
  await s.waitFor('[data-testid="run-detail"]', { timeoutMs: 30000 });
}

/** A policy whose goodput window fits a short sweep on CPU (4 s + 4 s), with an envelope bar. */
function sweepPolicy(ctx) {
  const text = readFileSync(resolve(root, 'fixtures/policies/demo-cpu.json'), 'utf8');
  const policy = JSON.parse(text);
  policy.goodput = { interval_s: 4, drain_s: 4 };
  policy.envelope = { min_good_share: 0.5 };
  const file = join(ctx.work, 'sweep-policy.json');
  writeFileSync(file, JSON.stringify(policy));
  return file;
}

export const journeys = [
  {
    name: 'runs and review before the policy is locked: no verdict, count or queue, the reason in words with a link to the policy',
    async run(ctx) {
      const db = ctx.db('withheld');
      const study = 'Recorded, not yet locked';
      recordedStudy(ctx, db, study);
      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(study));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === study);
      // The study's progress: disagreements are a result, so they are withheld, not 0.
      const review = await waitUntil(
        () => s.script('return document.querySelector(\'[data-testid="first-step"][data-step="review"]\')?.textContent.replace(/\\s+/g, " ").trim() ?? null;'),
        (t) => t !== null && t.includes('withheld'),
        'the review step of the progress',
      );
      assert(review.includes('withheld until the policy is locked'), `review step: ${review}`);

      await s.click('[data-testid="nav-runs"]');
      await s.waitFor('[data-testid="screen-runs"]');
      await openFirstRun(s);
      const before = await waitUntil(() => verdictsShown(s), (v) => v.withheld !== null, 'the verdicts withheld in the run detail');
      assert(before.withheld.includes('Verdicts are withheld until the acceptance policy is locked'), `run detail: ${before.withheld}`);
      assert(before.link === '#/policy', `link to the policy: ${before.link}`);
      assert(before.accepted === null && before.rowVerdicts === 0, `no verdict or count shown: ${JSON.stringify(before)}`);
      assert(before.rowsWithheld > 0, `each request says its verdict is withheld: ${JSON.stringify(before)}`);
      await ctx.screenshot(s, 'runs-verdicts-withheld');

      await s.click('[data-testid="nav-review"]');
      await s.waitFor('[data-testid="screen-review"]');
      const refusal = await s.waitFor('[data-testid="review-policy-not-locked"]', { timeoutMs: 30000 }).then(() =>
        s.text('[data-testid="review-policy-not-locked"]'),
      );
      assert(refusal.includes('waits for a locked acceptance policy') && refusal.includes('policy_not_locked'), `review: ${refusal}`);
      assert((await s.findAll('[data-testid="review-pair-row"]')).length === 0, 'no pair listed');
      await ctx.screenshot(s, 'review-policy-not-locked');
      // The link goes to the policy.
      await s.click('[data-testid="review-go-policy"]');
      await s.waitFor('[data-testid="screen-policy"]');

      // Locked now (after the results existed): the verdicts are shown, and the late lock is marked.
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', study, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      await s.click('[data-testid="nav-runs"]');
      await s.waitFor('[data-testid="screen-runs"]');
      await openFirstRun(s);
      const after = await waitUntil(() => verdictsShown(s), (v) => v.accepted !== null, 'the verdict counts once locked', 15000);
      assert(after.withheld === null && after.rowVerdicts > 0, `verdicts shown once locked: ${JSON.stringify(after)}`);
      await s.click('[data-testid="nav-policy"]');
      await s.waitFor('[data-testid="policy-first-lock-after-results"]', { timeoutMs: 15000 });
      await ctx.screenshot(s, 'policy-first-lock-after-results');
      await s.click('[data-testid="nav-results"]');
      await s.waitFor('[data-testid="results-first-lock-after-results"]', { timeoutMs: 60000 });
    },
  },
  {
    name: 'start f16 and q8_0 llama.cpp servers, run B0 and Q8 on them, read the KV evidence, stop both',
    async run(ctx) {
      const db = ctx.db('runs');
      const corpus = join(ctx.work, 'runs-corpus-seed-7');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      for (const path of Object.values(MANIFESTS)) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, path)]);
      }
      // Floors before results: the policy is locked before the runs, so their verdicts are shown.
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', STUDY, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      ctx.kvgate(['--db', db, 'fixtures', 'generate', '--seed', '7', '--preset', 'test-2k', '--out', corpus, '--per-stratum', '1']);

      const s = await ctx.launch(['--db', db]);
      let pids = [];
      try {
        await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
        await s.click('[data-testid="study-open"]');
        await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
        await s.click('[data-testid="nav-runs"]');
        await s.waitFor('[data-testid="screen-runs"]');
        const note = await s.text('[data-testid="local-servers-note"]');
        assert(note.includes('llama.cpp on CPU') && note.includes('not FP8'), `local servers note: ${note}`);

        // Both servers load at once; each button is busy until its server answers /health.
        await s.click('[data-testid="server-start-f16"]');
        await s.click('[data-testid="server-start-q8_0"]');
        await s.waitFor('[data-testid="server-starting-f16"]', { timeoutMs: 5000 }).catch(() => {
          /* a fast start may already be over */
        });
        const servers = await waitUntil(
          () => serversState(s),
          (st) => st.errors.length > 0 || ['f16', 'q8_0'].every((kv) => st.servers.some((x) => x.kv === kv)),
          'the f16 and q8_0 servers to be listed',
          SERVER_READY_MS,
        );
        pids = servers.servers.map((x) => x.pid);
        assert(servers.errors.length === 0, `a server did not start: ${JSON.stringify(servers.errors)}`);
        for (const server of servers.servers) {
          assert(/^http:\/\/127\.0\.0\.1:\d+$/.test(server.url), `server URL ${server.url}`);
          assert(server.log.endsWith('.log') && server.log.includes(server.kv), `server log ${server.log}`);
        }

        // Frozen manifests only are offered; both cells are frozen by the CLI above.
        await waitUntil(
          () => s.script('return [...document.querySelectorAll(\'[data-testid="run-cell"] option:not(:disabled)\')].map((o) => o.value);'),
          (cells) => cells.includes('B0') && cells.includes('Q8'),
          'the frozen cells B0 and Q8 in the form',
        );
        await startRun(s, 'B0', 'f16', corpus);
        await startRun(s, 'Q8', 'q8_0', corpus);

        // Each run is listed from its first progress report with a live bar while it runs.
        const started = await waitRuns(
          s,
          (st) => ['B0', 'Q8'].every((cell) => st.runs.some((r) => r.cell === cell)) && st.runs.some((r) => r.state === 'running' && r.progress),
          'both runs listed, one with a visible progress bar',
          120000,
        );
        const running = started.runs.find((r) => r.state === 'running' && r.progress);
        assert(/^(warm-up|measured): sent \d+ \/ \d+, finished \d+, failed \d+, elapsed /.test(running.progressText ?? ''),
          `progress text ${JSON.stringify(running.progressText)}`);
        await ctx.screenshot(s, 'runs-in-progress');

        const done = await waitRuns(
          s,
          (st) => ['B0', 'Q8'].every((cell) => st.runs.some((r) => r.cell === cell && r.state === 'completed')),
          'both runs to complete',
          RUNS_DONE_MS,
        );
        const byCell = Object.fromEntries(done.runs.map((r) => [r.cell, r]));
        for (const run of Object.values(byCell)) {
          assert(run.label.includes(`${LIMIT} items`), `run ${run.id} label ${run.label}`);
          assert(!run.progress, `run ${run.id} still shows a progress bar after completing`);
        }
        await checkDetail(s, byCell.B0, 'f16');
        await checkDetail(s, byCell.Q8, 'q8_0');
        await ctx.screenshot(s, 'runs-detail-q8');

        // Stop both servers from the window.
        for (const kv of ['f16', 'q8_0']) {
          await s.click(`[data-testid="server-row"][data-kv="${kv}"] [data-testid="server-stop"]`);
          await waitUntil(
            () => serversState(s),
            (st) => st.errors.length > 0 || !st.servers.some((x) => x.kv === kv),
            `the ${kv} server to be stopped`,
            30000,
          );
        }
        await s.waitFor('[data-testid="servers-empty"]');
        pids = [];
      } finally {
        // A failed journey must not leave llama.cpp servers running for the next ones: stop what
        // the window still lists, by PID.
        const listed = await serversState(s).then((st) => st.servers.map((x) => x.pid)).catch(() => []);
        for (const pid of new Set([...pids, ...listed])) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            /* already stopped */
          }
        }
      }
    },
  },
  {
    name: 'sweep: B0 and Q8 at two offered rates on the local f16 and q8_0 servers from the window; the envelope on Results',
    async run(ctx) {
      const db = ctx.db('sweep');
      const study = 'Sweep on CPU';
      ctx.kvgate(['--db', db, 'study', 'create', study]);
      for (const path of Object.values(MANIFESTS)) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', study, resolve(root, path)]);
      }
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', study, '--file', sweepPolicy(ctx), '--by', 'owner']);
      const s = await ctx.launch(['--db', db]);
      let pids = [];
      try {
        await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(study));
        await s.click('[data-testid="study-open"]');
        await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === study);
        await s.click('[data-testid="nav-runs"]');
        await s.waitFor('[data-testid="screen-runs"]');
        await s.click('[data-testid="server-start-f16"]');
        await s.click('[data-testid="server-start-q8_0"]');
        const servers = await waitUntil(
          () => serversState(s),
          (st) => st.errors.length > 0 || ['f16', 'q8_0'].every((kv) => st.servers.some((x) => x.kv === kv)),
          'the f16 and q8_0 servers to be listed',
          SERVER_READY_MS,
        );
        pids = servers.servers.map((x) => x.pid);
        assert(servers.errors.length === 0, `a server did not start: ${JSON.stringify(servers.errors)}`);

        // The sweep form: each frozen cell on the local server of its KV type.
        await s.click('[data-testid="sweep-form-panel"] summary');
        const cells = await waitUntil(
          () => s.script('return [...document.querySelectorAll(\'[data-testid="sweep-cell"]\')].map((r) => [r.dataset.cell, r.querySelector(\'[data-testid="sweep-cell-endpoint"]\').selectedOptions[0]?.textContent.trim()]);'),
          (c) => c.length === 2,
          'the two frozen cells in the sweep form',
        );
        assert(cells[0][0] === 'B0' && cells[0][1].startsWith('f16 local server') && cells[1][1].startsWith('q8_0 local server'),
          `sweep cells ${JSON.stringify(cells)}`);
        // A duration shorter than the policy's 4 s + 4 s is the backend's refusal, shown as it says it.
        await s.type('[data-testid="sweep-rates"]', '0.5, 1');
        await s.type('[data-testid="sweep-duration"]', '5');
        await s.type('[data-testid="sweep-runs-per-point"]', '1');
        await s.type('[data-testid="sweep-corpus"]', resolve(root, 'fixtures/demo/corpus'));
        await s.click('[data-testid="sweep-start"]');
        const refused = await s.waitFor('[data-testid="sweep-launch-error"]', { timeoutMs: 15000 }).then(() => s.text('[data-testid="sweep-launch-error"]'));
        assert(refused.includes('4 s + 4 s = 8 s') && refused.includes('found 5 s'), `refusal: ${refused}`);
        await s.type('[data-testid="sweep-duration"]', '8');
        await s.click('[data-testid="sweep-start"]');
        const done = await waitRuns(
          s,
          (st) => st.runs.length === 4 && st.runs.every((r) => r.state === 'completed'),
          'the sweep\'s four runs to complete',
          RUNS_DONE_MS,
        );
        assert(done.runs.every((r) => r.label.includes('sweep repeat 1 of 1')), `labels ${JSON.stringify(done.runs.map((r) => r.label))}`);
        await ctx.screenshot(s, 'runs-sweep-done');

        // The envelope on Results: both rates for each cell, as the CLI's analysis has them.
        const cli = JSON.parse(ctx.kvgate(['--db', db, 'analyze', '--study', study, '--json']));
        await s.click('[data-testid="nav-results"]');
        await s.waitFor('[data-testid="cell-card"][data-cell="B0"] [data-testid="cell-envelope"]', { timeoutMs: 60000 });
        for (const cell of ['B0', 'Q8']) {
          const rows = await s.script(
            'return [...document.querySelectorAll(`[data-testid="cell-card"][data-cell="${arguments[0]}"] [data-testid="envelope-row"]`)].map((r) => [r.dataset.class, r.dataset.rate]);',
            [cell],
          );
          const want = cli.cells.find((c) => c.cell === cell).envelope.map((p) => [p.class, p.offered_rps === null ? '' : String(p.offered_rps)]);
          assert(JSON.stringify(rows) === JSON.stringify(want), `${cell} envelope rows ${JSON.stringify(rows)}, CLI ${JSON.stringify(want)}`);
          assert(rows.some((r) => r[1] === '0.5') && rows.some((r) => r[1] === '1'), `${cell} rates ${JSON.stringify(rows)}`);
        }
        await s.script('document.querySelector(\'[data-testid="cell-card"][data-cell="B0"] [data-testid="cell-envelope"]\').scrollIntoView({ block: "start" });');
        await ctx.screenshot(s, 'results-envelope');

        await s.click('[data-testid="nav-runs"]');
        await s.waitFor('[data-testid="screen-runs"]');
        for (const kv of ['f16', 'q8_0']) {
          await s.click(`[data-testid="server-row"][data-kv="${kv}"] [data-testid="server-stop"]`);
          await waitUntil(() => serversState(s), (st) => !st.servers.some((x) => x.kv === kv), `the ${kv} server to be stopped`, 30000);
        }
        pids = [];
      } finally {
        const listed = await serversState(s).then((st) => st.servers.map((x) => x.pid)).catch(() => []);
        for (const pid of new Set([...pids, ...listed])) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            /* already stopped */
          }
        }
      }
    },
  },
];

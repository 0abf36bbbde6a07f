// Journey of importing results another tool wrote, on the Runs screen: a lifecycle file that
// inference-perf 0.7.0 really wrote against the local llama.cpp server (aggregates only) previewed, imported into cell B0 and listed; the same file
// refused the second time; a malformed file refused with an error naming it. Files are chosen by
// typing the path: WebDriver cannot synthesise an OS drag and drop.

import { assert, choose, valueOf, waitUntil } from '../helpers.mjs';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Imported inference-perf results';
const B0 = 'fixtures/manifests/smollm2-135m-cpu-b0.json';
// Real output of inference-perf 0.7.0 (fixtures/real-tools/, recorded by scripts/record-real-tools.sh).
const REAL = resolve(root, 'fixtures/real-tools/inference-perf-0.7.0/f16/out/stage_0_lifecycle_metrics.json');
const ENTER = '\uE007';

/** Types a path into the import form, leaves the field (its change asks for a format guess). */
async function enterPath(s, path) {
  await s.type('[data-testid="import-path"]', path);
  await waitUntil(() => valueOf(s, '[data-testid="import-path"]'), (v) => v === path, 'the path in the form');
  await s.script('document.querySelector(\'[data-testid="import-path"]\').dispatchEvent(new Event("change", { bubbles: true }));');
}

/** Submits the import form with Enter in the path field, as a keyboard user does. */
async function pressEnterInPath(s) {
  const el = await s.waitFor('[data-testid="import-path"]');
  await s.cmd('POST', `/element/${el}/value`, { text: ENTER });
}

/** Scrolls an element to the top of the window, for a screenshot that shows it. */
function show(s, testid) {
  return s.script('document.querySelector(`[data-testid="${arguments[0]}"]`)?.scrollIntoView({ block: "start" });', [testid]);
}

/** The panel's state (no key named `error`: the WebDriver client reads `value.error` as a failure). */
function panelState(s) {
  return s.script(
    'const q = (t) => document.querySelector(`[data-testid="${t}"]`);' +
      'const panel = q("import-panel");' +
      'return {' +
      '  stage: panel?.dataset.stage ?? null,' +
      '  formError: q("import-form-error")?.textContent.trim() ?? null,' +
      '  sniffError: q("import-sniff-error")?.textContent.trim() ?? null,' +
      '  preview: !!q("import-preview-result"),' +
      '  already: q("import-already")?.textContent.trim() ?? null,' +
      '  result: q("import-result")?.textContent.trim() ?? null,' +
      '};',
  );
}

async function waitPanel(s, check, what, timeoutMs = 30000) {
  return waitUntil(
    () => panelState(s),
    (st) => st.formError !== null || st.sniffError !== null || check(st),
    what,
    timeoutMs,
  );
}

export const journeys = [
  {
    name: 'imports: a real inference-perf file into B0: preview (aggregates only), import, list; refuse it again; refuse a malformed file',
    async run(ctx) {
      const db = ctx.db('imports');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, B0)]);
      const dir = join(ctx.work, 'imports');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 'stage_0_lifecycle_metrics.json');
      copyFileSync(REAL, file);
      const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
      const bytes = statSync(file).size;
      // Named like a real report (inference-perf files are recognised by name), content malformed.
      mkdirSync(join(dir, 'broken'));
      const broken = join(dir, 'broken', 'stage_1_lifecycle_metrics.json');
      writeFileSync(broken, '{"load_summary": {"count": "sixty"}');

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
      await s.click('[data-testid="nav-runs"]');
      await s.waitFor('[data-testid="import-panel"]');
      await s.waitFor('[data-testid="imports-empty"]');
      await waitUntil(
        () => s.script('return [...document.querySelectorAll(\'[data-testid="import-cell"] option\')].map((o) => o.value);'),
        (cells) => cells.includes('B0'),
        'the frozen cell B0 offered for import',
      );
      const formats = await s.script(
        'return [...document.querySelectorAll(\'[data-testid="import-format"] option\')].map((o) => o.value).filter(Boolean);',
      );
      assert(formats.length === 13 && formats.includes('inference-perf') && formats.includes('nvidia-smi') && formats.includes('lm-eval-samples') && formats.includes('inspect'), `formats offered: ${JSON.stringify(formats)}`);

      // The path typed, the format guessed from the file's name and first bytes, then Enter.
      await enterPath(s, file);
      await waitUntil(
        () => s.attr('[data-testid="import-sniffed"]', 'data-format'),
        (f) => f === 'inference-perf',
        'the format guessed as inference-perf',
      );
      assert((await valueOf(s, '[data-testid="import-format"]')) === 'inference-perf', 'the guess is preselected');
      await choose(s, '[data-testid="import-cell"]', 'B0');
      await pressEnterInPath(s);
      const previewed = await waitPanel(s, (st) => st.preview, 'the preview of the inference-perf file');
      assert(previewed.formError === null && previewed.sniffError === null, `preview failed: ${previewed.formError ?? previewed.sniffError}`);
      assert(previewed.already === null, `a fresh file is said to be imported already: ${previewed.already}`);

      const preview = await s.script(
        'const q = (t) => document.querySelector(`[data-testid="import-preview-result"] [data-testid="${t}"]`);' +
          'return {' +
          '  source: q("import-preview-source")?.textContent.trim(),' +
          '  sha256: q("import-preview-sha256")?.textContent.trim(),' +
          '  bytes: Number(q("import-preview-bytes")?.dataset.bytes),' +
          '  tool: q("import-preview-tool")?.textContent.trim(),' +
          '  parser: q("import-preview-parser")?.textContent.trim(),' +
          '  aggregatesOnly: q("import-aggregates-only")?.textContent.trim() ?? null,' +
          '  granularity: [...document.querySelectorAll(\'[data-testid="import-preview-granularity"]\')].map((b) => b.textContent.trim()),' +
          '  runAggregates: Number(q("import-preview-run-aggregates")?.textContent.replace(/,/g, "")),' +
          '  figures: [...document.querySelectorAll(\'[data-testid="import-preview-figure"]\')].map((r) => ({' +
          '    name: r.dataset.name, stat: r.dataset.stat,' +
          '    value: r.querySelector(\'[data-testid="import-preview-figure-value"]\').dataset.exact,' +
          '    unit: r.querySelector(\'[data-testid="import-preview-figure-unit"]\').textContent.trim() })),' +
          '};',
      );
      assert(preview.source === 'stage_0_lifecycle_metrics.json', `source ${preview.source}`);
      assert(preview.sha256 === sha256, `preview sha256 ${preview.sha256}, the file's is ${sha256}`);
      assert(preview.bytes === bytes, `preview bytes ${preview.bytes}, the file has ${bytes}`);
      assert(preview.tool === 'inference-perf', `tool ${preview.tool}`);
      assert(preview.parser?.includes('inference-perf'), `parser ${preview.parser}`);
      assert(preview.aggregatesOnly?.includes('Aggregates only: no per-request rows'), `notice ${preview.aggregatesOnly}`);
      assert(preview.granularity.length === 1 && preview.granularity[0] === 'aggregates only: no per-request rows',
        `granularity badges ${JSON.stringify(preview.granularity)}`);
      assert(preview.runAggregates > 0 && preview.figures.length > 0, `figures ${JSON.stringify(preview)}`);
      for (const f of preview.figures) assert(f.unit && Number.isFinite(Number(f.value)), `figure ${JSON.stringify(f)}`);
      // The preview shows a dozen headline figures, each exactly as inference-perf wrote it.
      const rate = preview.figures.find((f) => f.name === 'load_summary.achieved_rate' && f.stat === 'value');
      assert(!rate || (rate.value === '0.31184291143227166' && rate.unit === '1/s'),
        `achieved rate in the preview: ${JSON.stringify(preview.figures)}`);
      const successes = preview.figures.find((f) => f.name === 'successes' && f.stat === 'count');
      assert(!successes || (successes.value === '6' && successes.unit === 'requests'), `successes ${JSON.stringify(successes)}`);
      await show(s, 'import-preview-result');
      await ctx.screenshot(s, 'import-preview');

      // Import: stored, listed, and its run in the runs table.
      await s.click('[data-testid="import-commit"]');
      const done = await waitPanel(s, (st) => st.result !== null, 'the import to be stored');
      assert(done.formError === null, `import failed: ${done.formError}`);
      const importId = Number(await s.attr('[data-testid="import-result"]', 'data-import-id'));
      const listed = await waitUntil(
        () =>
          s.script(
            'return [...document.querySelectorAll(\'[data-testid="import-row"]\')].map((r) => ({' +
              '  id: Number(r.dataset.importId), sha256: r.dataset.sha256, cell: r.dataset.cell,' +
              '  source: r.querySelector(\'[data-testid="import-row-source"]\').textContent.trim(),' +
              '  format: r.querySelector(\'[data-testid="import-row-format"]\').textContent.trim(),' +
              '  short: r.querySelector(\'[data-testid="import-row-sha256"]\').textContent.trim(),' +
              '  title: r.querySelector(\'[data-testid="import-row-sha256"]\').getAttribute("title"),' +
              '}));',
          ),
        (rows) => rows.length === 1,
        'the import listed',
      );
      const [row] = listed;
      assert(row.id === importId && row.cell === 'B0' && row.source === 'stage_0_lifecycle_metrics.json', `row ${JSON.stringify(row)}`);
      assert(row.format.startsWith('inference-perf') && row.title === sha256 && sha256.startsWith(row.short), `row ${JSON.stringify(row)}`);
      const run = await waitUntil(
        () =>
          s.script(
            'const r = document.querySelector(\'[data-testid="run-row"][data-provenance="imported"]\');' +
              'return r ? { id: Number(r.dataset.runId), cell: r.dataset.cell, granularity: r.dataset.granularity,' +
              '  importId: Number(r.dataset.importId),' +
              '  badge: r.querySelector(\'[data-testid="run-row-granularity"]\')?.textContent.trim(),' +
              '  provenance: r.querySelector(\'[data-testid="run-row-provenance"]\')?.textContent.trim() } : null;',
          ),
        (r) => r !== null,
        'the imported run in the runs table',
      );
      assert(run.cell === 'B0' && run.granularity === 'aggregate' && run.importId === importId, `run ${JSON.stringify(run)}`);
      assert(run.provenance === 'imported' && run.badge === 'aggregates only: no per-request rows', `run ${JSON.stringify(run)}`);
      await s.click(`[data-testid="run-row"][data-run-id="${run.id}"] [data-testid="run-row-open"]`);
      await s.waitFor(`[data-testid="run-detail"][data-run-id="${run.id}"]`);
      const detail = await s.script(
        'const q = (t) => document.querySelector(`[data-testid="run-detail"] [data-testid="${t}"]`);' +
          'const c = document.querySelector(\'[data-testid="run-aggregate"][data-name="successes"][data-stat="count"]\');' +
          'const r = document.querySelector(\'[data-testid="run-aggregate"][data-name="load_summary.achieved_rate"][data-stat="value"]\');' +
          'return { notice: q("run-detail-aggregates-only")?.textContent.trim() ?? null,' +
          '  rate: r ? r.querySelector(\'[data-testid="run-aggregate-value"]\').dataset.exact : null,' +
          '  sha256: q("run-detail-import-sha256")?.getAttribute("title") ?? null,' +
          '  aggregates: document.querySelectorAll(\'[data-testid="run-aggregate"]\').length,' +
          '  successes: c ? c.querySelector(\'[data-testid="run-aggregate-value"]\').dataset.exact : null };',
      );
      assert(detail.notice?.includes('no per-request rows'), `detail notice ${detail.notice}`);
      assert(detail.sha256 === sha256, `detail file sha256 ${detail.sha256}`);
      assert(detail.aggregates === preview.runAggregates, `detail lists ${detail.aggregates} figures, the preview counted ${preview.runAggregates}`);
      assert(detail.successes === '6', `successes count in the detail: ${detail.successes}`);
      assert(detail.rate === '0.31184291143227166', `achieved rate in the detail: ${detail.rate}`);
      await show(s, 'run-detail');
      await ctx.screenshot(s, 'import-done');

      // The same file again: the preview says so and importing is refused.
      await s.click('[data-testid="import-preview"]');
      const again = await waitPanel(s, (st) => st.already !== null, 'the already-imported notice');
      assert(again.already.includes('Already imported') && again.already.includes(`import #${importId}`), `notice ${again.already}`);
      const disabled = await s.script('return document.querySelector(\'[data-testid="import-commit"]\').disabled;');
      assert(disabled === true, 'the Import button stays enabled for a file already imported');

      // A malformed file: refused with the backend's words, naming the file.
      await enterPath(s, broken);
      await s.click('[data-testid="import-preview"]');
      const refused = await waitUntil(() => panelState(s), (st) => st.formError !== null, 'the malformed file refused');
      assert(refused.formError.includes('stage_1_lifecycle_metrics.json') && refused.formError.includes('line 1'),
        `error does not name the file and line: ${refused.formError}`);
      assert(!refused.preview, 'a preview is shown for a malformed file');
      const imports = await s.script('return document.querySelectorAll(\'[data-testid="import-row"]\').length;');
      assert(imports === 1, `${imports} imports listed after the refusals`);
      await show(s, 'import-form-error');
      await ctx.screenshot(s, 'import-refused');
    },
  },
];

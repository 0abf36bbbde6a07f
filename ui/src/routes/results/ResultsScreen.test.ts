import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  studyResults: vi.fn(),
  exportChart: vi.fn(),
  showInFolder: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { analysis, cell, charts, results as resultsOf } from './results-fixture';
import ResultsScreen from './ResultsScreen.svelte';
import { ResultsModel } from './results.svelte';

const ipcMock = vi.mocked(ipc);
const study: Study = { id: 7, name: 'FP8 KV demo', description: '', provenance: 'synthetic_demo', created_at: '2026-03-03T08:00:00Z' };

function setup() {
  const workspace = new Workspace();
  workspace.current = study;
  workspace.studiesState = 'ready';
  const results = new ResultsModel();
  const onopenrun = vi.fn();
  const onopenpolicy = vi.fn();
  render(ResultsScreen, { workspace, results, onopenrun, onopenpolicy });
  return { results, onopenrun, onopenpolicy };
}

beforeEach(() => {
  vi.resetAllMocks();
});

describe('Results screen', () => {
  it('hides every number until the policy is locked, and leads to the Policy screen', async () => {
    ipcMock.studyResults.mockRejectedValue({ code: 'policy_not_locked', message: 'study `FP8 KV demo` has no locked acceptance policy' });
    const { onopenpolicy } = setup();
    const hidden = await screen.findByTestId('results-policy-not-locked');
    expect(hidden.textContent).toContain('Results are hidden until the acceptance policy is locked');
    expect(screen.queryByTestId('results-header')).toBeNull();
    expect(screen.queryByTestId('cell-card')).toBeNull();
    expect(document.querySelector('img')).toBeNull();
    await fireEvent.click(screen.getByTestId('results-go-policy'));
    expect(onopenpolicy).toHaveBeenCalledTimes(1);
  });

  it('shows any other refusal as an error, with no partial numbers', async () => {
    ipcMock.studyResults.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    setup();
    expect((await screen.findByTestId('results-error')).textContent).toContain('database is locked');
    expect(screen.queryByTestId('results-header')).toBeNull();
  });

  it('marks a policy first locked after results existed', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf({ policy_first_lock_after_results: true }));
    setup();
    expect((await screen.findByTestId('results-first-lock-after-results')).textContent).toContain(
      'Policy first locked after results',
    );
  });

  it('labels the data and shows the policy, the request count and the noise floor in the header', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf({ policy_changed_after_results: true }));
    setup();
    const header = await screen.findByTestId('results-header');
    expect(within(header).getByTestId('results-provenance').textContent).toBe('synthetic demo');
    expect(screen.getByTestId('results-policy').textContent).toContain('version 2');
    expect(screen.getByTestId('results-policy').textContent).toContain('f'.repeat(64));
    expect(screen.getByTestId('results-measured').textContent).toBe('120');
    expect(screen.getByTestId('results-noise-floor').textContent).toBe('flip rate 5.0% (n = 40, b = 1, c = 1)');
    expect(screen.getByTestId('results-changed-after-results').textContent).toContain('Policy changed after results');
    expect(screen.queryByTestId('results-first-lock-after-results')).toBeNull();
    // Every cell card carries the label too; every chart is the backend's drawing, which says it
    // inside the image (exports keep it).
    for (const card of screen.getAllByTestId('cell-card')) {
      expect(within(card).getByTestId('cell-provenance').textContent).toBe('synthetic demo');
    }
    const images = document.querySelectorAll('img');
    expect(images.length).toBe(7);
    for (const img of images) expect(decodeURIComponent(img.src)).toContain('Data: synthetic demo');
  });

  it('shows the paired rows on the reviewers\' labels beside the automatic ones, only when labels exist', async () => {
    const base = analysis();
    const c1 = base.cells.find((c) => c.cell === 'C1')!;
    const relabelled = c1.paired.map((r) => ({ ...r, b: 0, verdict: 'non_inferior' as const }));
    ipcMock.studyResults.mockResolvedValue({ analysis: { ...base, adjudicated_labels: 2, adjudicated: { C1: relabelled } }, charts: charts() });
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    const adjudicated = within(card).getByTestId('cell-adjudicated');
    expect(within(adjudicated).getAllByTestId('paired-row').length).toBe(relabelled.length);
    const automaticRows = within(card).getAllByTestId('paired-row').length;
    expect(automaticRows).toBeGreaterThan(within(adjudicated).getAllByTestId('paired-row').length);
  });

  it('shows no adjudicated table without labels', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    expect(within(card).queryByTestId('cell-adjudicated')).toBeNull();
  });

  it('shows an invalid cell without a score: its reasons and request counts only', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C9')!;
    expect(within(card).getByTestId('cell-validity').textContent).toBe('invalid — no score');
    expect(within(card).getByTestId('cell-invalid').textContent).toContain('no compatibility evidence');
    expect(within(card).getByTestId('count-offered').textContent).toBe('40');
    expect(within(card).queryByTestId('cell-latency')).toBeNull();
    expect(within(card).queryByTestId('cell-goodput')).toBeNull();
    expect(within(card).queryByTestId('cell-decision')).toBeNull();
    expect(within(card).queryByTestId('cell-capacity')).toBeNull();
  });

  it('shows absent latency as "absent", paired verdicts without "equivalent", and marginal strata collapsed', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    const long = within(card).getAllByTestId('latency-row').find((r) => r.dataset['class'] === 'long')!;
    expect(long.textContent).toContain('absent');
    expect(long.textContent).not.toMatch(/\b0(\.0)? ms/);
    const short = within(card).getAllByTestId('latency-row').find((r) => r.dataset['class'] === 'short')!;
    expect(short.textContent).toContain('120.5 ms');

    const rows = within(within(card).getByTestId('paired-table')).getAllByTestId('paired-row');
    expect(rows.map((r) => r.dataset['stratum'])).toEqual(['overall', 'de-long', 'numeric']);
    expect(rows[1]!.dataset['protected']).toBe('true');
    expect(within(rows[1]!).getByTestId('paired-verdict').textContent).toBe('inferior');
    expect(within(rows[0]!).getByTestId('paired-verdict').textContent).toBe('collect more evidence');
    expect(card.textContent).not.toMatch(/equivalent/i);
    const marginals = within(card).getByTestId('paired-marginals') as HTMLDetailsElement;
    expect(marginals.open).toBe(false);
    expect(within(marginals).getAllByTestId('paired-row')).toHaveLength(4);

    expect(within(card).getByTestId('cell-outcome').textContent).toContain('calibrate');
    expect(within(card).getByTestId('cell-rules').textContent).toContain('protected segment `de-long`: inferior');
    expect(within(card).getByTestId('cell-table-decision').textContent).toBe('Promote only if every protected segment passes');
    expect(within(card).getByTestId('cell-noise-floor').textContent).toContain('flip rate 5.0%');
    expect(within(card).getByTestId('floor-check').textContent).toBe('fail');
    expect(within(card).getByTestId('capacity-engine-tokens').textContent).toBe('200,000');
    expect(within(card).getByTestId('capacity-model-tokens').textContent).toBe('196,608');
    const fit = within(card).getByTestId('capacity-rollback-fit');
    expect(fit.dataset['fits']).toBe('false');
    expect(fit.textContent?.replace(/\s+/g, ' ')).toContain('Reduce admission to 21 sequences');
  });

  it('shows device memory beside KV capacity, absent parts as absent, never 0', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    const cards = await screen.findAllByTestId('cell-card');
    const b0 = cards.find((c) => c.dataset['cell'] === 'B0')!;
    expect(within(b0).getByTestId('memory-weights').textContent).toBe('92.10 MiB');
    expect(within(b0).getByTestId('memory-kv').textContent).toBe('45.00 MiB');
    expect(within(b0).getByTestId('memory-graphs').textContent).toBe('absent');
    expect(within(b0).getByTestId('memory-sources').textContent).toContain('startup log line 149');
    // No nvidia-smi file: the allocated reading is absent, not 0.
    expect(within(b0).getByTestId('memory-allocated').textContent?.trim()).toBe('absent');
    const c1 = cards.find((c) => c.dataset['cell'] === 'C1')!;
    expect(within(c1).queryByTestId('cell-device-memory')).toBeNull();
    expect(within(c1).getByTestId('cell-device-memory-absent').textContent).toContain('absent');
  });

  it('shows nvidia-smi allocated memory with its GPU count beside the startup parts', async () => {
    const results = resultsOf();
    // Synthetic: 62670 + 62001 MiB over two GPUs = 124671 MiB = 121.75 GiB.
    const memory = results.analysis!.cells.find((c) => c.cell === 'B0')!.capacity.device_memory!;
    memory.allocated_mib = 124671;
    memory.allocated_gpus = 2;
    ipcMock.studyResults.mockResolvedValue(results);
    setup();
    const cards = await screen.findAllByTestId('cell-card');
    const b0 = cards.find((c) => c.dataset['cell'] === 'B0')!;
    expect(within(b0).getByTestId('memory-allocated').textContent?.replace(/\s+/g, ' ').trim()).toBe(
      '121.75 GiB over 2 GPUs',
    );
    // The startup parts are unchanged by it.
    expect(within(b0).getByTestId('memory-kv').textContent).toBe('45.00 MiB');
  });

  it('opens the run a figure came from', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    const { onopenrun } = setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'B0')!;
    const runRow = within(card).getByTestId('goodput-run-row');
    await fireEvent.click(within(runRow).getByTestId('open-run'));
    expect(onopenrun).toHaveBeenLastCalledWith(1);
    await fireEvent.click(within(within(card).getByTestId('cell-runs')).getAllByTestId('open-run')[1]!);
    expect(onopenrun).toHaveBeenLastCalledWith(2);
  });

  it('shows each chart the backend drew as an image, with its values in words, never inlined', async () => {
    const drawn = resultsOf();
    ipcMock.studyResults.mockResolvedValue(drawn);
    setup();
    await screen.findByTestId('results-header');
    expect(document.querySelector('svg')).toBeNull();
    const shown = [
      ['forest-C1', drawn.charts.forest[0]!.segments],
      ['goodput', drawn.charts.goodput],
      ['latency', drawn.charts.latency[0]!],
      ['latency-cdf', drawn.charts.cdf[0]!],
      ['capacity', drawn.charts.capacity[0]!],
      ['load', drawn.charts.load[0]!],
    ] as const;
    for (const [id, c] of shown) {
      const frame = screen.getByTestId(`chart-${id}`);
      const img = within(frame).getByTestId(`chart-${id}-image`) as HTMLImageElement;
      expect(img.alt).toBe(c.title);
      expect(img.src.startsWith('data:image/svg+xml;charset=utf-8,')).toBe(true);
      expect(decodeURIComponent(img.src.slice(img.src.indexOf(',') + 1))).toBe(c.svg);
      expect(frame.textContent).toContain(c.note);
      expect(within(frame).getByText(`Values (${c.marks.length})`)).toBeTruthy();
    }
    const goodput = screen.getByTestId('chart-goodput');
    expect([...goodput.querySelectorAll('[data-testid="goodput-bar"]')].map((b) => b.textContent)).toEqual([
      'B0 · short: 0.500 good/s',
      'C1 · short: 0.500 good/s',
    ]);
    expect(within(goodput).getByTestId('goodput-missing').textContent).toBe('C9 (invalid — no score)');
  });

  it('switches between the drawings the controls offer', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    await screen.findByTestId('results-header');
    const forest = screen.getByTestId('chart-forest-C1');
    expect(forest.querySelectorAll('[data-testid="forest-row"]')).toHaveLength(3);
    await fireEvent.click(within(forest).getByTestId('chart-forest-C1-marginals'));
    expect(forest.querySelectorAll('[data-testid="forest-row"]')).toHaveLength(7);
    expect([...forest.querySelectorAll<HTMLElement>('[data-testid="forest-row"]')].map((r) => r.dataset['stratum'])).toContain(
      'language=de',
    );

    const latency = screen.getByTestId('chart-latency');
    const metric = within(latency).getByTestId('chart-latency-choice') as HTMLSelectElement;
    expect([...metric.options].map((o) => o.textContent)).toEqual(['TTFT', 'ITL', 'end-to-end']);
    await fireEvent.change(metric, { target: { value: '2' } });
    expect(within(latency).getByTestId('latency-line').textContent).toBe('short · B0: e2e');

    const cdf = screen.getByTestId('chart-latency-cdf');
    await fireEvent.change(within(cdf).getByTestId('chart-latency-cdf-class'), { target: { value: 'long' } });
    expect(within(cdf).queryByTestId('cdf-line')).toBeNull();
    expect(within(cdf).getByTestId('latency-cdf-missing').textContent).toBe('B0 (no distribution)');
    expect((within(cdf).getByTestId('chart-latency-cdf-image') as HTMLImageElement).alt).toBe('Chart latency-cdf-long-ttft');
  });

  it('draws the envelope of the chosen class and figure', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    setup();
    await screen.findByTestId('results-header');
    const envelope = screen.getByTestId('chart-envelope');
    const metric = within(envelope).getByTestId('chart-envelope-choice') as HTMLSelectElement;
    expect([...metric.options].map((o) => o.textContent)).toEqual([
      'useful goodput',
      'good share',
      'TTFT p90',
      'end-to-end p90',
      'cost per good response',
    ]);
    expect(within(envelope).getByTestId('envelope-point').textContent).toBe('B0 · short at 2.00 req/s: goodput');
    await fireEvent.change(metric, { target: { value: '4' } });
    expect(within(envelope).getByTestId('envelope-point').textContent).toBe('B0 · short at 2.00 req/s: cost');
    expect((within(envelope).getByTestId('chart-envelope-image') as HTMLImageElement).alt).toBe('Chart envelope-short-cost');
  });

  it('shows no envelope frame when no cell was measured at an offered rate', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf({}, { envelope: [] }));
    setup();
    await screen.findByTestId('results-header');
    expect(screen.queryByTestId('chart-envelope')).toBeNull();
  });

  it('saves a chart through the backend, as the chart shown, and shows where it went', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    const path = '/home/owner/charts/fp8-kv-demo_goodput.svg';
    ipcMock.exportChart.mockResolvedValue({ path, size: 58_417, sha256: 'a'.repeat(64) });
    ipcMock.showInFolder.mockResolvedValue(null);
    setup();
    await screen.findByTestId('results-header');
    const goodput = screen.getByTestId('chart-goodput');
    expect(within(goodput).getByTestId('chart-goodput-export-svg').textContent).toBe('Export SVG…');
    await fireEvent.click(within(goodput).getByTestId('chart-goodput-export-svg'));
    // The backend draws the chart of this spec again and asks where to save it.
    expect(ipcMock.exportChart).toHaveBeenCalledWith(analysis().study_id, charts().goodput.spec, 'svg');
    const saved = await within(goodput).findByTestId('chart-goodput-saved');
    expect(saved.textContent).toContain('SVG saved to');
    expect(within(saved).getByTestId('chart-goodput-saved-path').textContent).toBe(path);
    expect(saved.textContent).toContain(`${path} (57.05 KiB)`);
    await fireEvent.click(within(saved).getByTestId('chart-goodput-saved-show'));
    expect(ipcMock.showInFolder).toHaveBeenCalledWith(path);
  });

  it('saves the chart the controls show, as PNG too', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    ipcMock.exportChart.mockResolvedValue({ path: '/tmp/x.png', size: 10, sha256: 'b'.repeat(64) });
    setup();
    await screen.findByTestId('results-header');
    const latency = screen.getByTestId('chart-latency');
    await fireEvent.change(within(latency).getByTestId('chart-latency-choice'), { target: { value: '2' } });
    await fireEvent.click(within(latency).getByTestId('chart-latency-export-png'));
    expect(ipcMock.exportChart).toHaveBeenCalledWith(analysis().study_id, charts().latency[2]!.spec, 'png');
    expect((await within(latency).findByTestId('chart-latency-saved')).textContent).toContain('PNG saved to');
  });

  it('shows nothing saved when the dialog is cancelled, and a refusal as an error', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf());
    ipcMock.exportChart.mockResolvedValueOnce(null);
    setup();
    await screen.findByTestId('results-header');
    await fireEvent.click(screen.getByTestId('chart-goodput-export-png'));
    expect(ipcMock.exportChart).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(screen.getByTestId('chart-goodput-export-png').hasAttribute('disabled')).toBe(false));
    expect(screen.queryByTestId('chart-goodput-saved')).toBeNull();
    ipcMock.exportChart.mockRejectedValueOnce({ code: 'internal', message: 'no font is installed to draw the chart' });
    await fireEvent.click(screen.getByTestId('chart-goodput-export-png'));
    expect((await screen.findByTestId('chart-goodput-export-error')).textContent).toContain('no font is installed');
    expect(screen.queryByTestId('chart-goodput-saved')).toBeNull();
  });

  it('lists a cell a chart leaves out, saying why, and draws only the others', async () => {
    const capacity = charts().capacity.map((c) => ({
      ...c,
      marks: c.marks.filter((m) => m.cell === 'B0'),
      not_drawn: [{ cell: 'C2', why: 'KV capacity absent' }],
    }));
    ipcMock.studyResults.mockResolvedValue(resultsOf({}, { capacity }));
    setup();
    await screen.findByTestId('results-header');
    expect(screen.getByTestId('capacity-missing').textContent).toBe('C2 (KV capacity absent)');
    expect(screen.getAllByTestId('capacity-point').map((p) => p.dataset['cell'])).toEqual(['B0']);
  });

  it('shows no chart of a study without a frozen manifest, and no forest plot without a candidate', async () => {
    ipcMock.studyResults.mockResolvedValue(resultsOf({ cells: [] }, { forest: [] }));
    setup();
    expect((await screen.findByTestId('results-no-cells')).textContent).toContain('nothing to analyze');
    expect(document.querySelector('img')).toBeNull();
  });

  it('shows the envelope point by point with its knee and cost, and no envelope for a single closed-loop pass', async () => {
    const point = (rate: number, share: number, cost: number | null) => ({
      offered_rps: rate,
      offered: { kind: 'rate' as const, per_s: rate },
      admission_limit: 64,
      client_concurrency: null,
      class: 'short',
      repeats: 2,
      runs: [5, 6],
      goodput_per_s: { n: 2, mean: share, sd: 0.05, ci_low: share - 0.1, ci_high: share + 0.1 },
      good_share: share,
      good_share_repeats: { n: 2, mean: share, sd: 0, ci_low: share, ci_high: share },
      good: Math.round(share * 20),
      cohort: 20,
      slo_only: false,
      slo_share: { ttft: share, itl: null, e2e: 1 },
      ttft_ms: { p50: 100, p90: 150, p99: 200, count: 20 },
      e2e_ms: { p50: 900, p90: 1500, p99: 2000, count: 20 },
      cost_per_good_response: cost,
    });
    const b0 = cell('B0', { envelope: [point(1, 1, 0.0012345), point(2, 0.55, null)], knee_rps: 1 });
    const c1 = cell('C1', {
      envelope: [{ ...point(1, 1, null), offered_rps: null, offered: { kind: 'concurrency', requests: 1 } }],
    });
    ipcMock.studyResults.mockResolvedValue(resultsOf({ cells: [b0, c1] }));
    setup();
    const cards = await screen.findAllByTestId('cell-card');
    const b0Card = cards.find((c) => c.dataset['cell'] === 'B0')!;
    expect(within(b0Card).getByTestId('cell-knee').textContent).toContain('1.00 req/s');
    const rows = within(b0Card).getAllByTestId('envelope-row');
    expect(rows.map((r) => r.dataset['rate'])).toEqual(['1', '2']);
    const cells = [...rows[0]!.querySelectorAll('td, th')].map((c) => c.textContent?.trim());
    expect(cells).toEqual([
      '1 req/s offered',
      'short',
      '2',
      '20 / 20',
      '100.0%',
      '100.0% · absent · 100.0%',
      '1.00 ± 0.0500',
      '[0.900, 1.10]',
      '0.00123',
    ]);
    expect(rows[1]!.lastElementChild?.textContent).toBe('absent');
    // A cell measured by one closed-loop pass only has no envelope to show.
    const c1Card = cards.find((c) => c.dataset['cell'] === 'C1')!;
    expect(within(c1Card).queryByTestId('cell-envelope')).toBeNull();
  });

  it('shows each class contract as the analysis judged it, and queueing with the engine timing apart', async () => {
    const point = { offered: { kind: 'rate' as const, per_s: 2 }, admission_limit: 64, client_concurrency: null };
    const contract = (kind: 'max_error_rate' | 'min_completion_rate', limit: number, observed: number | null, passes: boolean | null) => ({
      class: 'short',
      kind,
      limit,
      point,
      runs: [3],
      count: observed === null ? 0 : Math.round(observed * 40),
      cohort: observed === null ? 0 : 40,
      observed,
      passes,
    });
    const c1 = cell('C1', {
      contracts: [contract('max_error_rate', 0.01, 0.05, false), contract('min_completion_rate', 0.9, null, null)],
    });
    ipcMock.studyResults.mockResolvedValue(resultsOf({ cells: [cell('B0'), c1] }));
    setup();
    const cards = await screen.findAllByTestId('cell-card');
    const c1Card = cards.find((c) => c.dataset['cell'] === 'C1')!;
    const rows = within(c1Card).getAllByTestId('contract-row');
    expect(rows.map((r) => [...r.querySelectorAll('th, td')].slice(0, 6).map((c) => c.textContent?.trim()))).toEqual([
      ['short', 'error rate, at most', '1.0%', '5.0%', '2 / 40', 'broken'],
      ['short', 'completion rate, at least', '90.0%', 'absent', '0 / 0', 'undecided'],
    ]);
    const b0Card = cards.find((c) => c.dataset['cell'] === 'B0')!;
    expect(within(b0Card).queryByTestId('cell-contracts')).toBeNull();
    const queue = within(b0Card).getAllByTestId('queueing-row');
    expect([...queue[0]!.querySelectorAll('th, td')].map((c) => c.textContent?.trim())).toEqual([
      'short', '32', '0.4 ms', '1.2 ms', '3.5 ms', '30', '14.2 ms', '15.1 ms', '17.9 ms',
    ]);
    expect([...queue[1]!.querySelectorAll('td')].map((c) => c.textContent?.trim())).toEqual([
      '0', 'absent', 'absent', 'absent', '0', 'absent', 'absent', 'absent',
    ]);
    expect(within(b0Card).getByTestId('cell-latency').textContent).toContain('ITL, from network chunks');
  });

  it('lists what was left unpaired, flags a run over another corpus and says why goodput is not compared', async () => {
    const unpaired = Array.from({ length: 23 }, (_, i) => ({
      key: `evaluation-7-en-short-begin-literal-present-${String(i).padStart(3, '0')}`,
      reason: i === 0 ? ('prompt_differs' as const) : ('baseline_only' as const),
      detail: i === 0 ? 'sent to B0 with prompt sha256 aaaa… and to C1 with bbbb…: the same item id, not the same prompt' : 'judged by B0 only',
    }));
    const c1 = cell('C1', {
      unpaired,
      corpus_mismatches: [{ run: 3, run_corpus_sha256: 'b'.repeat(64), manifest_corpus_sha256: 'e'.repeat(64) }],
      goodput_comparable: { comparable: false, point: null, reason: 'admission limits differ (B0 64, C1 128)' },
      other_points: [{ point: { offered: { kind: 'rate', per_s: 4 }, admission_limit: 128, client_concurrency: null }, runs: [9] }],
    });
    ipcMock.studyResults.mockResolvedValue(resultsOf({ cells: [cell('B0'), c1] }));
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    expect(within(card).getByTestId('cell-unpaired-count').textContent).toBe('23');
    const entries = within(card).getAllByTestId('unpaired-entry');
    expect(entries).toHaveLength(20);
    expect(entries[0]!.dataset['reason']).toBe('prompt_differs');
    expect(entries[0]!.textContent).toContain('same item id, another prompt');
    expect(within(card).getByTestId('cell-unpaired').textContent).toContain('and 3 more');
    expect(within(card).getByTestId('cell-corpus-mismatch').textContent).toContain("not the manifest's evaluation");
    expect(within(card).getByTestId('cell-goodput-not-compared').textContent).toContain(
      'Not compared with B0: admission limits differ (B0 64, C1 128)',
    );
    expect(within(card).getByTestId('cell-operating-point').textContent).toContain('2 req/s offered · admission limit 64');
    expect(within(card).getByTestId('cell-other-points').textContent).toContain('4 req/s offered · admission limit 128');
    // B0 with nothing unpaired shows no list.
    const b0 = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'B0')!;
    expect(within(b0).queryByTestId('cell-unpaired')).toBeNull();
    expect(within(b0).queryByTestId('cell-corpus-mismatch')).toBeNull();
  });
});

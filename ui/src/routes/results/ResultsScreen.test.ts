import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  analyzeStudy: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { analysis, cell } from './results-fixture';
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
    ipcMock.analyzeStudy.mockRejectedValue({ code: 'policy_not_locked', message: 'study `FP8 KV demo` has no locked acceptance policy' });
    const { onopenpolicy } = setup();
    const hidden = await screen.findByTestId('results-policy-not-locked');
    expect(hidden.textContent).toContain('Results are hidden until the acceptance policy is locked');
    expect(screen.queryByTestId('results-header')).toBeNull();
    expect(screen.queryByTestId('cell-card')).toBeNull();
    expect(document.querySelector('svg')).toBeNull();
    await fireEvent.click(screen.getByTestId('results-go-policy'));
    expect(onopenpolicy).toHaveBeenCalledTimes(1);
  });

  it('shows any other refusal as an error, with no partial numbers', async () => {
    ipcMock.analyzeStudy.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    setup();
    expect((await screen.findByTestId('results-error')).textContent).toContain('database is locked');
    expect(screen.queryByTestId('results-header')).toBeNull();
  });

  it('labels the data and shows the policy, the request count and the noise floor in the header', async () => {
    ipcMock.analyzeStudy.mockResolvedValue(analysis({ policy_changed_after_results: true }));
    setup();
    const header = await screen.findByTestId('results-header');
    expect(within(header).getByTestId('results-provenance').textContent).toBe('synthetic demo');
    expect(screen.getByTestId('results-policy').textContent).toContain('version 2');
    expect(screen.getByTestId('results-policy').textContent).toContain('f'.repeat(64));
    expect(screen.getByTestId('results-measured').textContent).toBe('120');
    expect(screen.getByTestId('results-noise-floor').textContent).toBe('flip rate 5.0% (n = 40, b = 1, c = 1)');
    expect(screen.getByTestId('results-changed-after-results').textContent).toContain('Policy changed after results');
    // Every cell card carries the label too, and every chart says it inside the drawing (exports keep it).
    for (const card of screen.getAllByTestId('cell-card')) {
      expect(within(card).getByTestId('cell-provenance').textContent).toBe('synthetic demo');
    }
    for (const svg of document.querySelectorAll('svg')) expect(svg.textContent).toContain('Data: synthetic demo');
  });

  it('shows the paired rows on the reviewers\' labels beside the automatic ones, only when labels exist', async () => {
    const base = analysis();
    const c1 = base.cells.find((c) => c.cell === 'C1')!;
    const relabelled = c1.paired.map((r) => ({ ...r, b: 0, verdict: 'non_inferior' as const }));
    ipcMock.analyzeStudy.mockResolvedValue({ ...base, adjudicated_labels: 2, adjudicated: { C1: relabelled } });
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    const adjudicated = within(card).getByTestId('cell-adjudicated');
    expect(within(adjudicated).getAllByTestId('paired-row').length).toBe(relabelled.length);
    const automaticRows = within(card).getAllByTestId('paired-row').length;
    expect(automaticRows).toBeGreaterThan(within(adjudicated).getAllByTestId('paired-row').length);
  });

  it('shows no adjudicated table without labels', async () => {
    ipcMock.analyzeStudy.mockResolvedValue(analysis());
    setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'C1')!;
    expect(within(card).queryByTestId('cell-adjudicated')).toBeNull();
  });

  it('shows an invalid cell without a score: its reasons and request counts only', async () => {
    ipcMock.analyzeStudy.mockResolvedValue(analysis());
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
    ipcMock.analyzeStudy.mockResolvedValue(analysis());
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

  it('opens the run a figure came from', async () => {
    ipcMock.analyzeStudy.mockResolvedValue(analysis());
    const { onopenrun } = setup();
    const card = (await screen.findAllByTestId('cell-card')).find((c) => c.dataset['cell'] === 'B0')!;
    const runRow = within(card).getByTestId('goodput-run-row');
    await fireEvent.click(within(runRow).getByTestId('open-run'));
    expect(onopenrun).toHaveBeenLastCalledWith(1);
    await fireEvent.click(within(within(card).getByTestId('cell-runs')).getAllByTestId('open-run')[1]!);
    expect(onopenrun).toHaveBeenLastCalledWith(2);
  });

  it('draws the charts, each with a title and export buttons that download a file', async () => {
    ipcMock.analyzeStudy.mockResolvedValue(analysis());
    setup();
    await screen.findByTestId('results-header');
    for (const id of ['forest-C1', 'goodput', 'latency', 'latency-cdf', 'capacity']) {
      const chart = screen.getByTestId(`chart-${id}`);
      const svg = chart.querySelector('svg')!;
      expect(svg.getAttribute('role')).toBe('img');
      expect(svg.querySelector('title')?.textContent).toBeTruthy();
      expect(svg.querySelector('desc')?.textContent).toBeTruthy();
    }
    const forest = screen.getByTestId('chart-forest-C1');
    expect(forest.querySelectorAll('[data-testid="forest-row"]')).toHaveLength(3);
    await fireEvent.click(within(forest).getByTestId('chart-forest-C1-marginals'));
    expect(forest.querySelectorAll('[data-testid="forest-row"]')).toHaveLength(7);

    const blobs: Blob[] = [];
    const createObjectURL = vi.fn((blob: Blob) => {
      blobs.push(blob);
      return 'blob:chart';
    });
    Object.assign(URL, { createObjectURL, revokeObjectURL: vi.fn() });
    const clicked: HTMLAnchorElement[] = [];
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push(this);
    });
    await fireEvent.click(screen.getByTestId('chart-goodput-export-svg'));
    expect(clicked[0]?.download).toBe('fp8-kv-demo_goodput.svg');
    expect(blobs[0]?.type).toBe('image/svg+xml');
    const text = await blobs[0]!.text();
    expect(text).toContain('<title');
    expect(text).toContain('Data: synthetic demo');
    click.mockRestore();
  });

  it('leaves a cell without capacity evidence out of the scatter, saying so', async () => {
    const c2 = cell('C2', { capacity: { ...cell('C2').capacity, engine_kv_tokens: null } });
    ipcMock.analyzeStudy.mockResolvedValue(analysis({ cells: [cell('B0'), c2] }));
    setup();
    await screen.findByTestId('results-header');
    expect(screen.getByTestId('capacity-missing').textContent).toBe('C2 (KV capacity absent)');
    expect(screen.getAllByTestId('capacity-point').map((p) => p.dataset['cell'])).toEqual(['B0']);
  });
});

import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ImportEvent } from '$lib/bindings/ImportEvent';
import type { ImportPreview } from '$lib/bindings/ImportPreview';
import type { ImportSummary } from '$lib/bindings/ImportSummary';
import type { LocalServer } from '$lib/bindings/LocalServer';
import type { RunDetail } from '$lib/bindings/RunDetail';
import type { RunEvent } from '$lib/bindings/RunEvent';
import type { RunSummary } from '$lib/bindings/RunSummary';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  listManifests: vi.fn(),
  listRuns: vi.fn(),
  runQuality: vi.fn(),
  runSweep: vi.fn(),
  cancelRun: vi.fn(),
  runDetail: vi.fn(),
  startLocalServer: vi.fn(),
  stopLocalServer: vi.fn(),
  localServers: vi.fn(),
  onRunProgress: vi.fn(),
  listImports: vi.fn(),
  onImportProgress: vi.fn(),
  onFileDrag: vi.fn(),
  sniffImportFormat: vi.fn(),
  previewImport: vi.fn(),
  commitImport: vi.fn(),
  cancelImport: vi.fn(),
  endpointKeyStatus: vi.fn(),
  setEndpointKey: vi.fn(),
  choosePath: vi.fn(),
  exportRunFile: vi.fn(),
  showInFolder: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import type { FileDrag } from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { ImportsModel } from './imports.svelte';
import RunsScreen from './RunsScreen.svelte';
import { RunsModel } from './runs.svelte';

const ipcMock = vi.mocked(ipc);

const study: Study = { id: 7, name: 'Q8 KV on CPU', description: '', provenance: 'user', created_at: '2026-03-03T08:00:00Z' };

function manifest(cell: string, status: StoredManifest['status']): StoredManifest {
  return {
    id: cell === 'B0' ? 1 : 2,
    study_id: 7,
    cell,
    status,
    ...(status === 'frozen' ? { digest: 'ab'.repeat(32) } : {}),
    text: '{}',
    created_at: '2026-03-04T09:00:00Z',
    updated_at: '2026-03-04T09:00:00Z',
    problems: [],
  };
}

const f16: LocalServer = {
  pid: 4242,
  kv: 'f16',
  url: 'http://127.0.0.1:41001',
  slots: 1,
  log_path: '/data/server-logs/llamacpp-f16-20260304T090000Z.log',
  model_path: '/work/.llm/models/SmolLM2-135M-Instruct.Q4_1.gguf',
  model_sha256: 'b1'.repeat(32),
  started_at: '2026-03-04T09:00:00Z',
};

function summary(id: number, state: RunSummary['state'], patch: Partial<RunSummary> = {}): RunSummary {
  return {
    id,
    study_id: 7,
    cell: 'B0',
    kind: 'quality',
    state,
    label: 'quality · B0 · 6 items × 1',
    provenance: 'recorded',
    started_at: '2026-03-04T09:01:00Z',
    finished_at: state === 'running' ? null : '2026-03-04T09:03:00Z',
    elapsed_ms: state === 'running' ? null : 120_000,
    planned: state === 'running' ? null : 6,
    ok: state === 'running' ? 0 : 6,
    failed: 0,
    note: null,
    config_sha256: 'cf'.repeat(32),
    config: { endpoint: { base_url: f16.url, api: 'chat', model: 'default' } },
    import_id: null,
    granularity: 'per_request',
    ...patch,
  };
}

const KV_LINE =
  'llama_kv_cache: size =   45.00 MiB (  2048 cells,  30 layers,  1/1 seqs), K (f16):   22.50 MiB, V (f16):   22.50 MiB';

function detail(patch: Partial<RunDetail> = {}): RunDetail {
  return {
    run: summary(5, 'completed'),
    requests: [
      {
        record: {
          index: 0,
          item_id: 'eval-en-short-start-extract-0',
          planned_arrival_ms: 0,
          dispatch_ms: 1,
          client_delay_ms: 1,
          first_token_ms: 301,
          chunk_times_ms: [301],
          finish_ms: 1501,
          status: 'ok',
          http_status: 200,
          error: null,
          output_text: '<img src=x onerror="alert(1)"> {"asset":"AX-104"}',
          prompt_tokens: 400,
          completion_tokens: 21,
          cached_prompt_tokens: null,
          finish_reason: 'stop',
          engine_timings: null,
        },
        ttft_ms: 300,
        e2e_ms: 1500,
        repeat: 0,
        warmup: false,
        verdict: { accepted: false, reasons: ['malformed'], fenced: false, extracted: null, detail: [] },
      },
    ],
    accepted: 4,
    rejected: 2,
    unvalidated: 0,
    validity: { valid: true, problems: [] },
    startup: {
      attention_backend: { value: 'flash_attn', line: 80, text: 'llama_context: flash_attn = enabled' },
      kv_cache_dtype: { value: 'f16', line: 91, text: KV_LINE },
      llama_kv_cache: {
        value: { size_mib: 45, cells: 2048, layers: 30, seqs: '1/1', k_type: 'f16', k_mib: 22.5, v_type: 'f16', v_mib: 22.5 },
        line: 91,
        text: KV_LINE,
      },
      more_llama_kv_caches: [],
      starts: [],
      default_scale_lines: [],
    },
    evidence: [{ kind: 'startup_log', source_name: f16.log_path, sha256: '5a'.repeat(32), bytes: 18000 }],
    metrics: null,
    aggregates: [],
    ...patch,
  };
}

let emit: (event: RunEvent) => void = () => {
  throw new Error('not subscribed');
};

function setup(current: Study | null = study): RunsModel {
  const workspace = new Workspace();
  workspace.current = current;
  workspace.studiesState = 'ready';
  const runs = new RunsModel();
  runs.start();
  const imports = new ImportsModel(() => void runs.refreshRuns());
  imports.start();
  render(RunsScreen, { workspace, runs, imports, corpusDir: '/tmp/corpus-7' });
  return runs;
}

async function flush() {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.onRunProgress.mockImplementation(async (handler) => {
    emit = handler;
    return () => {};
  });
  ipcMock.localServers.mockResolvedValue([]);
  ipcMock.listManifests.mockResolvedValue([manifest('B0', 'frozen'), manifest('C1', 'draft')]);
  ipcMock.listRuns.mockResolvedValue([]);
  ipcMock.listImports.mockResolvedValue([]);
  ipcMock.onImportProgress.mockResolvedValue(() => {});
  ipcMock.onFileDrag.mockResolvedValue(() => {});
  ipcMock.endpointKeyStatus.mockImplementation(async (url) => ({
    origin: new URL(url).origin,
    stored_in: null,
    keyring: { available: true, detail: null },
    warning: null,
  }));
});

describe('Runs screen', () => {
  it('asks for a study first, still offering the local servers', async () => {
    setup(null);
    expect((await screen.findByTestId('runs-no-study')).textContent).toContain('Open a study');
    expect(screen.getByTestId('server-start-f16')).toBeTruthy();
    expect(ipcMock.listRuns).not.toHaveBeenCalled();
  });

  it('says the local servers are llama.cpp on CPU and q8_0 is an 8-bit stand-in, not FP8', async () => {
    setup();
    const note = await screen.findByTestId('local-servers-note');
    expect(note.textContent).toContain('llama.cpp on CPU');
    expect(note.textContent).toContain('8-bit');
    expect(note.textContent).toContain('not FP8');
    expect(screen.getByTestId('server-start-f16').textContent).toBe('Start f16 server (B0 analogue)');
    expect(screen.getByTestId('server-start-q8_0').textContent).toBe('Start q8_0 server (candidate analogue)');
  });

  it('shows a server as starting until it answers, then lists it and stops it by PID', async () => {
    let resolve: (s: LocalServer) => void = () => {};
    ipcMock.startLocalServer.mockReturnValue(new Promise((r) => (resolve = r)));
    ipcMock.stopLocalServer.mockResolvedValue(null);
    setup();
    const button = await screen.findByTestId('server-start-f16');
    await fireEvent.click(button);
    expect(ipcMock.startLocalServer).toHaveBeenCalledWith('f16');
    expect(button.textContent).toBe('Starting f16 server…');
    expect((button as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('server-starting-f16')).toBeTruthy();

    resolve(f16);
    const row = await screen.findByTestId('server-row');
    expect(within(row).getByTestId('server-row-url').textContent).toBe(f16.url);
    expect(within(row).getByTestId('server-row-pid').textContent).toBe('4242');
    expect(within(row).getByTestId('server-row-log').textContent).toBe(f16.log_path);
    expect((button as HTMLButtonElement).disabled).toBe(false);

    await fireEvent.click(within(row).getByTestId('server-stop'));
    expect(ipcMock.stopLocalServer).toHaveBeenCalledWith(4242);
    await screen.findByTestId('servers-empty');
  });

  it('starts a sweep of the frozen cells on their local servers, and shows the backend\'s refusal', async () => {
    ipcMock.localServers.mockResolvedValue([f16]);
    ipcMock.listManifests.mockResolvedValue([manifest('B0', 'frozen'), { ...manifest('Q8', 'frozen'), id: 3 }]);
    ipcMock.runSweep.mockRejectedValue({
      code: 'invalid_input',
      message: 'duration: expected at least the policy\'s goodput interval plus its drain deadline, 180 s + 60 s = 240 s (goodput is good requests ÷ the interval), found 100 s',
    });
    setup();
    const panel = await screen.findByTestId('sweep-form-panel');
    const rows = await within(panel).findAllByTestId('sweep-cell');
    expect(rows.map((r) => r.dataset['cell'])).toEqual(['B0', 'Q8']);
    // B0 takes the running f16 server; no q8_0 server runs, so Q8 asks for a URL.
    const q8 = rows[1]!;
    await fireEvent.input(within(q8).getByTestId('sweep-cell-url'), { target: { value: 'http://127.0.0.1:41002' } });
    await fireEvent.input(within(q8).getByTestId('sweep-cell-log'), { target: { value: '/logs/q8.log' } });
    await fireEvent.input(within(panel).getByTestId('sweep-rates'), { target: { value: '0.02, 0.08 0.2' } });
    await fireEvent.input(within(panel).getByTestId('sweep-duration'), { target: { value: '100' } });
    await fireEvent.input(within(panel).getByTestId('sweep-corpus'), { target: { value: '/tmp/corpus-7' } });
    await fireEvent.click(within(panel).getByTestId('sweep-start'));
    expect(ipcMock.runSweep).toHaveBeenCalledWith({
      study_id: 7,
      cells: [
        { cell: 'B0', base_url: f16.url, startup_log: f16.log_path },
        { cell: 'Q8', base_url: 'http://127.0.0.1:41002', startup_log: '/logs/q8.log' },
      ],
      rates: [0.02, 0.08, 0.2],
      duration_s: 100,
      runs_per_point: 2,
      seed: 1,
      model: null,
      corpus_dir: '/tmp/corpus-7',
      scrape_interval_ms: null,
      request_deadline_s: null,
      only: null,
    });
    expect((await within(panel).findByTestId('sweep-launch-error')).textContent).toContain('180 s + 60 s = 240 s');
    // A sweep is not listed as a quality run.
    expect(screen.queryByTestId('run-launch')).toBeNull();
    // A rate that is not a number is named before anything is sent.
    await fireEvent.input(within(panel).getByTestId('sweep-rates'), { target: { value: '0.1, fast' } });
    await fireEvent.click(within(panel).getByTestId('sweep-start'));
    expect(within(panel).getByTestId('sweep-form-error').textContent).toContain('found "fast"');
    expect(ipcMock.runSweep).toHaveBeenCalledTimes(1);
  });

  it('shows why a server could not start', async () => {
    ipcMock.startLocalServer.mockRejectedValue({ code: 'not_found', message: 'no local llama.cpp install found' });
    setup();
    await fireEvent.click(await screen.findByTestId('server-start-q8_0'));
    expect((await screen.findByTestId('server-error-q8_0')).textContent).toContain('q8_0 server: no local llama.cpp install found');
  });

  it('offers frozen cells only and starts a run on a local server with its log as evidence', async () => {
    ipcMock.localServers.mockResolvedValue([f16]);
    ipcMock.runQuality.mockReturnValue(new Promise(() => {}));
    setup();
    const cell = (await screen.findByTestId('run-cell')) as HTMLSelectElement;
    await screen.findByTestId('run-drafts-note');
    const options = [...cell.options].map((o) => [o.value, o.disabled]);
    expect(options).toEqual([
      ['B0', false],
      ['C1', true],
    ]);
    expect(screen.getByTestId('run-drafts-note').textContent).toContain('Drafts cannot be run (C1)');
    expect((await screen.findByTestId('run-endpoint-url')).textContent).toBe(f16.url);

    await fireEvent.click(screen.getByTestId('run-start'));
    expect(ipcMock.runQuality).toHaveBeenCalledWith({
      study_id: 7,
      cell: 'B0',
      base_url: f16.url,
      startup_log: f16.log_path,
      corpus_dir: '/tmp/corpus-7',
      limit: 24,
      repeats: 1,
      seed: 1,
      warmup: 1,
    });
    const launch = await screen.findByTestId('run-launch');
    expect(launch.dataset.state).toBe('pending');
    // Another run may start while the first one runs.
    await fireEvent.click(screen.getByTestId('run-start'));
    expect(ipcMock.runQuality).toHaveBeenCalledTimes(2);
  });

  it('types a URL and a startup log for another endpoint, and checks the numbers first', async () => {
    setup();
    await screen.findByTestId('run-cell');
    const endpoint = screen.getByTestId('run-endpoint') as HTMLSelectElement;
    expect(endpoint.value).toBe('custom');
    await fireEvent.input(screen.getByTestId('run-base-url'), { target: { value: 'http://10.0.0.5:8000/v1' } });
    await fireEvent.input(screen.getByTestId('run-limit'), { target: { value: '0' } });
    await fireEvent.click(screen.getByTestId('run-start'));
    expect((await screen.findByTestId('run-form-error')).textContent).toContain('limit: expected a whole number of at least 1');
    expect(ipcMock.runQuality).not.toHaveBeenCalled();
  });

  it('shows where the key of the targeted endpoint is kept, and Enter in the key field saves it without starting a run', async () => {
    ipcMock.localServers.mockResolvedValue([f16]);
    ipcMock.setEndpointKey.mockResolvedValue({
      origin: f16.url,
      stored_in: 'os_keyring',
      keyring: { available: true, detail: null },
      warning: null,
    });
    setup();
    await screen.findByTestId('run-endpoint-url');
    const status = await screen.findByTestId('endpoint-key-status');
    await vi.waitFor(() => expect(status.textContent?.trim()).toBe(`No API key kept for ${f16.url} (requests carry none).`));
    expect(ipcMock.endpointKeyStatus).toHaveBeenCalledWith(f16.url);

    await fireEvent.click(screen.getByTestId('endpoint-key-toggle'));
    const input = screen.getByTestId('endpoint-key-input');
    await fireEvent.input(input, { target: { value: 'sk-local' } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(ipcMock.setEndpointKey).toHaveBeenCalledWith({ url: f16.url, key: 'sk-local', session_fallback: false });
    await vi.waitFor(() => expect(status.textContent?.trim()).toBe(`API key kept in the OS keyring for ${f16.url}.`));
    expect(ipcMock.runQuality).not.toHaveBeenCalled();
  });

  it('asks about a typed endpoint only once there is a URL', async () => {
    setup();
    await screen.findByTestId('run-base-url');
    expect(screen.queryByTestId('endpoint-key-panel')).toBeNull();
    await fireEvent.input(screen.getByTestId('run-base-url'), { target: { value: 'http://10.0.0.5:8000/v1' } });
    const status = await screen.findByTestId('endpoint-key-status');
    await vi.waitFor(() =>
      expect(status.textContent?.trim()).toBe('No API key kept for http://10.0.0.5:8000 (requests carry none).'),
    );
    expect(ipcMock.endpointKeyStatus.mock.calls).toEqual([['http://10.0.0.5:8000/v1']]);
  });

  it('keeps the reason when a run cannot start', async () => {
    ipcMock.localServers.mockResolvedValue([f16]);
    ipcMock.runQuality.mockRejectedValue({ code: 'invalid_input', message: 'corpus /tmp/corpus-7: no items.jsonl' });
    setup();
    await screen.findByTestId('run-endpoint-url');
    await fireEvent.click(screen.getByTestId('run-start'));
    const error = await screen.findByTestId('run-launch-error');
    expect(error.textContent).toContain('Quality run of B0: corpus /tmp/corpus-7: no items.jsonl');
    await fireEvent.click(screen.getByTestId('run-launch-dismiss'));
    expect(screen.queryByTestId('run-launch')).toBeNull();
  });

  it('lists a run from its first report with a live progress bar, cancels it, and refreshes when it finishes', async () => {
    setup();
    await screen.findByTestId('runs-empty');
    ipcMock.listRuns.mockResolvedValue([summary(5, 'running')]);
    emit({ run_id: 5, phase: 'warmup', progress: { planned: 1, sent: 1, finished: 0, failed: 0, elapsed_ms: 400 }, state: null });
    const bar = (await screen.findByTestId('run-progress-5')) as HTMLProgressElement;
    expect(bar.max).toBe(1);
    emit({ run_id: 5, phase: 'measured', progress: { planned: 6, sent: 3, finished: 2, failed: 1, elapsed_ms: 12_400 }, state: null });
    await flush();
    expect(bar.value).toBe(2);
    expect(bar.max).toBe(6);
    const row = screen.getByTestId('run-row');
    expect(within(row).getByTestId('run-progress-text').textContent?.trim()).toBe(
      'measured: sent 3 / 6, finished 2, failed 1, elapsed 12.4 s',
    );
    expect(within(row).getByTestId('run-row-state').textContent).toBe('running');

    ipcMock.cancelRun.mockResolvedValue(null);
    await fireEvent.click(within(row).getByTestId('run-cancel'));
    expect(ipcMock.cancelRun).toHaveBeenCalledWith(5);

    const calls = ipcMock.listRuns.mock.calls.length;
    ipcMock.listRuns.mockResolvedValue([summary(5, 'cancelled', { ok: 2, failed: 4, note: 'cancelled: a partial run' })]);
    emit({ run_id: 5, phase: 'finished', progress: { planned: 6, sent: 3, finished: 6, failed: 4, elapsed_ms: 13_000 }, state: 'cancelled' });
    await screen.findByText('cancelled', { selector: '[data-testid="run-row-state"]' });
    expect(ipcMock.listRuns.mock.calls.length).toBeGreaterThan(calls);
    expect(screen.queryByTestId('run-progress-5')).toBeNull();
    expect(within(screen.getByTestId('run-row')).getByTestId('run-row-counts').textContent?.trim()).toBe('2 / 4');
    expect(screen.getByTestId('runs-announce').textContent).toContain('Run 5 finished: cancelled');
  });

  it('sorts the runs by a column and finds them by cell, label or state', async () => {
    ipcMock.listRuns.mockResolvedValue([
      summary(3, 'completed', { cell: 'B0', elapsed_ms: 90_000, ok: 20, failed: 4 }),
      summary(4, 'failed', { cell: 'C1', label: 'quality · C1 · 24 items', elapsed_ms: null, ok: 0, failed: 24 }),
      summary(12, 'completed', { cell: 'C1', label: 'imported bench', elapsed_ms: 30_000, granularity: 'aggregate', ok: 0 }),
    ]);
    setup();
    await screen.findAllByTestId('run-row');
    const ids = () => screen.getAllByTestId('run-row').map((r) => r.dataset['runId']);
    expect(ids()).toEqual(['3', '4', '12']);

    await fireEvent.click(screen.getByTestId('runs-sort-id'));
    expect(ids()).toEqual(['12', '4', '3']);
    await fireEvent.click(screen.getByTestId('runs-sort-elapsed'));
    // Longest first; a run without an elapsed time is last, not shortest.
    expect(ids()).toEqual(['3', '12', '4']);
    await fireEvent.click(screen.getByTestId('runs-sort-elapsed'));
    expect(ids()).toEqual(['12', '3', '4']);
    // OK counts: a run with aggregates only has none to order by.
    await fireEvent.click(screen.getByTestId('runs-sort-ok'));
    expect(ids()).toEqual(['4', '3', '12']);

    const search = screen.getByTestId('runs-search');
    await fireEvent.input(search, { target: { value: 'c1 failed' } });
    expect(ids()).toEqual(['4']);
    expect(screen.getByTestId('runs-search-count').textContent).toBe('1 of 3 shown');
    await fireEvent.input(search, { target: { value: 'H100' } });
    expect(screen.queryAllByTestId('run-row')).toHaveLength(0);
    expect(screen.getByTestId('runs-no-match').textContent).toContain('H100');
  });

  it('labels a synthetic demo run as such', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(9, 'completed', { provenance: 'synthetic_demo' })]);
    setup();
    const badge = await screen.findByTestId('run-row-provenance');
    expect(badge.textContent).toBe('synthetic demo');
  });

  it('shows a run: verdicts, validity, KV size from the startup log, evidence, and requests as text', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    ipcMock.runDetail.mockResolvedValue(
      detail({
        metrics: {
          scrapes: 3,
          first_at_ms: 500,
          last_at_ms: 2500,
          counters: { generation_tokens_total: { scrapes: 3, first: 10, last: 130, increase: 120, resets: 0 } },
          gauges: { kv_cache_usage: { scrapes: 3, min: 0, max: 0.25, mean: 0.1, last: 0 } },
          restarts: [],
        },
      }),
    );
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    expect(ipcMock.runDetail).toHaveBeenCalledWith(5);
    const panel = await screen.findByTestId('run-detail');
    expect(within(panel).getByTestId('run-verdict-accepted').textContent).toBe('4');
    expect(within(panel).getByTestId('run-verdict-rejected').textContent).toBe('2');
    expect(within(panel).getByTestId('run-verdict-unvalidated').textContent).toBe('0');
    expect(within(panel).getByTestId('run-validity').dataset.valid).toBe('true');
    expect(within(panel).getByTestId('run-kv-size').textContent).toBe('45.00 MiB');
    expect(within(panel).getByTestId('run-kv-types').textContent).toContain('K f16, V f16');
    expect(within(panel).getByTestId('run-attention-backend').textContent).toBe('flash_attn');
    expect(within(panel).getByTestId('run-detail-endpoint').textContent).toBe(f16.url);
    expect(within(panel).getByTestId('run-evidence-row').dataset.kind).toBe('startup_log');
    expect(within(panel).getByTestId('run-evidence-sha256').getAttribute('title')).toBe('5a'.repeat(32));

    const request = within(panel).getByTestId('run-request-row');
    const cells = [...request.querySelectorAll('td')].map((td) => td.textContent?.trim());
    expect(cells.slice(0, 8)).toEqual(['0', 'eval-en-short-start-extract-0', '0', '', 'ok HTTP 200', '300 ms', '1.5 s', '21']);
    expect(request.querySelectorAll('td')[6]!.getAttribute('title')).toBe('1500');
    expect(within(request).getByTestId('run-request-verdict').textContent).toBe('rejected');
    const output = within(request).getByTestId('run-request-output');
    expect(output.textContent).toBe('<img src=x onerror="alert(1)"> {"asset":"AX-104"}');
    expect(panel.querySelector('img')).toBeNull();

    const gauge = within(panel).getByTestId('run-metric-gauge');
    expect([...gauge.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['kv_cache_usage', '0', '0.1', '0.25', '0']);
    const counter = within(panel).getByTestId('run-metric-counter');
    expect([...counter.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['generation_tokens_total', '120', '10', '130', '0']);
  });

  it('says in words why the verdicts are withheld before the policy is locked, with a link to it', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    const base = detail();
    const { accepted: _a, rejected: _r, unvalidated: _u, ...rest } = base;
    ipcMock.runDetail.mockResolvedValue({
      ...rest,
      withheld: 'policy_not_locked',
      requests: base.requests.map(({ verdict: _v, ...r }) => r),
    });
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    const why = within(panel).getByTestId('run-verdicts-withheld');
    expect(why.textContent).toContain('Verdicts are withheld until the acceptance policy is locked');
    expect(within(panel).getByTestId('run-verdicts-go-policy').getAttribute('href')).toBe('#/policy');
    expect(within(panel).queryByTestId('run-verdict-accepted')).toBeNull();
    expect(within(panel).queryByTestId('run-request-verdict')).toBeNull();
    expect(within(panel).getByTestId('run-request-verdict-withheld').textContent).toBe('withheld');
  });

  it('lists the warm-up items and the place in a series of cells a run recorded', async () => {
    const run = summary(5, 'completed', {
      config: {
        warmup: { requested: 2, items: ['eval-de-long-end-numeric-3'], shortfall: '2 asked for, 1 outside the measured set' },
        cell_order: { seed: 5, order: ['Q8', 'B0'], position: 1 },
      },
    });
    ipcMock.listRuns.mockResolvedValue([run]);
    ipcMock.runDetail.mockResolvedValue(detail({ run }));
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    expect(within(panel).getByTestId('run-detail-warmup').textContent).toContain('1 item outside the measured set');
    expect(within(panel).getByTestId('run-detail-warmup').textContent).toContain('eval-de-long-end-numeric-3');
    expect(within(panel).getByTestId('run-detail-warmup-shortfall').textContent).toContain('2 asked for');
    expect(within(panel).getByTestId('run-detail-cell-order').textContent).toContain('Q8 → B0 (seed 5); this run 2 of 2');
  });

  it('flags a run sent another corpus than its manifest froze, and says none for the others', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    ipcMock.runDetail.mockResolvedValue(
      detail({ corpus_mismatch: { run: 5, run_corpus_sha256: 'a'.repeat(64), manifest_corpus_sha256: 'e'.repeat(64) } }),
    );
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const flag = await screen.findByTestId('run-detail-corpus-mismatch');
    expect(flag.textContent).toContain("Another corpus than the manifest's");
    expect(flag.querySelectorAll('code')[0]!.getAttribute('title')).toBe('a'.repeat(64));
    expect(flag.querySelectorAll('code')[1]!.getAttribute('title')).toBe('e'.repeat(64));
  });

  it('shows a failed startup, the engine, every KV cache and vLLM capacity lines from the log', async () => {
    const failed = 'ERROR 03-18 06:41:51 [core.py:866] EngineCore failed to start.';
    const swa = 'llama_kv_cache: size =   40.00 MiB (  1024 cells,  20 layers,  1/1 seqs), K (f16):   20.00 MiB, V (f16):   20.00 MiB';
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    const base = detail();
    ipcMock.runDetail.mockResolvedValue(
      detail({
        startup: {
          ...base.startup!,
          more_llama_kv_caches: [
            {
              value: { size_mib: 40, cells: 1024, layers: 20, seqs: '1/1', k_type: 'f16', k_mib: 20, v_type: 'f16', v_mib: 20 },
              line: 204,
              text: swa,
            },
          ],
          engine_version: { value: '0.13.0+faa43dbf.nv26.01', line: 58, text: 'Initializing a V1 LLM engine (v0.13.0+faa43dbf.nv26.01)' },
          model: { value: 'nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8', line: 58, text: 'model=…' },
          kv_cache_tokens: { value: 208320, line: 75, text: 'GPU KV cache size: 208,320 tokens' },
          available_kv_cache_gib: { value: 11.15, line: 73, text: 'Available KV cache memory: 11.15 GiB' },
          max_concurrency: { value: [8192, 98.2], line: 76, text: 'Maximum concurrency for 8,192 tokens per request: 98.20x' },
          startup_failure: { value: failed, line: 79, text: failed },
        },
      }),
    );
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    expect(within(panel).getByTestId('run-startup-failure').textContent).toContain('The engine failed to start');
    expect(within(panel).getByTestId('run-startup-failure').textContent).toContain('log line 79');
    expect(within(panel).getByTestId('run-startup-failure-line').textContent).toBe(failed);
    expect(within(panel).getByTestId('run-engine-version').textContent).toBe('0.13.0+faa43dbf.nv26.01');
    expect(within(panel).getByTestId('run-engine-model').textContent).toBe('nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8');
    expect(within(panel).getByTestId('run-kv-more').textContent).toContain('40.00 MiB (K f16, V f16, 1,024');
    expect(within(panel).getByTestId('run-kv-more').textContent).toContain('log line 204');
    expect(within(panel).getByTestId('run-kv-tokens').textContent).toContain('208,320 tokens');
    expect(within(panel).getByTestId('run-kv-memory').textContent).toBe('11.15 GiB');
    expect(within(panel).getByTestId('run-kv-concurrency').textContent).toContain('98.2× at 8,192 tokens per request');
  });

  it('lists each compatibility problem of an invalid cell', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    ipcMock.runDetail.mockResolvedValue(
      detail({
        validity: {
          valid: false,
          problems: [
            {
              field: 'kv_dtype',
              expected: 'q8_0',
              found: 'f16',
              reason: 'the engine stored the KV cache in another precision than the manifest names',
            },
          ],
        },
        startup: null,
      }),
    );
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const validity = await screen.findByTestId('run-validity');
    expect(validity.dataset.valid).toBe('false');
    expect(validity.textContent).toContain('INVALID');
    const problem = within(validity).getByTestId('run-validity-problem');
    expect(problem.dataset.field).toBe('kv_dtype');
    expect([...problem.querySelectorAll('td')].map((td) => td.textContent)).toEqual([
      'kv_dtype',
      'q8_0',
      'f16',
      'the engine stored the KV cache in another precision than the manifest names',
    ]);
    expect(screen.getByTestId('run-startup-missing')).toBeTruthy();
  });

  it('shows why a run could not be read', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    ipcMock.runDetail.mockRejectedValue({ code: 'not_found', message: 'no run 5' });
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    expect((await screen.findByTestId('run-detail-error')).textContent).toContain('no run 5');
  });
});

const SHA = 'e3'.repeat(32);

function importSummary(patch: Partial<ImportSummary> = {}): ImportSummary {
  return {
    id: 4,
    study_id: 7,
    cell: 'B0',
    format: 'inference-perf',
    parser_version: 'kvgate-formats 1 inference-perf',
    tool: 'inference-perf',
    source_name: 'stage_0_lifecycle_metrics.json',
    sha256: SHA,
    bytes: 3487,
    imported_at: '2026-03-05T10:00:00Z',
    runs: 1,
    requests: 0,
    aggregates: 120,
    scrapes: 0,
    evidence: 0,
    warnings: [{ at: '$', message: 'the file records no wall-clock time', rows: 0 }],
    run_ids: [11],
    ...patch,
  };
}

function importPreview(patch: Partial<ImportPreview> = {}): ImportPreview {
  return {
    token: 'import-1',
    study_id: 7,
    cell: 'B0',
    format: 'inference-perf',
    parser_version: 'kvgate-formats 1 inference-perf',
    tool: 'inference-perf',
    source_name: 'stage_0_lifecycle_metrics.json',
    sha256: SHA,
    bytes: 3487,
    runs: [
      {
        label: 'inference-perf · stage 0 · 1.0 rps requested',
        granularity: 'aggregate',
        requests: 0,
        ok: 0,
        failed: 0,
        aggregates: 120,
        scrapes: 0,
        evidence: 0,
        elapsed_ms: 58510,
        figures: [
          { name: 'successes', stat: 'count', value: 60, unit: 'requests' },
          { name: 'successes.latency.request_latency', stat: 'mean', value: 0.48048226445680486, unit: 's' },
        ],
      },
    ],
    warnings: [{ at: '$.failures', message: 'no failures recorded', rows: 2 }],
    already_imported: null,
    ...patch,
  };
}

describe('Import results', () => {
  const PATH = '/tmp/e2e/stage_0_lifecycle_metrics.json';

  it('preselects the sniffed format, previews what was recognised, then imports and lists it', async () => {
    ipcMock.sniffImportFormat.mockResolvedValue('inference-perf');
    ipcMock.previewImport.mockResolvedValue(importPreview());
    ipcMock.commitImport.mockResolvedValue(importSummary());
    const runs = setup();
    const path = await screen.findByTestId('import-path');
    await screen.findByTestId('imports-empty');
    await fireEvent.input(path, { target: { value: PATH } });
    await fireEvent.change(path);
    expect(ipcMock.sniffImportFormat).toHaveBeenCalledWith(PATH);
    await screen.findByText('inference-perf', { selector: '[data-testid="import-sniffed"] strong' });
    expect((screen.getByTestId('import-format') as HTMLSelectElement).value).toBe('inference-perf');
    expect((screen.getByTestId('import-format') as HTMLSelectElement).options).toHaveLength(14);
    expect(screen.queryByTestId('import-mapping')).toBeNull();

    await fireEvent.submit(screen.getByTestId('import-form'));
    const input = ipcMock.previewImport.mock.calls[0]![0];
    expect(input).toMatchObject({ study_id: 7, cell: 'B0', format: 'inference-perf', path: PATH });
    expect(input.job).toMatch(/^import-/);
    const preview = await screen.findByTestId('import-preview-result');
    expect(within(preview).getByTestId('import-preview-sha256').textContent).toBe(SHA);
    expect(within(preview).getByTestId('import-preview-bytes').textContent).toBe('3.41 KiB');
    expect(within(preview).getByTestId('import-preview-bytes').getAttribute('title')).toBe('3,487 bytes');
    expect(within(preview).getByTestId('import-preview-bytes').dataset.bytes).toBe('3487');
    expect(within(preview).getByTestId('import-aggregates-only').textContent).toContain('Aggregates only: no per-request rows.');
    expect(within(preview).getByTestId('import-preview-granularity').textContent).toBe('aggregates only: no per-request rows');
    expect(within(preview).getByTestId('import-preview-run-counts').textContent?.trim()).toBe('n/a');
    const figures = within(preview).getAllByTestId('import-preview-figure');
    expect([...figures[0]!.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['successes', 'count', '60', 'requests']);
    const mean = within(figures[1]!).getByTestId('import-preview-figure-value');
    expect(mean.textContent).toBe('0.480482');
    expect(mean.getAttribute('title')).toBe('exact: 0.48048226445680486');
    expect(within(preview).getByTestId('import-preview-warning').textContent).toContain('no failures recorded');
    expect(within(preview).getByTestId('import-preview-warning').textContent).toContain('(2 rows)');

    ipcMock.listImports.mockResolvedValue([importSummary()]);
    ipcMock.listRuns.mockResolvedValue([summary(11, 'completed', { provenance: 'imported', import_id: 4, granularity: 'aggregate', ok: 0 })]);
    await fireEvent.click(within(preview).getByTestId('import-commit'));
    expect(ipcMock.commitImport).toHaveBeenCalledWith('import-1');
    const result = await screen.findByTestId('import-result');
    expect(result.textContent).toContain('import #4');
    expect(within(result).getByTestId('import-result-aggregates').textContent).toBe('120');
    expect(within(result).getByTestId('import-result-warning').textContent).toContain('no wall-clock time');
    const row = await screen.findByTestId('import-row');
    expect(within(row).getByTestId('import-row-sha256').textContent).toBe(SHA.slice(0, 12));
    expect(within(row).getByTestId('import-row-sha256').getAttribute('title')).toBe(SHA);
    expect(within(row).getByTestId('import-row-cell').textContent).toBe('B0');

    // Its run is listed at once, marked imported and aggregates-only.
    await runs.refreshRuns();
    const runRow = await screen.findByTestId('run-row');
    expect(within(runRow).getByTestId('run-row-provenance').textContent).toBe('imported');
    expect(within(runRow).getByTestId('run-row-granularity').textContent).toBe('aggregates only: no per-request rows');
    expect(within(runRow).getByTestId('run-row-counts').textContent?.trim()).toBe('n/a');
  });

  it('refuses a file already in the study before anything is stored', async () => {
    ipcMock.previewImport.mockResolvedValue(importPreview({ already_imported: importSummary() }));
    setup();
    await fireEvent.input(await screen.findByTestId('import-path'), { target: { value: PATH } });
    await fireEvent.change(screen.getByTestId('import-format'), { target: { value: 'inference-perf' } });
    await fireEvent.submit(screen.getByTestId('import-form'));
    const notice = await screen.findByTestId('import-already');
    expect(notice.textContent).toContain('Already imported.');
    expect(notice.textContent).toContain('import #4');
    expect((screen.getByTestId('import-commit') as HTMLButtonElement).disabled).toBe(true);
    expect(ipcMock.commitImport).not.toHaveBeenCalled();
  });

  it('shows a parse error verbatim and asks for a column mapping for CSV', async () => {
    const message =
      'broken.json, line 1, $.load_summary.count: expected a number, found a string "sixty"';
    ipcMock.previewImport.mockRejectedValue({ code: 'invalid_input', message });
    setup();
    await fireEvent.input(await screen.findByTestId('import-path'), { target: { value: '/tmp/broken.json' } });
    await fireEvent.change(screen.getByTestId('import-format'), { target: { value: 'csv' } });
    expect(await screen.findByTestId('import-mapping')).toBeTruthy();
    await fireEvent.submit(screen.getByTestId('import-form'));
    expect((await screen.findByTestId('import-form-error')).textContent).toContain('needs the dispatch column');
    expect(ipcMock.previewImport).not.toHaveBeenCalled();

    await fireEvent.change(screen.getByTestId('import-format'), { target: { value: 'inference-perf' } });
    await fireEvent.submit(screen.getByTestId('import-form'));
    expect((await screen.findByTestId('import-form-error')).textContent).toContain(message);
  });

  it('shows progress while reading and cancels without storing', async () => {
    let progress: (e: ImportEvent) => void = () => {};
    ipcMock.onImportProgress.mockImplementation(async (handler) => {
      progress = handler;
      return () => {};
    });
    let reject: (reason: unknown) => void = () => {};
    ipcMock.previewImport.mockReturnValue(new Promise((_, r) => (reject = r)));
    ipcMock.cancelImport.mockResolvedValue(null);
    setup();
    await fireEvent.input(await screen.findByTestId('import-path'), { target: { value: '/tmp/big.jsonl' } });
    await fireEvent.change(screen.getByTestId('import-format'), { target: { value: 'aiperf' } });
    await fireEvent.submit(screen.getByTestId('import-form'));
    const job = ipcMock.previewImport.mock.calls[0]![0].job!;
    progress({ job, phase: 'reading', bytes_read: 512, total_bytes: 2048, rows_stored: 0, total_rows: 0 });
    progress({ job: 'someone-else', phase: 'reading', bytes_read: 1, total_bytes: 9, rows_stored: 0, total_rows: 0 });
    await screen.findByTestId('import-progress-bar');
    await flush();
    const bar = screen.getByTestId('import-progress-bar') as HTMLProgressElement;
    expect(bar.value).toBe(512);
    expect(bar.max).toBe(2048);
    expect(screen.getByTestId('import-progress-text').textContent?.trim()).toBe('reading 512 B of 2.00 KiB');

    await fireEvent.click(screen.getByTestId('import-cancel'));
    expect(ipcMock.cancelImport).toHaveBeenCalledWith(job);
    reject({ code: 'cancelled', message: 'big.jsonl: cancelled' });
    expect((await screen.findByTestId('import-cancelled')).textContent).toContain('nothing was stored');
    expect(screen.queryByTestId('import-progress')).toBeNull();
    expect(screen.queryByTestId('import-form-error')).toBeNull();
  });

  it('takes a file dropped on the window and sniffs it', async () => {
    let drag: (d: FileDrag) => void = () => {};
    ipcMock.onFileDrag.mockImplementation(async (handler) => {
      drag = handler;
      return () => {};
    });
    ipcMock.sniffImportFormat.mockResolvedValue('aiperf');
    setup();
    await screen.findByTestId('import-path');
    await flush();
    drag({ type: 'enter', paths: ['/x/profile_export.jsonl'] });
    expect(await screen.findByTestId('import-dropzone')).toBeTruthy();
    drag({ type: 'drop', paths: ['/x/profile_export.jsonl', '/x/other.json'] });
    await flush();
    expect((screen.getByTestId('import-path') as HTMLInputElement).value).toBe('/x/profile_export.jsonl');
    expect(screen.queryByTestId('import-dropzone')).toBeNull();
    expect(screen.getByTestId('import-drop-note').textContent).toContain('2 files dropped');
    expect(ipcMock.sniffImportFormat).toHaveBeenCalledWith('/x/profile_export.jsonl');
    await screen.findByText('aiperf', { selector: '[data-testid="import-sniffed"] strong' });
  });
});

describe('Files on the Runs screen', () => {
  it('chooses the file to import with Browse, then sniffs it as if typed', async () => {
    ipcMock.choosePath.mockResolvedValue('/x/benchmark.json');
    ipcMock.sniffImportFormat.mockResolvedValue('aiperf');
    setup();
    await fireEvent.click(await screen.findByTestId('import-path-browse'));
    expect(ipcMock.choosePath).toHaveBeenCalledWith('import_file');
    await flush();
    expect((screen.getByTestId('import-path') as HTMLInputElement).value).toBe('/x/benchmark.json');
    expect(ipcMock.sniffImportFormat).toHaveBeenCalledWith('/x/benchmark.json');
  });

  it('leaves the field as it was when the dialog is cancelled', async () => {
    ipcMock.choosePath.mockResolvedValue(null);
    setup();
    await fireEvent.input(await screen.findByTestId('import-path'), { target: { value: '/typed/file.json' } });
    await fireEvent.click(screen.getByTestId('import-path-browse'));
    await flush();
    expect((screen.getByTestId('import-path') as HTMLInputElement).value).toBe('/typed/file.json');
    expect(ipcMock.sniffImportFormat).not.toHaveBeenCalled();
  });

  it('chooses the corpus folder and the startup log of a run with Browse', async () => {
    ipcMock.choosePath.mockImplementation(async (kind) => (kind === 'corpus_folder' ? '/corpora/eval-7' : '/logs/server.log'));
    setup();
    await fireEvent.click(await screen.findByTestId('run-corpus-browse'));
    await fireEvent.click(screen.getByTestId('run-startup-log-browse'));
    await flush();
    expect(ipcMock.choosePath.mock.calls).toEqual([['corpus_folder'], ['startup_log']]);
    expect((screen.getByTestId('run-corpus') as HTMLInputElement).value).toBe('/corpora/eval-7');
    expect((screen.getByTestId('run-startup-log') as HTMLInputElement).value).toBe('/logs/server.log');
  });

  it('saves a finished run as its run file where the person chooses, and shows it in its folder', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'completed')]);
    ipcMock.runDetail.mockResolvedValue(detail());
    const path = '/home/owner/run-5-b0.kvgate-run.jsonl';
    ipcMock.exportRunFile.mockResolvedValue({ path, size: 2048, sha256: 'c'.repeat(64) });
    ipcMock.showInFolder.mockResolvedValue(null);
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    await fireEvent.click(within(panel).getByTestId('run-export'));
    expect(ipcMock.exportRunFile).toHaveBeenCalledWith(5);
    const saved = await within(panel).findByTestId('run-export-saved');
    expect(saved.textContent).toContain('Run file saved to');
    expect(within(saved).getByTestId('run-export-saved-path').textContent).toBe(path);
    await fireEvent.click(within(saved).getByTestId('run-export-saved-show'));
    expect(ipcMock.showInFolder).toHaveBeenCalledWith(path);
  });

  it('exports a run only once it has finished', async () => {
    ipcMock.listRuns.mockResolvedValue([summary(5, 'running')]);
    ipcMock.runDetail.mockResolvedValue(detail({ run: { ...detail().run, state: 'running' } }));
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    expect((within(panel).getByTestId('run-export') as HTMLButtonElement).disabled).toBe(true);
  });
});

describe('An imported run', () => {
  it('says it has no per-request rows and lists the tool figures with every digit on request', async () => {
    const run = summary(11, 'completed', {
      provenance: 'imported',
      import_id: 4,
      granularity: 'aggregate',
      ok: 0,
      config: {
        import: {
          format: 'inference-perf',
          parser_version: 'kvgate-formats 1 inference-perf',
          tool: 'inference-perf',
          source_name: 'stage_0_lifecycle_metrics.json',
          source_sha256: SHA,
        },
      },
    });
    ipcMock.listRuns.mockResolvedValue([run]);
    ipcMock.runDetail.mockResolvedValue(
      detail({
        run,
        requests: [],
        accepted: 0,
        rejected: 0,
        validity: null,
        startup: null,
        evidence: [],
        aggregates: [
          { name: 'successes', stat: 'count', value: 60, unit: 'requests' },
          { name: 'load_summary.schedule_delay', stat: 'min', value: -0.0006079088198021054, unit: 's' },
        ],
      }),
    );
    setup();
    await fireEvent.click(await screen.findByTestId('run-row-open'));
    const panel = await screen.findByTestId('run-detail');
    expect(within(panel).getByTestId('run-detail-aggregates-only').textContent).toContain('no per-request rows');
    expect(within(panel).getByTestId('run-detail-granularity').textContent).toBe('aggregates only: no per-request rows');
    expect(within(panel).getByTestId('run-detail-import').textContent).toContain('import #4');
    expect(within(panel).getByTestId('run-detail-import-sha256').getAttribute('title')).toBe(SHA);
    expect(within(panel).getByTestId('run-verdicts-none')).toBeTruthy();
    expect(within(panel).getByTestId('run-validity').textContent).toContain('carries no startup log');
    expect(within(panel).getByTestId('run-requests-empty').textContent).toContain('aggregates only');

    const rows = within(panel).getAllByTestId('run-aggregate');
    expect([...rows[0]!.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['successes', 'count', '60', 'requests']);
    const value = within(rows[1]!).getByTestId('run-aggregate-value');
    expect(value.textContent).toBe('-0.000607909');
    expect(value.getAttribute('title')).toBe('exact: -0.0006079088198021054');
    await fireEvent.click(within(panel).getByTestId('run-aggregates-every-digit'));
    expect(value.textContent).toBe('-0.0006079088198021054');
  });
});

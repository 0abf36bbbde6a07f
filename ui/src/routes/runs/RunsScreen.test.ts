import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
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
  cancelRun: vi.fn(),
  runDetail: vi.fn(),
  startLocalServer: vi.fn(),
  stopLocalServer: vi.fn(),
  localServers: vi.fn(),
  onRunProgress: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import type { Wire } from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
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
  log_path: '/data/server-logs/llamacpp-f16-20260304T090000Z.log',
  model_path: '/work/.llm/models/SmolLM2-135M-Instruct.Q4_1.gguf',
  model_sha256: 'b1'.repeat(32),
  started_at: '2026-03-04T09:00:00Z',
};

function summary(id: number, state: string, patch: Partial<Wire<RunSummary>> = {}): Wire<RunSummary> {
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
    ...patch,
  };
}

const KV_LINE =
  'llama_kv_cache: size =   45.00 MiB (  2048 cells,  30 layers,  1/1 seqs), K (f16):   22.50 MiB, V (f16):   22.50 MiB';

function detail(patch: Partial<Wire<RunDetail>> = {}): Wire<RunDetail> {
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
      default_scale_lines: [],
    },
    evidence: [{ kind: 'startup_log', source_name: f16.log_path, sha256: '5a'.repeat(32), bytes: 18000 }],
    metrics: null,
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
  render(RunsScreen, { workspace, runs, corpusDir: '/tmp/corpus-7' });
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
    expect(cells.slice(0, 8)).toEqual(['0', 'eval-en-short-start-extract-0', '0', '', 'ok HTTP 200', '300.0 ms', '1500.0 ms', '21']);
    expect(within(request).getByTestId('run-request-verdict').textContent).toBe('rejected');
    const output = within(request).getByTestId('run-request-output');
    expect(output.textContent).toBe('<img src=x onerror="alert(1)"> {"asset":"AX-104"}');
    expect(panel.querySelector('img')).toBeNull();

    const gauge = within(panel).getByTestId('run-metric-gauge');
    expect([...gauge.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['kv_cache_usage', '0', '0.1', '0.25', '0']);
    const counter = within(panel).getByTestId('run-metric-counter');
    expect([...counter.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['generation_tokens_total', '120', '10', '130', '0']);
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

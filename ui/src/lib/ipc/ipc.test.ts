import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: vi.fn() }));
vi.mock('@tauri-apps/api/event', () => ({ listen: vi.fn() }));
vi.mock('@tauri-apps/api/webview', () => ({ getCurrentWebview: vi.fn() }));

import { invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { getCurrentWebview } from '@tauri-apps/api/webview';
import reviewColumns from './review-index-columns.json';
import type { ReviewIndex } from '$lib/bindings/ReviewIndex';
import type { ReviewIndexColumns } from '$lib/bindings/ReviewIndexColumns';
import {
  appInfo,
  cancelImport,
  cancelRun,
  commitImport,
  checkCorpora,
  checkRecoveryPlan,
  createStudy,
  deleteManifestDraft,
  deriveCandidate,
  choosePacketOut,
  choosePath,
  exportChart,
  exportPacket,
  exportRunFile,
  diffManifests,
  endpointKeyStatus,
  forgetEndpointKey,
  freezeManifest,
  generateFixtures,
  lastOpenedStudy,
  listImports,
  listManifests,
  listRuns,
  listStudies,
  localServers,
  manifestCapacity,
  manifestVocabulary,
  openCorpus,
  openPacket,
  openPacketReport,
  onFileDrag,
  onImportProgress,
  onRunProgress,
  openStudy,
  previewImport,
  reviewIndex,
  reviewRows,
  recordRecoveryPlan,
  recoveryStatus,
  runDetail,
  runLoad,
  runQuality,
  saveManifestDraft,
  setEndpointKey,
  showInFolder,
  sniffImportFormat,
  startLocalServer,
  stopLocalServer,
  studyResults,
  toAppError,
  validateManifest,
  verifyPacket,
} from '$lib/ipc';

const invokeMock = vi.mocked(invoke);

describe('toAppError', () => {
  it('keeps an AppError from the backend as it is', () => {
    expect(toAppError({ code: 'conflict', message: 'a study named "x" exists' })).toEqual({
      code: 'conflict',
      message: 'a study named "x" exists',
    });
  });

  it('drops fields that are not part of AppError', () => {
    expect(toAppError({ code: 'not_found', message: 'no study 9', extra: 1 })).toEqual({
      code: 'not_found',
      message: 'no study 9',
    });
  });

  it('keeps the problems the backend placed, and only well-formed ones', () => {
    const problem = { path: 'rehearsal.date', field: 'date', expected: 'a calendar day written YYYY-MM-DD', found: '""', code: 'recovery_plan' };
    expect(toAppError({ code: 'invalid_input', message: 'the recovery plan cannot be recorded', problems: [problem, { path: 1 }] })).toEqual({
      code: 'invalid_input',
      message: 'the recovery plan cannot be recorded',
      problems: [problem],
    });
    expect(toAppError({ code: 'invalid_input', message: 'x', problems: 'odd' })).toEqual({ code: 'invalid_input', message: 'x' });
  });

  it('turns a string rejection into an internal error carrying the text', () => {
    expect(toAppError('command open_study not found')).toEqual({
      code: 'internal',
      message: 'command open_study not found',
    });
  });

  it('turns an Error into an internal error carrying its message', () => {
    expect(toAppError(new TypeError('window.__TAURI_INTERNALS__ is undefined'))).toEqual({
      code: 'internal',
      message: 'window.__TAURI_INTERNALS__ is undefined',
    });
  });

  it('treats an unknown code or a non-string message as an unknown shape', () => {
    expect(toAppError({ code: 'teapot', message: 'short and stout' })).toEqual({
      code: 'internal',
      message: '{"code":"teapot","message":"short and stout"}',
    });
    expect(toAppError({ code: 'storage', message: 42 })).toEqual({
      code: 'internal',
      message: '{"code":"storage","message":42}',
    });
  });

  it('describes null and undefined rejections', () => {
    expect(toAppError(null)).toEqual({ code: 'internal', message: 'null' });
    expect(toAppError(undefined)).toEqual({ code: 'internal', message: 'undefined' });
  });
});

describe('commands', () => {
  beforeEach(() => {
    invokeMock.mockReset();
    vi.mocked(listen).mockReset();
  });

  it('calls each command by its Rust name with camelCase argument objects', async () => {
    invokeMock.mockResolvedValue(null);
    await appInfo();
    await listStudies();
    await createStudy({ name: 'fp8 kv', description: 'C1 vs B0' });
    await openStudy(7);
    await lastOpenedStudy();

    expect(invokeMock.mock.calls).toEqual([
      ['app_info', undefined],
      ['list_studies', undefined],
      ['create_study', { input: { name: 'fp8 kv', description: 'C1 vs B0' } }],
      ['open_study', { id: 7 }],
      ['last_opened_study', undefined],
    ]);
  });

  it('calls the manifest commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    await manifestVocabulary();
    await validateManifest('{"cell":"B0"}');
    await listManifests(3);
    await saveManifestDraft(3, '{"cell":"B0"}');
    await deriveCandidate(3, 'B0', 'C1');
    await freezeManifest(3, 'C1', 'ab'.repeat(32));
    await deleteManifestDraft(3, 'C1');
    await diffManifests(3, 'B0', 'C1');
    await manifestCapacity(3, 'C1');

    expect(invokeMock.mock.calls).toEqual([
      ['manifest_vocabulary', undefined],
      ['validate_manifest', { text: '{"cell":"B0"}' }],
      ['list_manifests', { studyId: 3 }],
      ['save_manifest_draft', { studyId: 3, text: '{"cell":"B0"}' }],
      ['derive_candidate', { studyId: 3, fromCell: 'B0', cell: 'C1' }],
      ['freeze_manifest', { studyId: 3, cell: 'C1', expectedDigest: 'ab'.repeat(32) }],
      ['delete_manifest_draft', { studyId: 3, cell: 'C1' }],
      ['diff_manifests', { studyId: 3, referenceCell: 'B0', candidateCell: 'C1' }],
      ['manifest_capacity', { studyId: 3, cell: 'C1' }],
    ]);
  });

  it('calls the fixture commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const request = { seed: 7, preset: 'test-2k', split: 'evaluation', per_stratum: 1, out_dir: '/tmp/c7' } as const;
    await generateFixtures(request);
    await generateFixtures({ ...request, tokenizer_path: '/models/tokenizer.json' });
    await openCorpus('/tmp/c7');
    await checkCorpora('/tmp/cal', '/tmp/c7');

    expect(invokeMock.mock.calls).toEqual([
      ['generate_fixtures', { request }],
      ['generate_fixtures', { request: { ...request, tokenizer_path: '/models/tokenizer.json' } }],
      ['open_corpus', { dir: '/tmp/c7' }],
      ['check_corpora', { a: '/tmp/cal', b: '/tmp/c7' }],
    ]);
  });

  it('calls the run and local-server commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const quality = { study_id: 3, cell: 'B0', base_url: 'http://127.0.0.1:41001', corpus_dir: '/tmp/c7', limit: 6, seed: 1 };
    const load = { study_id: 3, cell: 'Q8', base_url: 'http://127.0.0.1:41002', corpus_dir: '/tmp/c7', duration_s: 30, concurrency: 1, seed: 1 };
    await runQuality(quality);
    await runLoad(load);
    await cancelRun(11);
    await listRuns(3);
    await runDetail(11);
    await startLocalServer('q8_0');
    await stopLocalServer(4242);
    await localServers();

    expect(invokeMock.mock.calls).toEqual([
      ['run_quality', { input: quality }],
      ['run_load', { input: load }],
      ['cancel_run', { runId: 11 }],
      ['list_runs', { studyId: 3 }],
      ['run_detail', { runId: 11 }],
      ['start_local_server', { kv: 'q8_0' }],
      ['stop_local_server', { pid: 4242 }],
      ['local_servers', undefined],
    ]);
  });

  it('calls the endpoint key commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const input = { url: 'http://10.0.0.5:8000/v1', key: 'sk-test', session_fallback: true };
    await setEndpointKey(input);
    await endpointKeyStatus('http://10.0.0.5:8000/v1');
    await forgetEndpointKey('http://10.0.0.5:8000');

    expect(invokeMock.mock.calls).toEqual([
      ['set_endpoint_key', { input }],
      ['endpoint_key_status', { url: 'http://10.0.0.5:8000/v1' }],
      ['forget_endpoint_key', { url: 'http://10.0.0.5:8000' }],
    ]);
  });

  it('hands a key refusal over as an AppError', async () => {
    const message = 'no OS keyring answered (no secret service): the key for http://h:1 was not kept';
    invokeMock.mockRejectedValue({ code: 'storage', message });
    await expect(setEndpointKey({ url: 'http://h:1', key: 'sk-test', session_fallback: false })).rejects.toEqual({
      code: 'storage',
      message,
    });
  });

  it('calls the import commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const input = { study_id: 3, cell: 'B0', format: 'inference-perf' as const, path: '/tmp/s0.json', job: 'import-1' };
    await sniffImportFormat('/tmp/s0.json');
    await previewImport(input);
    await commitImport('import-1');
    await cancelImport('import-1');
    await listImports(3);

    expect(invokeMock.mock.calls).toEqual([
      ['sniff_import_format', { path: '/tmp/s0.json' }],
      ['preview_import', { input }],
      ['commit_import', { token: 'import-1' }],
      ['cancel_import', { job: 'import-1' }],
      ['list_imports', { studyId: 3 }],
    ]);
  });

  it('gives the review list back as the rows the backend built, from its columns', async () => {
    // Written by the Rust test `the_columns_give_back_every_row_exactly`: the same list both ways.
    const { columns, index } = reviewColumns as unknown as { columns: ReviewIndexColumns; index: ReviewIndex };
    expect(index.rows.length).toBeGreaterThan(0);
    expect(reviewRows(columns)).toEqual(index);
    invokeMock.mockResolvedValue(columns);
    const filter = { candidate: null, strata: {}, reason: null, agreeing_sample: 0 };
    expect(await reviewIndex(7, filter)).toEqual(index);
    expect(invokeMock.mock.calls).toEqual([['review_index', { studyId: 7, filter }]]);
    // Rows share the strata objects they name: not one object per row.
    const rows = reviewRows(columns).rows;
    const en = rows.filter((r) => r.item_id === rows[0]!.item_id);
    expect(en.length).toBeGreaterThan(1);
    expect(en[0]!.strata).toBe(en[1]!.strata);
  });

  it('calls the recovery plan commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const input = { study_id: 3, plan_json: '{"drain_deadline_s":600}', by: 'Owner' };
    await checkRecoveryPlan('{"drain_deadline_s":600}');
    await recordRecoveryPlan(input);
    await recoveryStatus(3);

    expect(invokeMock.mock.calls).toEqual([
      ['check_recovery_plan', { planJson: '{"drain_deadline_s":600}' }],
      ['record_recovery_plan', { input }],
      ['recovery_status', { studyId: 3 }],
    ]);
  });

  it('asks for the Results screen by study id', async () => {
    invokeMock.mockResolvedValue(null);
    await studyResults(3);
    expect(invokeMock.mock.calls).toEqual([['study_results', { studyId: 3 }]]);
  });

  it('calls the packet commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    const input = { study_id: 3, out: '/tmp/packet', zip: true, representative: ['en-001', 'de-002'] };
    await exportPacket(input);
    await verifyPacket('/tmp/packet.zip');
    await openPacket('/tmp/packet');

    expect(invokeMock.mock.calls).toEqual([
      ['export_packet', { input }],
      ['verify_packet', { target: '/tmp/packet.zip' }],
      ['open_packet', { target: '/tmp/packet' }],
    ]);
  });

  it('calls the file commands with the argument names the Rust commands take', async () => {
    invokeMock.mockResolvedValue(null);
    await exportChart(3, { chart: 'forest', cell: 'Q8', marginals: true }, 'png');
    await exportRunFile(7);
    await choosePacketOut(3, true);
    await choosePath('corpus_folder');
    await showInFolder('/tmp/chart.svg');
    await openPacketReport('/tmp/packet.zip');

    expect(invokeMock.mock.calls).toEqual([
      ['export_chart', { studyId: 3, spec: { chart: 'forest', cell: 'Q8', marginals: true }, format: 'png' }],
      ['export_run_file', { runId: 7 }],
      ['choose_packet_out', { studyId: 3, zip: true }],
      ['choose_path', { kind: 'corpus_folder' }],
      ['show_in_folder', { path: '/tmp/chart.svg' }],
      ['open_packet_report', { target: '/tmp/packet.zip' }],
    ]);
  });

  it('hands a cancelled dialog over as null, and a refusal as an AppError', async () => {
    invokeMock.mockResolvedValueOnce(null);
    await expect(exportChart(3, { chart: 'goodput' }, 'svg')).resolves.toBeNull();
    invokeMock.mockRejectedValueOnce({ code: 'policy_not_locked', message: 'no locked policy' });
    await expect(choosePacketOut(3, false)).rejects.toEqual({ code: 'policy_not_locked', message: 'no locked policy' });
  });

  it('hands an export refusal over as an AppError', async () => {
    invokeMock.mockRejectedValue({ code: 'conflict', message: '/tmp/packet is a non-empty folder' });
    await expect(exportPacket({ study_id: 3, out: '/tmp/packet', zip: false })).rejects.toEqual({
      code: 'conflict',
      message: '/tmp/packet is a non-empty folder',
    });
  });

  it('hands each import-progress payload to the handler', async () => {
    const listenMock = vi.mocked(listen);
    listenMock.mockResolvedValue(vi.fn());
    const handler = vi.fn();
    await onImportProgress(handler);
    expect(listenMock).toHaveBeenCalledWith('import-progress', expect.any(Function));
    const payload = { job: 'j', phase: 'reading' as const, bytes_read: 1, total_bytes: 2, rows_stored: 0, total_rows: 0 };
    listenMock.mock.calls[0]![1]({ event: 'import-progress', id: 1, payload });
    expect(handler).toHaveBeenCalledWith(payload);
  });

  it('passes dropped file paths on, without positions', async () => {
    const unlisten = vi.fn();
    let tauriHandler: (event: { payload: unknown }) => void = () => {};
    const onDragDropEvent = vi.fn(async (h: typeof tauriHandler) => {
      tauriHandler = h;
      return unlisten;
    });
    vi.mocked(getCurrentWebview).mockReturnValue({ onDragDropEvent } as unknown as ReturnType<typeof getCurrentWebview>);
    const handler = vi.fn();
    const stop = await onFileDrag(handler);
    tauriHandler({ payload: { type: 'enter', paths: ['/a.json'], position: { x: 1, y: 2 } } });
    tauriHandler({ payload: { type: 'over', position: { x: 3, y: 4 } } });
    tauriHandler({ payload: { type: 'drop', paths: ['/a.json'], position: { x: 3, y: 4 } } });
    tauriHandler({ payload: { type: 'leave' } });
    expect(handler.mock.calls.map((c) => c[0])).toEqual([
      { type: 'enter', paths: ['/a.json'] },
      { type: 'over' },
      { type: 'drop', paths: ['/a.json'] },
      { type: 'leave' },
    ]);
    stop();
    expect(unlisten).toHaveBeenCalled();
  });

  it('hands each run-progress payload to the handler', async () => {
    const listenMock = vi.mocked(listen);
    const unlisten = vi.fn();
    listenMock.mockResolvedValue(unlisten);
    const handler = vi.fn();
    await expect(onRunProgress(handler)).resolves.toBe(unlisten);
    expect(listenMock).toHaveBeenCalledWith('run-progress', expect.any(Function));
    const payload = {
      run_id: 4,
      phase: 'measured' as const,
      progress: { planned: 6, sent: 2, finished: 1, failed: 0, elapsed_ms: 900 },
      state: null,
    };
    const callback = listenMock.mock.calls[0]![1];
    callback({ event: 'run-progress', id: 1, payload });
    expect(handler).toHaveBeenCalledWith(payload);
  });

  it('returns what the backend returned', async () => {
    const study = { id: 3, name: 'a', description: '', provenance: 'user', created_at: '2026-01-01T00:00:00Z' };
    invokeMock.mockResolvedValue(study);
    await expect(openStudy(3)).resolves.toBe(study);
  });

  it('rejects with a normalised AppError', async () => {
    invokeMock.mockRejectedValueOnce({ code: 'invalid_input', message: 'name must not be empty' });
    await expect(createStudy({ name: '', description: '' })).rejects.toEqual({
      code: 'invalid_input',
      message: 'name must not be empty',
    });

    invokeMock.mockRejectedValueOnce('unexpected panic');
    await expect(listStudies()).rejects.toEqual({ code: 'internal', message: 'unexpected panic' });
  });
});

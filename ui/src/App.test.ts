import { fireEvent, render, screen } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ROUTES } from '$lib/router.svelte';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  appInfo: vi.fn(),
  listStudies: vi.fn(),
  createStudy: vi.fn(),
  openStudy: vi.fn(),
  lastOpenedStudy: vi.fn(),
  manifestVocabulary: vi.fn(),
  listManifests: vi.fn(),
  validateManifest: vi.fn(),
  manifestCapacity: vi.fn(),
  generateFixtures: vi.fn(),
  openAnyCorpus: vi.fn(),
  checkCorpora: vi.fn(),
  listRuns: vi.fn(),
  localServers: vi.fn(),
  onRunProgress: vi.fn(),
  listImports: vi.fn(),
  onImportProgress: vi.fn(),
  onFileDrag: vi.fn(),
  policyStatus: vi.fn(),
  checkPolicy: vi.fn(),
  analyzeStudy: vi.fn(),
  studyResults: vi.fn(),
  runDetail: vi.fn(),
  reviewQueue: vi.fn(),
  labelPair: vi.fn(),
  verifyAudit: vi.fn(),
  checklist: vi.fn(),
  signCheck: vi.fn(),
  decide: vi.fn(),
  exportPacket: vi.fn(),
  openPacket: vi.fn(),
  studyProgress: vi.fn(),
  onDatabaseChanged: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import App from './App.svelte';
import { results } from './routes/results/results-fixture';

const ipcMock = vi.mocked(ipc);
const study = {
  id: 4,
  name: 'FP8 KV, Llama 8B',
  description: '',
  provenance: 'user' as const,
  created_at: '2026-03-03T08:00:00Z',
};

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.appInfo.mockResolvedValue({
    version: '0.1.0',
    db_path: '/home/u/.local/share/kvgate/kvgate.db',
    db_is_default: true,
  });
  ipcMock.listStudies.mockResolvedValue([study]);
  ipcMock.lastOpenedStudy.mockResolvedValue(study);
  ipcMock.manifestVocabulary.mockResolvedValue({
    engines: [],
    decision_table: [],
    kv_capacity_caveat: '',
    coupling_warning: '',
    scale_tensor_patterns: [],
  });
  ipcMock.listManifests.mockResolvedValue([]);
  ipcMock.listRuns.mockResolvedValue([]);
  ipcMock.localServers.mockResolvedValue([]);
  ipcMock.onRunProgress.mockResolvedValue(() => {});
  ipcMock.listImports.mockResolvedValue([]);
  ipcMock.policyStatus.mockResolvedValue({ study_id: study.id, current: null, versions: [], changed_after_results: false, first_lock_after_results: false });
  ipcMock.checkPolicy.mockResolvedValue([]);
  ipcMock.analyzeStudy.mockRejectedValue({
    code: 'policy_not_locked',
    message: 'study `FP8 KV, Llama 8B` has no locked acceptance policy',
  });
  ipcMock.studyResults.mockRejectedValue({
    code: 'policy_not_locked',
    message: 'study `FP8 KV, Llama 8B` has no locked acceptance policy',
  });
  ipcMock.onImportProgress.mockResolvedValue(() => {});
  ipcMock.onFileDrag.mockResolvedValue(() => {});
  ipcMock.reviewQueue.mockResolvedValue({ study_id: study.id, seed: 's', pairs: [], disagreements: {}, disagreements_total: 0, labelled: 0 });
  ipcMock.verifyAudit.mockResolvedValue({ study_id: study.id, events: 0, intact: true, chain_break: null, tampered: [] });
  ipcMock.checklist.mockRejectedValue({
    code: 'policy_not_locked',
    message: 'study `FP8 KV, Llama 8B` has no locked acceptance policy',
  });
  ipcMock.studyProgress.mockResolvedValue({
    study_id: study.id,
    baseline_frozen: false,
    candidates_frozen: 0,
    drafts: 0,
    policy_version: null,
    cells_with_runs: 0,
    baseline_has_runs: false,
    disagreements: 0,
    disagreements_labelled: 0,
    checks_signed: 0,
    candidates_decided: 0,
    next: 'manifests',
  });
  ipcMock.onDatabaseChanged.mockResolvedValue(() => {});
});

afterEach(() => {
  window.location.hash = '';
});

/** The handler the shell gave the database watch: calling it is what a change of the file does. */
async function databaseChanged(): Promise<() => void> {
  await vi.waitFor(() => expect(ipcMock.onDatabaseChanged).toHaveBeenCalledTimes(1));
  return ipcMock.onDatabaseChanged.mock.calls[0]![0];
}

describe('App shell', () => {
  it('reads the current screen again on F5 and Ctrl+R, instead of reloading the window', async () => {
    render(App);
    await screen.findByTestId('next-step-link');
    expect(ipcMock.listStudies).toHaveBeenCalledTimes(1);
    const progressReads = ipcMock.studyProgress.mock.calls.length;

    const f5 = new KeyboardEvent('keydown', { key: 'F5', bubbles: true, cancelable: true });
    window.dispatchEvent(f5);
    expect(f5.defaultPrevented).toBe(true);
    await vi.waitFor(() => expect(ipcMock.listStudies).toHaveBeenCalledTimes(2));
    expect(ipcMock.studyProgress.mock.calls.length).toBe(progressReads + 1);
    expect(screen.getByTestId('read-again-status').textContent).toContain('Read again');

    const ctrlR = new KeyboardEvent('keydown', { key: 'r', ctrlKey: true, bubbles: true, cancelable: true });
    window.dispatchEvent(ctrlR);
    expect(ctrlR.defaultPrevented).toBe(true);
    await vi.waitFor(() => expect(ipcMock.listStudies).toHaveBeenCalledTimes(3));

    // Results: F5 runs the analysis again.
    await fireEvent.keyDown(window, { key: '6', code: 'Digit6', altKey: true });
    await screen.findByTestId('results-policy-not-locked');
    const analyses = ipcMock.studyResults.mock.calls.length;
    await fireEvent.keyDown(window, { key: 'F5' });
    await vi.waitFor(() => expect(ipcMock.studyResults.mock.calls.length).toBe(analyses + 1));
  });

  it('follows the database file: a change re-reads the lists on screen, not the analyses', async () => {
    render(App);
    const changed = await databaseChanged();
    await fireEvent.keyDown(window, { key: '5', code: 'Digit5', altKey: true });
    await screen.findByTestId('runs-empty');
    const runReads = ipcMock.listRuns.mock.calls.length;
    const importReads = ipcMock.listImports.mock.calls.length;
    ipcMock.listRuns.mockResolvedValue([]);
    changed();
    await vi.waitFor(() => expect(ipcMock.listRuns.mock.calls.length).toBe(runReads + 1));
    expect(ipcMock.listImports.mock.calls.length).toBe(importReads + 1);

    await fireEvent.keyDown(window, { key: '6', code: 'Digit6', altKey: true });
    await screen.findByTestId('results-policy-not-locked');
    const analyses = ipcMock.studyResults.mock.calls.length;
    const studyReads = ipcMock.listStudies.mock.calls.length;
    changed();
    await vi.waitFor(() => expect(ipcMock.listStudies.mock.calls.length).toBe(studyReads + 1));
    expect(ipcMock.studyResults.mock.calls.length).toBe(analyses);
  });

  it('opens every screen at its top', async () => {
    render(App);
    const main = document.getElementById('main')!;
    main.scrollTop = 600;
    expect(main.scrollTop).toBe(600);
    await fireEvent.keyDown(window, { key: '7', code: 'Digit7', altKey: true });
    await screen.findByTestId('screen-review');
    expect(main.scrollTop).toBe(0);
    main.scrollTop = 250;
    window.location.hash = '#/policy';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    await screen.findByTestId('screen-policy');
    expect(main.scrollTop).toBe(0);
  });

  it('loads app info, the studies and the last opened study at startup', async () => {
    render(App);
    expect((await screen.findByTestId('current-study')).textContent).toBe(study.name);
    expect(screen.getByTestId('db-path').textContent).toBe('/home/u/.local/share/kvgate/kvgate.db (default)');
    expect(ipcMock.appInfo).toHaveBeenCalledTimes(1);
    expect(ipcMock.listStudies).toHaveBeenCalledTimes(1);
    expect(ipcMock.lastOpenedStudy).toHaveBeenCalledTimes(1);
    expect(screen.getByTestId('screen-studies')).toBeTruthy();
  });

  it('shows a non-default database path without the marker and no current study when none was opened', async () => {
    ipcMock.appInfo.mockResolvedValue({ version: '0.1.0', db_path: '/tmp/t/kv.db', db_is_default: false });
    ipcMock.lastOpenedStudy.mockResolvedValue(null);
    render(App);
    expect((await screen.findByTestId('db-path')).textContent).toBe('/tmp/t/kv.db');
    expect(screen.queryByTestId('current-study')).toBeNull();
    expect(screen.getByText('No study open')).toBeTruthy();
  });

  it('lists the tasks in order and marks the active one', () => {
    render(App);
    const links = ROUTES.map((route) => screen.getByTestId(`nav-${route.id}`));
    expect(links.map((link) => link.textContent?.trim().replace(/\s+/g, ' '))).toEqual([
      'Studies Alt+1',
      'Manifests Alt+2',
      'Policy Alt+3',
      'Fixtures Alt+4',
      'Runs Alt+5',
      'Results Alt+6',
      'Review Alt+7',
      'Sign-off Alt+8',
      'Packet Alt+9',
    ]);
    expect(links.every((link) => link.tagName === 'A' && link.getAttribute('href')?.startsWith('#/'))).toBe(true);
    expect(screen.getByTestId('nav-studies').getAttribute('aria-current')).toBe('page');
    expect(screen.getByTestId('nav-policy').hasAttribute('aria-current')).toBe(false);
  });

  it('opens the manifests of the current study on the Manifests screen', async () => {
    render(App);
    window.location.hash = '#/manifests';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    const root = await screen.findByTestId('screen-manifests');
    expect(root.querySelector('[data-testid="not-built"]')).toBeNull();
    expect(await screen.findByTestId('manifests-empty')).toBeTruthy();
    expect(ipcMock.listManifests).toHaveBeenCalledWith(study.id);
  });

  it('subscribes to run progress at startup and lists the runs of the current study on the Runs screen', async () => {
    render(App);
    expect(ipcMock.onRunProgress).toHaveBeenCalledTimes(1);
    window.location.hash = '#/runs';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    const root = await screen.findByTestId('screen-runs');
    expect(root.querySelector('[data-testid="not-built"]')).toBeNull();
    expect(await screen.findByTestId('runs-empty')).toBeTruthy();
    expect(ipcMock.listRuns).toHaveBeenCalledWith(study.id);
    expect(ipcMock.listManifests).toHaveBeenCalledWith(study.id);
  });

  it('shows the Fixtures screen with its forms, and keeps an opened corpus while other screens are visited', async () => {
    ipcMock.openAnyCorpus.mockResolvedValue({
      kind: 'generated',
      corpus: {
      dir: '/tmp/corpora/eval-7',
      meta: {
        synthetic: true,
        generator: 'kvgate-fixtures/1',
        seed: 7,
        preset: 'test-2k',
        split: 'evaluation',
        per_stratum: 1,
        task_types: ['literal', 'numeric', 'multi_document', 'business_rule'],
        length_bounds: { short: { min: 0, max: 799 }, medium: { min: 800, max: 1299 }, long: { min: 1300, max: 1800 } },
        chat_template: 'chatml',
        item_count: 0,
        counts: { language: {}, length_class: {}, position: {}, task_type: {}, answer_kind: {}, cells: [] },
        tokenizer_sha256: '3'.repeat(64),
        worked_example_sha256: '5'.repeat(64),
        items_sha256: 'e'.repeat(64),
      },
      items: [],
      },
    });
    render(App);
    await fireEvent.keyDown(window, { key: '4', code: 'Digit4', altKey: true });
    const root = await screen.findByTestId('screen-fixtures');
    expect(root.querySelector('[data-testid="not-built"]')).toBeNull();
    expect(screen.getByTestId('fixtures-generate')).toBeTruthy();
    await fireEvent.input(screen.getByTestId('fixtures-open-dir'), { target: { value: '/tmp/corpora/eval-7' } });
    await fireEvent.click(screen.getByTestId('fixtures-open'));
    expect((await screen.findByTestId('corpus-items-sha256')).textContent).toBe('e'.repeat(64));

    await fireEvent.keyDown(window, { key: '1', code: 'Digit1', altKey: true });
    await screen.findByTestId('screen-studies');
    await fireEvent.keyDown(window, { key: '4', code: 'Digit4', altKey: true });
    expect((await screen.findByTestId('corpus-items-sha256')).textContent).toBe('e'.repeat(64));
    expect(ipcMock.openAnyCorpus).toHaveBeenCalledTimes(1);
  });

  it('hides results until a policy is locked, and leads from Results to the Policy screen', async () => {
    render(App);
    await fireEvent.keyDown(window, { key: '6', code: 'Digit6', altKey: true });
    const hidden = await screen.findByTestId('results-policy-not-locked');
    expect(hidden.textContent).toContain('hidden until the acceptance policy is locked');
    expect(screen.queryByTestId('results-header')).toBeNull();
    expect(ipcMock.studyResults).toHaveBeenCalledWith(study.id);

    await fireEvent.click(screen.getByTestId('results-go-policy'));
    expect(await screen.findByTestId('screen-policy')).toBeTruthy();
    expect(window.location.hash).toBe('#/policy');
    expect(await screen.findByTestId('policy-none')).toBeTruthy();
    expect(ipcMock.policyStatus).toHaveBeenCalledWith(study.id);
  });

  it('explains on Sign-off that the checklist waits for a locked policy, and leads to the Policy screen', async () => {
    render(App);
    await fireEvent.keyDown(window, { key: '8', code: 'Digit8', altKey: true });
    const root = await screen.findByTestId('screen-signoff');
    expect(root.querySelector('[data-testid="not-built"]')).toBeNull();
    expect((await screen.findByTestId('signoff-policy-not-locked')).textContent).toContain('locked acceptance policy');
    expect(ipcMock.checklist).toHaveBeenCalledWith(study.id);
    await fireEvent.click(screen.getByTestId('signoff-go-policy'));
    expect(await screen.findByTestId('screen-policy')).toBeTruthy();
    expect(window.location.hash).toBe('#/policy');
  });

  it('shows the Packet screen for the current study, and leads to the Policy screen when the export is refused for it', async () => {
    ipcMock.exportPacket.mockRejectedValue({
      code: 'policy_not_locked',
      message: 'study `FP8 KV, Llama 8B` has no locked acceptance policy',
    });
    render(App);
    await fireEvent.keyDown(window, { key: '9', code: 'Digit9', altKey: true });
    const root = await screen.findByTestId('screen-packet');
    expect(root.querySelector('[data-testid="not-built"]')).toBeNull();
    expect((await screen.findByTestId('packet-study')).textContent).toBe(study.name);
    await fireEvent.input(screen.getByTestId('packet-out'), { target: { value: '/tmp/packet' } });
    await fireEvent.click(screen.getByTestId('packet-export'));
    expect(ipcMock.exportPacket).toHaveBeenCalledWith({ study_id: study.id, out: '/tmp/packet', zip: false });
    await fireEvent.click(await screen.findByTestId('packet-go-policy'));
    expect(await screen.findByTestId('screen-policy')).toBeTruthy();
    expect(window.location.hash).toBe('#/policy');
  });

  it('opens the run a result came from on the Runs screen', async () => {
    ipcMock.studyResults.mockResolvedValue(results({ study_id: study.id }));
    ipcMock.runDetail.mockReturnValue(new Promise(() => {}));
    render(App);
    await fireEvent.keyDown(window, { key: '6', code: 'Digit6', altKey: true });
    const runLinks = await screen.findAllByTestId('open-run');
    const link = runLinks.find((b) => b.dataset['runId'] === '3')!;
    await fireEvent.click(link);
    expect(await screen.findByTestId('screen-runs')).toBeTruthy();
    expect(window.location.hash).toBe('#/runs');
    expect(ipcMock.runDetail).toHaveBeenCalledWith(3);
    expect((await screen.findByTestId('run-detail-loading')).textContent).toContain('Loading run 3');
  });

  it('jumps to a task with Alt+digit and moves focus to the content', async () => {
    render(App);
    await fireEvent.keyDown(window, { key: '8', code: 'Digit8', altKey: true });
    expect(await screen.findByTestId('screen-signoff')).toBeTruthy();
    expect(window.location.hash).toBe('#/signoff');
    expect(document.activeElement?.id).toBe('main');

    await fireEvent.keyDown(window, { key: '1', code: 'Digit1', altKey: true });
    expect(await screen.findByTestId('screen-studies')).toBeTruthy();

    await fireEvent.keyDown(window, { key: '3', code: 'Digit3', altKey: true, ctrlKey: true });
    expect(screen.queryByTestId('screen-policy')).toBeNull();
  });
});

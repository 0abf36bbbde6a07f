import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { formatTimestamp } from '$lib/format';
import type { Study } from '$lib/bindings/Study';
import type { StudyProgress } from '$lib/bindings/StudyProgress';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  appInfo: vi.fn(),
  listStudies: vi.fn(),
  createStudy: vi.fn(),
  openStudy: vi.fn(),
  lastOpenedStudy: vi.fn(),
  openDemo: vi.fn(),
  studyProgress: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import StudiesScreen from './StudiesScreen.svelte';

const ipcMock = vi.mocked(ipc);

const demo: Study = {
  id: 1,
  name: 'Demo: FP8 KV on 8B',
  description: 'Bundled example',
  provenance: 'synthetic_demo',
  created_at: '2026-03-01T09:00:00Z',
};
const mine: Study = {
  id: 2,
  name: 'C2 calibrated',
  description: 'per-head scales',
  provenance: 'user',
  created_at: '2026-03-02T10:30:00Z',
};
const recorded: Study = {
  id: 7,
  name: 'Demo: q8_0 KV cache on llama.cpp (recorded on CPU)',
  description: 'Recorded demo: llama.cpp on CPU',
  provenance: 'recorded_demo',
  created_at: '2026-03-04T10:30:00Z',
};

function progressOf(study_id: number, next: StudyProgress['next']): StudyProgress {
  return {
    study_id,
    baseline_frozen: true,
    candidates_frozen: 1,
    drafts: 0,
    policy_version: 1,
    cells_with_runs: 2,
    baseline_has_runs: true,
    disagreements: 3,
    disagreements_labelled: 0,
    checks_signed: 0,
    candidates_decided: 0,
    next,
  };
}

async function renderLoaded(): Promise<Workspace> {
  const workspace = new Workspace();
  render(StudiesScreen, { workspace });
  await workspace.load();
  return workspace;
}

function rowNames(): string[] {
  return screen.queryAllByTestId('study-row').map((row) => within(row).getByTestId('study-row-name').textContent ?? '');
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.appInfo.mockResolvedValue({ version: '0.1.0', db_path: '/tmp/kv.db', db_is_default: false });
  ipcMock.listStudies.mockResolvedValue([demo, mine]);
  ipcMock.lastOpenedStudy.mockResolvedValue(null);
  ipcMock.studyProgress.mockImplementation(async (id) => progressOf(id, 'review'));
});

describe('Studies screen', () => {
  it('shows a loading state, then one row per study the backend returned, list first', async () => {
    const workspace = new Workspace();
    render(StudiesScreen, { workspace });
    expect(screen.getByTestId('studies-loading').textContent).toBe('Loading studies…');

    await workspace.load();
    await screen.findAllByTestId('study-row');
    expect(rowNames()).toEqual([demo.name, mine.name]);
    const row = screen.getAllByTestId('study-row')[1]!;
    expect(within(row).getByText(formatTimestamp('2026-03-02T10:30:00Z'))).toBeTruthy();
    expect(within(row).getByTitle('2026-03-02T10:30:00Z').getAttribute('datetime')).toBe('2026-03-02T10:30:00Z');
    expect(screen.queryByTestId('studies-loading')).toBeNull();
    // The form waits behind its button; the list is what the screen opens with.
    expect(screen.queryByTestId('study-form')).toBeNull();
    expect(screen.getByTestId('study-new').getAttribute('aria-expanded')).toBe('false');
  });

  it('labels a synthetic demo study with a visible badge', async () => {
    await renderLoaded();
    const [demoRow, userRow] = await screen.findAllByTestId('study-row');
    const badge = within(demoRow!).getByTestId('provenance-badge');
    expect(badge.textContent).toBe('synthetic demo');
    expect(badge.getAttribute('title')).toBe('Generated demo data, not a recorded run');
    expect(within(userRow!).getByTestId('provenance-badge').textContent).not.toContain('synthetic');
  });

  it('shows the description once, in the current study, with its next step as a link', async () => {
    ipcMock.lastOpenedStudy.mockResolvedValue(mine);
    await renderLoaded();
    await screen.findAllByTestId('study-row');
    expect(screen.getAllByText('per-head scales')).toHaveLength(1);
    expect(screen.getByTestId('current-study-description').textContent).toBe('per-head scales');
    const link = await screen.findByTestId('next-step-link');
    expect(ipcMock.studyProgress).toHaveBeenCalledWith(2);
    expect(link.getAttribute('href')).toBe('#/review');
    expect(link.textContent).toContain('Review');
    const steps = within(screen.getByTestId('study-steps')).getAllByTestId('first-step');
    expect(steps.map((s) => s.dataset.state)).toEqual(['done', 'done', 'done', 'next', 'later', 'later']);
    expect(steps[3]!.getAttribute('aria-current')).toBe('step');
    expect(steps[3]!.textContent).toContain('0 of 3 disagreements labelled');
  });

  it('filters the list by name or description and says how many are shown', async () => {
    await renderLoaded();
    await screen.findAllByTestId('study-row');
    const search = screen.getByTestId('studies-search') as HTMLInputElement;
    await fireEvent.input(search, { target: { value: 'HEAD scales' } });
    expect(rowNames()).toEqual([mine.name]);
    expect(screen.getByTestId('studies-search-count').textContent).toBe('1 of 2 shown');
    await fireEvent.input(search, { target: { value: 'nothing like it' } });
    expect(rowNames()).toEqual([]);
    expect(screen.getByTestId('studies-no-match').textContent).toContain('nothing like it');
    await fireEvent.keyDown(search, { key: 'Escape' });
    expect(rowNames()).toEqual([demo.name, mine.name]);
  });

  it('sorts by a column and back, saying so to assistive technology', async () => {
    await renderLoaded();
    await screen.findAllByTestId('study-row');
    const byName = screen.getByTestId('studies-sort-name');
    await fireEvent.click(byName);
    expect(rowNames()).toEqual([mine.name, demo.name]);
    expect(byName.closest('th')!.getAttribute('aria-sort')).toBe('ascending');
    await fireEvent.click(byName);
    expect(rowNames()).toEqual([demo.name, mine.name]);
    expect(byName.closest('th')!.getAttribute('aria-sort')).toBe('descending');
    // Newest first on the first click of Created.
    await fireEvent.click(screen.getByTestId('studies-sort-created'));
    expect(rowNames()).toEqual([mine.name, demo.name]);
    expect(byName.closest('th')!.getAttribute('aria-sort')).toBe('none');
  });

  it('on an empty database offers the demo, the first steps as links, and the form', async () => {
    ipcMock.listStudies.mockResolvedValue([]);
    await renderLoaded();
    const welcome = await screen.findByTestId('studies-welcome');
    expect(within(welcome).getByTestId('open-demo').className).toContain('primary');
    const links = within(screen.getByTestId('first-steps')).getAllByTestId('first-step-link');
    expect(links.map((a) => [a.textContent, a.getAttribute('href')])).toEqual([
      ['Author B0 and a candidate', '#/manifests'],
      ['Lock the policy', '#/policy'],
      ['Run or import', '#/runs'],
      ['Review', '#/review'],
      ['Sign', '#/signoff'],
      ['Export', '#/packet'],
    ]);
    expect(screen.getByTestId('study-name')).toBeTruthy();
    expect(screen.queryByTestId('studies-table')).toBeNull();
  });

  it('opens the demo: it becomes the current study and the welcome gives way to the list', async () => {
    ipcMock.listStudies.mockResolvedValue([]);
    ipcMock.openDemo.mockResolvedValue(recorded);
    const workspace = await renderLoaded();
    ipcMock.listStudies.mockResolvedValue([recorded]);
    await fireEvent.click(await screen.findByTestId('open-demo'));
    await vi.waitFor(() => expect(screen.queryByTestId('studies-welcome')).toBeNull());
    expect(ipcMock.openDemo).toHaveBeenCalledTimes(1);
    expect(workspace.current).toEqual(recorded);
    expect(rowNames()).toEqual([recorded.name]);
    expect(screen.getByTestId('current-study-detail-name').textContent).toBe(recorded.name);
    await vi.waitFor(() => expect(ipcMock.studyProgress).toHaveBeenCalledWith(7));
    // A demo is there now: the toolbar offers no second one.
    expect(screen.queryByTestId('open-demo')).toBeNull();
  });

  it('shows why the demo could not be opened, and changes nothing', async () => {
    ipcMock.listStudies.mockResolvedValue([]);
    ipcMock.openDemo.mockRejectedValue({ code: 'conflict', message: 'your study "Demo" already has the demo\'s name' });
    const workspace = await renderLoaded();
    await fireEvent.click(await screen.findByTestId('open-demo'));
    expect((await screen.findByTestId('open-demo-error')).textContent).toContain("already has the demo's name");
    expect(workspace.current).toBeNull();
    expect(screen.getByTestId('studies-welcome')).toBeTruthy();
  });

  it('shows a failed list load instead of an empty list', async () => {
    ipcMock.listStudies.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    await renderLoaded();
    expect((await screen.findByTestId('studies-error')).textContent).toContain('database is locked');
    expect(screen.queryByTestId('studies-welcome')).toBeNull();
  });

  it('shows the backend error inline when create is rejected, and keeps the input', async () => {
    ipcMock.createStudy.mockRejectedValue({ code: 'conflict', message: 'a study named "C2 calibrated" exists' });
    await renderLoaded();
    await fireEvent.click(await screen.findByTestId('study-new'));

    const name = screen.getByTestId('study-name') as HTMLInputElement;
    await fireEvent.input(name, { target: { value: 'C2 calibrated' } });
    await fireEvent.click(screen.getByTestId('study-create'));

    const error = await screen.findByTestId('form-error');
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toContain('a study named "C2 calibrated" exists');
    expect(error.textContent).toContain('Not done:');
    expect(error.getAttribute('data-code')).toBe('conflict');
    expect(name.value).toBe('C2 calibrated');
    expect(ipcMock.createStudy).toHaveBeenCalledWith({ name: 'C2 calibrated', description: '' });
    expect(ipcMock.openStudy).not.toHaveBeenCalled();
  });

  it('creates a study on submit: it is listed, becomes the current study, and the form closes', async () => {
    const created: Study = { ...mine, id: 3, name: 'C1 default scales', description: 'line one' };
    ipcMock.createStudy
      .mockRejectedValueOnce({ code: 'invalid_input', message: 'name must not be empty' })
      .mockResolvedValueOnce(created);
    ipcMock.openStudy.mockResolvedValue(created);
    ipcMock.studyProgress.mockImplementation(async (id) => progressOf(id, 'manifests'));
    const workspace = await renderLoaded();
    await fireEvent.click(await screen.findByTestId('study-new'));

    const form = screen.getByTestId('study-form') as HTMLFormElement;
    await fireEvent.submit(form);
    expect((await screen.findByTestId('form-error')).textContent).toContain('name must not be empty');

    ipcMock.listStudies.mockResolvedValue([demo, mine, created]);
    await fireEvent.input(screen.getByTestId('study-name'), { target: { value: 'C1 default scales' } });
    await fireEvent.input(screen.getByTestId('study-description'), { target: { value: 'line one' } });
    await fireEvent.submit(form);

    await vi.waitFor(() => expect(screen.queryByTestId('study-form')).toBeNull());
    expect(ipcMock.createStudy).toHaveBeenLastCalledWith({ name: 'C1 default scales', description: 'line one' });
    expect(ipcMock.openStudy).toHaveBeenCalledWith(3);
    expect(workspace.current).toEqual(created);
    expect(screen.getAllByTestId('study-row')).toHaveLength(3);
    expect(screen.getAllByTestId('study-row')[2]!.getAttribute('aria-current')).toBe('true');
    const link = await screen.findByTestId('next-step-link');
    expect(link.getAttribute('href')).toBe('#/manifests');
  });

  it('opens a study and shows it in the detail panel', async () => {
    ipcMock.openStudy.mockResolvedValue(demo);
    await renderLoaded();
    const [demoRow] = await screen.findAllByTestId('study-row');
    await fireEvent.click(within(demoRow!).getByTestId('study-open'));

    expect(ipcMock.openStudy).toHaveBeenCalledWith(1);
    const detail = screen.getByTestId('current-study-detail');
    await vi.waitFor(() => expect(within(detail).getByTestId('current-study-detail-name').textContent).toBe(demo.name));
    expect(within(detail).getByText('synthetic demo')).toBeTruthy();
    expect(screen.getAllByTestId('study-row')[0]!.getAttribute('aria-current')).toBe('true');
  });

  it('keeps the current study and shows the error when open is rejected', async () => {
    ipcMock.lastOpenedStudy.mockResolvedValue(mine);
    ipcMock.openStudy.mockRejectedValue({ code: 'not_found', message: 'no study with id 1' });
    await renderLoaded();
    const [demoRow] = await screen.findAllByTestId('study-row');
    await fireEvent.click(within(demoRow!).getByTestId('study-open'));

    expect((await screen.findByTestId('open-error')).textContent).toContain('no study with id 1');
    expect(screen.getByTestId('current-study-detail-name').textContent).toBe(mine.name);
  });
});

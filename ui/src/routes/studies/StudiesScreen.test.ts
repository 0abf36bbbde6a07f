import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { formatTimestamp } from '$lib/format';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  appInfo: vi.fn(),
  listStudies: vi.fn(),
  createStudy: vi.fn(),
  openStudy: vi.fn(),
  lastOpenedStudy: vi.fn(),
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

async function renderLoaded(): Promise<Workspace> {
  const workspace = new Workspace();
  render(StudiesScreen, { workspace });
  await workspace.load();
  return workspace;
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.appInfo.mockResolvedValue({ version: '0.1.0', db_path: '/tmp/kv.db', db_is_default: false });
  ipcMock.listStudies.mockResolvedValue([demo, mine]);
  ipcMock.lastOpenedStudy.mockResolvedValue(null);
});

describe('Studies screen', () => {
  it('shows a loading state, then one row per study the backend returned', async () => {
    const workspace = new Workspace();
    render(StudiesScreen, { workspace });
    expect(screen.getByTestId('studies-loading').textContent).toBe('Loading studies…');

    await workspace.load();
    const rows = await screen.findAllByTestId('study-row');
    expect(rows.map((row) => within(row).getByTestId('study-row-name').textContent)).toEqual([
      demo.name,
      mine.name,
    ]);
    expect(within(rows[1]!).getByText('per-head scales')).toBeTruthy();
    expect(within(rows[1]!).getByText(formatTimestamp('2026-03-02T10:30:00Z'))).toBeTruthy();
    expect(within(rows[1]!).getByTitle('2026-03-02T10:30:00Z').getAttribute('datetime')).toBe('2026-03-02T10:30:00Z');
    expect(screen.queryByTestId('studies-loading')).toBeNull();
  });

  it('labels a synthetic demo study with a visible badge', async () => {
    await renderLoaded();
    const [demoRow, userRow] = await screen.findAllByTestId('study-row');
    const badge = within(demoRow!).getByTestId('provenance-badge');
    expect(badge.textContent).toBe('synthetic demo');
    expect(badge.getAttribute('title')).toBe('Generated demo data, not a recorded run');
    expect(within(userRow!).getByTestId('provenance-badge').textContent).not.toContain('synthetic');
  });

  it('says so when there are no studies', async () => {
    ipcMock.listStudies.mockResolvedValue([]);
    await renderLoaded();
    expect((await screen.findByTestId('studies-empty')).textContent).toBe('No studies yet.');
    expect(screen.queryAllByTestId('study-row')).toHaveLength(0);
  });

  it('shows a failed list load instead of an empty list', async () => {
    ipcMock.listStudies.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    await renderLoaded();
    expect((await screen.findByTestId('studies-error')).textContent).toContain('database is locked');
    expect(screen.queryByTestId('studies-empty')).toBeNull();
  });

  it('shows the backend error inline when create is rejected, and keeps the input', async () => {
    ipcMock.createStudy.mockRejectedValue({ code: 'conflict', message: 'a study named "C2 calibrated" exists' });
    await renderLoaded();

    const name = screen.getByTestId('study-name') as HTMLInputElement;
    await fireEvent.input(name, { target: { value: 'C2 calibrated' } });
    await fireEvent.click(screen.getByTestId('study-create'));

    const error = await screen.findByTestId('form-error');
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toContain('a study named "C2 calibrated" exists');
    expect(error.textContent).toContain('conflict');
    expect(name.value).toBe('C2 calibrated');
    expect(ipcMock.createStudy).toHaveBeenCalledWith({ name: 'C2 calibrated', description: '' });
  });

  it('creates a study on submit, clears the form and the error, and shows the refreshed list', async () => {
    const created: Study = { ...mine, id: 3, name: 'C1 default scales', description: 'line one' };
    ipcMock.createStudy
      .mockRejectedValueOnce({ code: 'invalid_input', message: 'name must not be empty' })
      .mockResolvedValueOnce(created);
    await renderLoaded();

    const form = screen.getByTestId('study-create').closest('form')!;
    await fireEvent.submit(form);
    expect((await screen.findByTestId('form-error')).textContent).toContain('name must not be empty');

    ipcMock.listStudies.mockResolvedValue([demo, mine, created]);
    const name = screen.getByTestId('study-name') as HTMLInputElement;
    const description = screen.getByTestId('study-description') as HTMLTextAreaElement;
    await fireEvent.input(name, { target: { value: 'C1 default scales' } });
    await fireEvent.input(description, { target: { value: 'line one' } });
    await fireEvent.submit(form);

    await vi.waitFor(() => expect(screen.queryByTestId('form-error')).toBeNull());
    expect(screen.getAllByTestId('study-row')).toHaveLength(3);
    expect(ipcMock.createStudy).toHaveBeenLastCalledWith({ name: 'C1 default scales', description: 'line one' });
    expect(name.value).toBe('');
    expect(description.value).toBe('');
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
    expect(demoRow!.getAttribute('aria-current')).toBe('true');
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

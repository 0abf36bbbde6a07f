import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { LockedPolicy } from '$lib/bindings/LockedPolicy';
import type { PolicyStatus } from '$lib/bindings/PolicyStatus';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  policyStatus: vi.fn(),
  checkPolicy: vi.fn(),
  lockPolicy: vi.fn(),
  planPairs: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { formToPolicy, templateForm } from './policy-form';
import { PolicyModel } from './policy.svelte';
import PolicyScreen from './PolicyScreen.svelte';

const ipcMock = vi.mocked(ipc);
const study: Study = { id: 7, name: 'FP8 KV', description: '', provenance: 'user', created_at: '2026-03-03T08:00:00Z' };

function locked(version: number, patch: Partial<LockedPolicy> = {}): LockedPolicy {
  return {
    study_id: 7,
    version,
    policy: formToPolicy(templateForm()) as LockedPolicy['policy'],
    sha256: String(version).repeat(64),
    locked_at: `2026-03-0${version}T10:00:00Z`,
    locked_by: 'Ada',
    runs_at_lock: version === 1 ? 0 : 3,
    changed_after_results: false,
    first_lock_after_results: false,
    ...patch,
  };
}

function status(versions: LockedPolicy[]): PolicyStatus {
  return {
    study_id: 7,
    current: versions[versions.length - 1] ?? null,
    versions,
    changed_after_results: versions.some((v) => v.changed_after_results),
    first_lock_after_results: versions.some((v) => v.first_lock_after_results),
  };
}

function setup() {
  const workspace = new Workspace();
  workspace.current = study;
  workspace.studiesState = 'ready';
  const policy = new PolicyModel();
  render(PolicyScreen, { workspace, policy });
  return policy;
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.checkPolicy.mockResolvedValue([]);
});

describe('Policy screen', () => {
  it('says results stay hidden without a policy, and starts the editor from the template', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([]));
    setup();
    expect((await screen.findByTestId('policy-none')).textContent).toContain('Results of this study stay hidden');
    expect(screen.getByTestId('policy-started-from').textContent).toContain('the template');
    const text = (screen.getByTestId('policy-json') as HTMLTextAreaElement).value;
    expect(JSON.parse(text).segments.map((s: { name: string }) => s.name)).toEqual(['de-long', 'numeric', 'long-context']);
    expect(screen.getAllByTestId('policy-class')).toHaveLength(3);
    await waitFor(() => expect(ipcMock.checkPolicy).toHaveBeenCalledWith(text));
    expect((await screen.findByTestId('policy-check-status')).textContent).toContain('No problems');
  });

  it('shows the version in force with its sha256, every version, and a permanent changed-after-results banner', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([locked(1), locked(2, { changed_after_results: true })]));
    setup();
    expect((await screen.findByTestId('policy-current-version')).textContent).toBe('2');
    expect(screen.getByTestId('policy-current-sha').textContent).toBe('2'.repeat(64));
    expect(screen.getByTestId('policy-current-by').textContent).toBe('Ada');
    expect(screen.getByTestId('policy-changed-after-results').textContent).toContain('version 2 was locked after results existed');
    expect(screen.getAllByTestId('policy-version-row').map((r) => r.dataset['version'])).toEqual(['2', '1']);
    expect(screen.getByTestId('policy-summary').dataset['version']).toBe('2');
  });

  it('marks a first lock made after results existed, for good, beside the version', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([locked(1, { runs_at_lock: 2, first_lock_after_results: true })]));
    setup();
    expect((await screen.findByTestId('policy-first-lock-after-results')).textContent).toContain('First locked after results');
    expect(screen.queryByTestId('policy-changed-after-results')).toBeNull();
    expect(screen.getByTestId('policy-version-row').textContent).toContain('first locked after results');
  });

  it('shows no first-lock mark for a policy locked before results', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([locked(1)]));
    setup();
    await screen.findByTestId('policy-current-version');
    expect(screen.queryByTestId('policy-first-lock-after-results')).toBeNull();
  });

  it('shows a locked policy as a read-only summary, not a live form', async () => {
    const v1 = locked(1);
    v1.policy = {
      ...v1.policy,
      classes: [
        {
          name: 'short',
          max_input_tokens: 1023,
          slo: { ttft_ms: 500, itl_ms: 50, e2e_ms: 5000 },
          max_error_rate: 0.01,
          min_completion_rate: 0.995,
        },
        { name: 'long', max_input_tokens: 32767, route: 'chat', slo: { ttft_ms: 120000 } },
      ],
      segments: [
        { name: 'de-long', filter: { language: 'de', length_class: 'long' }, floor: 0.9, margin: 0.02, protected: true },
        { name: 'refusals', filter: { answer_kind: 'absent' }, margin: 0.1, protected: false },
      ],
      goodput: { interval_s: 3600, drain_s: 600 },
      alpha: 0.05,
    };
    ipcMock.policyStatus.mockResolvedValue(status([v1]));
    setup();
    const summary = await screen.findByTestId('policy-summary');
    // Nothing to type into, and no "may be locked" beside a locked version.
    expect(summary.querySelectorAll('input, select, textarea')).toHaveLength(0);
    expect(screen.queryByTestId('policy-form')).toBeNull();
    expect(screen.queryByTestId('policy-json')).toBeNull();
    expect(screen.queryByTestId('policy-check-status')).toBeNull();
    expect(screen.queryByText(/may be locked/)).toBeNull();
    expect(summary.textContent).toContain('Policy in force: version 1');

    const rows = within(summary).getAllByTestId('policy-summary-class');
    expect(rows.map((r) => [...r.querySelectorAll('th, td')].map((c) => c.textContent!.trim()))).toEqual([
      ['short', '1,023 tokens', 'every route', '500 ms', '50 ms', '5.0 s', '1.0%', '99.5%'],
      ['long', '32,767 tokens', 'chat', '2 min 00 s', 'not checked', 'not checked', 'not declared', 'not declared'],
    ]);
    const segments = within(summary).getAllByTestId('policy-summary-segment');
    expect(segments.map((r) => [...r.querySelectorAll('th, td')].map((c) => c.textContent!.trim()))).toEqual([
      ['de-long', 'language de · length class long', '90.0%', '−2.0 pp', 'protected'],
      ['refusals', 'answer kind absent', 'none', '−10.0 pp', 'reported'],
    ]);
    expect(screen.getByTestId('policy-summary-interval').textContent).toBe('1 h 00 min 00 s');
    expect(screen.getByTestId('policy-summary-drain').textContent).toBe('10 min 00 s');
    expect(screen.getByTestId('policy-summary-alpha').textContent).toBe('0.05');
  });

  it('edits a locked policy only as a new version, and can go back to the one in force', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([locked(1), locked(2)]));
    setup();
    await fireEvent.click(await screen.findByTestId('policy-edit-new-version'));
    expect(screen.queryByTestId('policy-summary')).toBeNull();
    expect(screen.getByTestId('policy-editor').textContent).toContain('Edit as version 3');
    expect(screen.getByTestId('policy-started-from').textContent).toContain('v2');
    await fireEvent.input(screen.getByTestId('policy-locked-by'), { target: { value: 'Ada' } });
    await waitFor(() => expect(document.getElementById('policy-lock-why')!.textContent).toBe('locks version 3'));
    await fireEvent.click(screen.getByTestId('policy-edit-cancel'));
    expect(await screen.findByTestId('policy-summary')).toBeTruthy();
    expect(screen.queryByTestId('policy-editor')).toBeNull();

    // Editing from an older version, from the list of versions.
    const v1 = screen.getAllByTestId('policy-version-row').find((r) => r.dataset['version'] === '1')!;
    await fireEvent.click(within(v1).getByTestId('policy-edit-from'));
    expect(screen.getByTestId('policy-started-from').textContent).toContain('v1');
  });

  it('keeps the form and the JSON text in step, both ways', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([]));
    setup();
    await screen.findByTestId('policy-form');
    const json = screen.getByTestId('policy-json') as HTMLTextAreaElement;

    const alpha = document.getElementById('policy-alpha') as HTMLInputElement;
    await fireEvent.input(alpha, { target: { value: '0.025' } });
    expect(JSON.parse(json.value).alpha).toBe(0.025);

    const route = document.getElementById('policy-classes-0-route') as HTMLInputElement;
    await fireEvent.input(route, { target: { value: 'chat' } });
    expect(JSON.parse(json.value).classes[0].route).toBe('chat');
    await fireEvent.input(route, { target: { value: '' } });
    expect(JSON.parse(json.value).classes[0]).not.toHaveProperty('route');

    const language = document.getElementById('policy-segments-1-filter-language') as HTMLSelectElement;
    await fireEvent.change(language, { target: { value: 'en' } });
    expect(JSON.parse(json.value).segments[1].filter).toEqual({ language: 'en', task_type: 'numeric' });

    await fireEvent.click(screen.getByTestId('policy-add-segment'));
    expect(JSON.parse(json.value).segments).toHaveLength(4);

    const edited = JSON.parse(json.value);
    edited.goodput.interval_s = 120;
    await fireEvent.input(json, { target: { value: JSON.stringify(edited, null, 2) } });
    expect((document.getElementById('policy-goodput-interval_s') as HTMLInputElement).value).toBe('120');

    await fireEvent.input(json, { target: { value: '{"classes": [' } });
    expect(screen.getByTestId('policy-form-error').textContent).toContain('not valid JSON');
    // The text as typed is kept: the form never overwrites what it cannot show.
    expect(json.value).toBe('{"classes": [');
  });

  it('shows each problem the backend finds next to its field, and blocks the lock', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([]));
    ipcMock.checkPolicy.mockResolvedValue([
      { path: 'segments[0].margin', expected: 'a share in [0, 1)', found: '1' },
      { path: '$', expected: 'a policy', found: 'something odd' },
    ]);
    setup();
    await screen.findByTestId('policy-form');
    await waitFor(() => expect(screen.getByTestId('policy-check-status').textContent).toContain('2 problems'));
    const margin = document.getElementById('policy-segments-0-margin') as HTMLInputElement;
    expect(margin.getAttribute('aria-invalid')).toBe('true');
    const described = document.getElementById(margin.getAttribute('aria-describedby')!)!;
    expect(described.textContent).toContain('expected a share in [0, 1), found 1');
    expect(screen.getByTestId('policy-general-problems').textContent).toContain('something odd');
    await fireEvent.input(screen.getByTestId('policy-locked-by'), { target: { value: 'Ada' } });
    expect((screen.getByTestId('policy-lock-open') as HTMLButtonElement).disabled).toBe(true);
  });

  it('locks only after a name and a confirmation that the lock is permanent, then shows the sha256', async () => {
    ipcMock.policyStatus.mockResolvedValueOnce(status([])).mockResolvedValue(status([locked(1)]));
    ipcMock.lockPolicy.mockResolvedValue(locked(1));
    const policy = setup();
    await screen.findByTestId('policy-form');
    await waitFor(() => expect(screen.getByTestId('policy-check-status').textContent).toContain('No problems'));
    const open = screen.getByTestId('policy-lock-open') as HTMLButtonElement;
    expect(open.disabled).toBe(true);
    await fireEvent.input(screen.getByTestId('policy-locked-by'), { target: { value: '  Ada ' } });
    expect(open.disabled).toBe(false);
    await fireEvent.click(open);
    const dialog = await screen.findByTestId('lock-policy-dialog');
    expect(dialog.textContent).toContain('The lock is permanent.');
    expect(dialog.textContent).toContain('changed after results');
    expect(ipcMock.lockPolicy).not.toHaveBeenCalled();
    await fireEvent.click(within(dialog).getByTestId('lock-policy-confirm'));
    await waitFor(() => expect(screen.queryByTestId('lock-policy-dialog')).toBeNull());
    expect(ipcMock.lockPolicy).toHaveBeenCalledWith({ study_id: 7, policy_json: policy.text, locked_by: 'Ada' });
    expect(screen.getByTestId('policy-just-locked-sha').textContent).toBe('1'.repeat(64));
    expect((await screen.findByTestId('policy-current-version')).textContent).toBe('1');
    // Locked: the editor gives way to the summary of what is now in force.
    expect((await screen.findByTestId('policy-summary')).dataset['version']).toBe('1');
    expect(screen.queryByTestId('policy-editor')).toBeNull();
  });

  it('keeps the dialog open with the reason when the lock is refused', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([]));
    ipcMock.lockPolicy.mockRejectedValue({ code: 'invalid_input', message: 'the policy cannot be locked:\n- alpha: expected …' });
    setup();
    await screen.findByTestId('policy-form');
    await waitFor(() => expect(screen.getByTestId('policy-check-status').textContent).toContain('No problems'));
    await fireEvent.input(screen.getByTestId('policy-locked-by'), { target: { value: 'Ada' } });
    await fireEvent.click(screen.getByTestId('policy-lock-open'));
    await fireEvent.click(await screen.findByTestId('lock-policy-confirm'));
    expect((await screen.findByTestId('lock-policy-error')).textContent).toContain('the policy cannot be locked');
    expect(screen.getByTestId('lock-policy-dialog')).toBeTruthy();
  });

  it('plans the paired items a margin needs', async () => {
    ipcMock.policyStatus.mockResolvedValue(status([]));
    ipcMock.planPairs.mockResolvedValue({ margin: 0.02, discordance_rate: 0.1, alpha: 0.05, power: 0.8, pairs: 1548 });
    setup();
    await fireEvent.click(await screen.findByTestId('planner-submit'));
    expect(ipcMock.planPairs).toHaveBeenCalledWith(0.02, 0.1, 0.05, 0.8);
    expect((await screen.findByTestId('planner-answer')).textContent).toContain('Needs 1,548 paired items');
  });
});

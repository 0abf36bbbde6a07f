import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  analyzeStudy: vi.fn(),
  checklist: vi.fn(),
  signCheck: vi.fn(),
  decide: vi.fn(),
  checkRecoveryPlan: vi.fn(),
  recordRecoveryPlan: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { analysis } from '../results/results-fixture';
import { PLAN, checklist, decision, event, recoveryWithoutPlan, signedStatus, status, voidStatus } from './signoff-fixture';
import SignoffScreen from './SignoffScreen.svelte';
import { SignoffModel } from './signoff.svelte';

const ipcMock = vi.mocked(ipc);
const study: Study = { id: 7, name: 'FP8 KV demo', description: '', provenance: 'synthetic_demo', created_at: '2026-03-03T08:00:00Z' };

function setup() {
  const workspace = new Workspace();
  workspace.current = study;
  workspace.studiesState = 'ready';
  const signoff = new SignoffModel();
  const onopenpolicy = vi.fn();
  render(SignoffScreen, { workspace, signoff, onopenpolicy });
  return { signoff, onopenpolicy };
}

async function check(name: string): Promise<HTMLElement> {
  const all = await screen.findAllByTestId('signoff-check');
  return all.find((c) => c.dataset['check'] === name)!;
}

beforeEach(() => {
  vi.resetAllMocks();
  localStorage.clear();
  ipcMock.analyzeStudy.mockResolvedValue(analysis());
  ipcMock.checklist.mockResolvedValue(checklist());
  ipcMock.checkRecoveryPlan.mockResolvedValue([]);
});

const withoutPlan = () => checklist({ checks: [status('compatibility'), status('quality'), status('operations'), recoveryWithoutPlan()] });

/** Fills every field of the open recovery form; `admission` empty unless given. */
async function fillRecovery(form: HTMLElement, admission = '') {
  const q = (id: string) => within(form).getByTestId(id);
  await fireEvent.input(q('recovery-route'), { target: { value: 'chat-short/eu-1' } });
  await fireEvent.input(q('recovery-share'), { target: { value: '5' } });
  await fireEvent.input(q('recovery-breach'), { target: { value: 'TTFT p99 > 800 ms for 5 min' } });
  await fireEvent.input(q('recovery-drain'), { target: { value: '30' } });
  await fireEvent.input(q('recovery-admission'), { target: { value: admission } });
  await fireEvent.input(q('recovery-date'), { target: { value: '2026-01-15' } });
  await fireEvent.change(q('recovery-restart'), { target: { value: 'passed' } });
  await fireEvent.change(q('recovery-cache-loss'), { target: { value: 'passed' } });
  await fireEvent.change(q('recovery-warm-up'), { target: { value: 'failed' } });
  await fireEvent.input(q('recovery-notes'), { target: { value: 'warm-up took 9 min' } });
}

describe('Sign-off screen', () => {
  it('explains a missing locked policy and leads to the Policy screen', async () => {
    const refusal = { code: 'policy_not_locked', message: 'study `FP8 KV demo` has no locked acceptance policy' };
    ipcMock.checklist.mockRejectedValue(refusal);
    ipcMock.analyzeStudy.mockRejectedValue(refusal);
    const { onopenpolicy } = setup();
    const notice = await screen.findByTestId('signoff-policy-not-locked');
    expect(notice.textContent).toContain('locked acceptance policy');
    expect(notice.textContent).toContain('has no locked acceptance policy');
    expect(screen.queryByTestId('signoff-check')).toBeNull();
    expect(screen.queryByTestId('decision-card')).toBeNull();
    await fireEvent.click(screen.getByTestId('signoff-go-policy'));
    expect(onopenpolicy).toHaveBeenCalledTimes(1);
  });

  it('shows the four checks with their meaning, evidence tables, digest and raw JSON', async () => {
    setup();
    const checks = await screen.findAllByTestId('signoff-check');
    expect(checks.map((c) => [c.dataset['check'], c.dataset['state']])).toEqual([
      ['compatibility', 'unsigned'],
      ['quality', 'unsigned'],
      ['operations', 'unsigned'],
      ['recovery', 'unsigned'],
    ]);
    const compat = checks[0]!;
    expect(compat.textContent).toContain('No silent fallback');
    expect(within(compat).getByTestId('signoff-evidence-sha').textContent).toBe(status('compatibility').evidence_sha256);
    const invalid = within(compat).getAllByTestId('evidence-compat-cell').find((r) => r.dataset['cell'] === 'C9')!;
    expect(invalid.dataset['valid']).toBe('false');
    expect(invalid.textContent).toContain('no compatibility evidence');
    expect(within(compat).getAllByTestId('evidence-compat-file')[0]!.textContent).toContain('a'.repeat(64));
    expect(within(compat).getByTestId('signoff-evidence-raw').textContent).toContain('"startup_log"');

    const quality = checks[1]!;
    const row = within(quality).getByTestId('evidence-quality-row');
    expect(row.dataset['stratum']).toBe('de-long');
    expect(within(row).getByTestId('evidence-quality-verdict').textContent?.trim()).toBe('inferior');
    expect(row.textContent).toContain('[−30.0, −5.0] pp');
    expect(within(quality).getByTestId('evidence-quality-floor').textContent).toContain('fail');

    const ops = checks[2]!;
    const classes = within(ops).getAllByTestId('evidence-ops-class');
    expect(classes.map((r) => r.dataset['class'])).toEqual(['short', 'long']);
    expect(classes[0]!.textContent).toContain('120.5 ms');
    // A class with goodput but no latency: its percentiles are absent, not zero.
    expect(classes[1]!.textContent).toContain('absent');
    expect(classes[1]!.textContent).toContain('(SLO-only)');
    expect(within(ops).getByTestId('evidence-ops-requests').textContent).toContain('offered');

    const recovery = checks[3]!;
    expect(within(recovery).getByTestId('evidence-recovery-drain').textContent).toContain('30.0 s');
    const fit = within(recovery).getAllByTestId('evidence-recovery-cell').find((r) => r.dataset['cell'] === 'C1')!;
    expect(fit.dataset['fits']).toBe('false');
    expect(fit.textContent).toContain('21 sequences');
  });

  it('shows a void signature prominently with its reason, and a holding one with signer, event and digest', async () => {
    ipcMock.checklist.mockResolvedValue(
      checklist({ checks: [signedStatus('compatibility', 4), voidStatus('quality', 5), status('operations'), status('recovery')] }),
    );
    setup();
    const quality = await check('quality');
    expect(quality.dataset['state']).toBe('void');
    expect(within(quality).getByTestId('signoff-check-state').textContent).toContain('VOID');
    expect(within(quality).getByTestId('signoff-void-reason').textContent).toContain('the signature is void');
    expect(within(quality).getByTestId('signoff-signed-digest').textContent).toBe('7'.repeat(64));

    const compat = await check('compatibility');
    expect(compat.dataset['state']).toBe('signed');
    expect(within(compat).queryByTestId('signoff-void-reason')).toBeNull();
    expect(within(compat).getByTestId('signoff-signed-by').textContent).toBe('Architect');
    expect(within(compat).getByTestId('signoff-signed-seq').textContent).toBe('#4');
    expect(within(compat).getByTestId('signoff-signed-digest').textContent).toBe(status('compatibility').evidence_sha256);
    expect(screen.getByTestId('signoff-summary').textContent).toContain('1 of 4 checks signed');
  });

  it('signs with the digest shown and the remembered signer, then reads the checklist again', async () => {
    localStorage.setItem('kvgate.signer', 'Ada Architect');
    ipcMock.signCheck.mockResolvedValue(event(9, { subject: 'operations' }));
    setup();
    const ops = await check('operations');
    expect((screen.getByTestId('signoff-signer') as HTMLInputElement).value).toBe('Ada Architect');
    ipcMock.checklist.mockResolvedValue(
      checklist({ checks: [status('compatibility'), status('quality'), signedStatus('operations', 9), status('recovery')] }),
    );
    await fireEvent.click(within(ops).getByTestId('signoff-sign'));
    expect(ipcMock.signCheck).toHaveBeenCalledWith({
      study_id: 7,
      check: 'operations',
      by: 'Ada Architect',
      expected_sha256: status('operations').evidence_sha256,
    });
    await waitFor(async () => expect((await check('operations')).dataset['state']).toBe('signed'));
    expect(ipcMock.checklist).toHaveBeenCalledTimes(2);
  });

  it('asks for a reason when the evidence shows a failure, and sends it with the signature', async () => {
    localStorage.setItem('kvgate.signer', 'Ada');
    const failing = status('quality', { failures: ['cell C1: protected floor de-long failed (30 of 40 accepted, floor 0.95)'] });
    ipcMock.checklist.mockResolvedValue(checklist({ checks: [status('compatibility'), failing, status('operations'), status('recovery')] }));
    ipcMock.signCheck.mockResolvedValue(event(9, { subject: 'quality' }));
    setup();
    const quality = await check('quality');
    expect(within(quality).getByTestId('signoff-failures').textContent).toContain('protected floor de-long failed');
    await fireEvent.input(within(quality).getByTestId('signoff-reason'), { target: { value: 'de-long is out of scope for this route' } });
    await fireEvent.click(within(quality).getByTestId('signoff-sign'));
    expect(ipcMock.signCheck).toHaveBeenCalledWith({
      study_id: 7,
      check: 'quality',
      by: 'Ada',
      expected_sha256: failing.evidence_sha256,
      reason: 'de-long is out of scope for this route',
    });
    // A check without failures asks for none.
    expect(within(await check('operations')).queryByTestId('signoff-reason')).toBeNull();
  });

  it('asks for a signer name before signing and remembers it', async () => {
    setup();
    const recovery = await check('recovery');
    await fireEvent.click(within(recovery).getByTestId('signoff-sign'));
    expect(ipcMock.signCheck).not.toHaveBeenCalled();
    expect(within(recovery).getByTestId('signoff-sign-error').textContent).toContain('Enter your name');
    await fireEvent.input(screen.getByTestId('signoff-signer'), { target: { value: 'Grace' } });
    expect(localStorage.getItem('kvgate.signer')).toBe('Grace');
  });

  it('shows a conflict when the evidence changed since it was shown, and reads the checklist again', async () => {
    localStorage.setItem('kvgate.signer', 'Ada');
    const message = 'the quality evidence changed since it was shown (abc, now def): review it again before signing';
    ipcMock.signCheck.mockRejectedValue({ code: 'conflict', message });
    setup();
    const quality = await check('quality');
    const changed = { ...status('quality'), evidence_sha256: 'd'.repeat(64) };
    ipcMock.checklist.mockResolvedValue(checklist({ checks: [status('compatibility'), changed, status('operations'), status('recovery')] }));
    await fireEvent.click(within(quality).getByTestId('signoff-sign'));
    await waitFor(() => expect(ipcMock.checklist).toHaveBeenCalledTimes(2));
    const after = await check('quality');
    expect(within(after).getByTestId('signoff-sign-error').textContent).toContain(message);
    expect(within(after).getByTestId('signoff-reloaded')).toBeTruthy();
    await waitFor(() => expect(within(after).getByTestId('signoff-evidence-sha').textContent).toBe('d'.repeat(64)));
  });

  it('shows the suggestion for every candidate and records a decision with outcome and rationale', async () => {
    localStorage.setItem('kvgate.signer', 'Ada');
    ipcMock.decide.mockResolvedValue(event(12, { kind: 'decision', subject: 'C1' }));
    setup();
    const cards = await screen.findAllByTestId('decision-card');
    expect(cards.map((c) => c.dataset['candidate'])).toEqual(['C1', 'C9']);
    const c1 = cards[0]!;
    expect(within(c1).getByTestId('decision-suggested').textContent).toContain('calibrate');
    expect(within(c1).getByTestId('decision-rules').textContent).toContain('protected segment `de-long`: inferior');
    expect(within(c1).getByTestId('decision-table').textContent).toBe('Promote only if every protected segment passes');
    expect(within(c1).getByTestId('decision-next').textContent).toContain('calibrated FP8 (C2)');
    // Not all checks are signed: the backend refuses unless the decision is an override.
    expect(within(c1).getByTestId('decision-warning').textContent).toContain('not signed: compatibility, quality, operations, recovery');
    expect((within(c1).getByTestId('decision-record') as HTMLButtonElement).disabled).toBe(true);

    await fireEvent.click(within(c1).getByTestId('decision-outcome-calibrate'));
    await fireEvent.input(within(c1).getByTestId('decision-rationale'), { target: { value: 'de-long regressed; try calibrated scales' } });
    await fireEvent.click(within(c1).getByTestId('decision-override'));
    ipcMock.checklist.mockResolvedValue(
      checklist({ decisions: [decision(12, 'C1', 'Ada', 'calibrate', 'de-long regressed; try calibrated scales', true)] }),
    );
    const record = within(c1).getByTestId('decision-record') as HTMLButtonElement;
    expect(record.disabled).toBe(false);
    await fireEvent.click(record);
    expect(ipcMock.decide).toHaveBeenCalledWith({
      study_id: 7,
      candidate: 'C1',
      outcome: 'calibrate',
      by: 'Ada',
      rationale: 'de-long regressed; try calibrated scales',
      override_gate: true,
    });
    const row = await screen.findByTestId('decision-row');
    expect(row.dataset['candidate']).toBe('C1');
    // The override is shown in red, naming what it passed.
    expect(row.dataset['overridden']).toBe('true');
    expect(within(row).getByTestId('decision-override-mark').textContent).toContain('OVERRIDE');
    expect(within(row).getByTestId('decision-override-mark').textContent).toContain('quality (not signed)');
    expect(row.textContent).toContain('calibrate');
    expect(row.textContent).toContain('de-long regressed; try calibrated scales');
    expect(row.textContent).toContain('Ada');
    expect(screen.getByTestId('decision-recorded').textContent).toContain('#12');
  });

  it('shows no warning once all four checks are signed over the current evidence', async () => {
    ipcMock.checklist.mockResolvedValue(
      checklist({ checks: [signedStatus('compatibility', 1), signedStatus('quality', 2), signedStatus('operations', 3), signedStatus('recovery', 4)] }),
    );
    setup();
    const cards = await screen.findAllByTestId('decision-card');
    expect(within(cards[0]!).queryByTestId('decision-warning')).toBeNull();
  });

  it('shows any other refusal as an error with a retry', async () => {
    ipcMock.checklist.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    setup();
    expect((await screen.findByTestId('signoff-error')).textContent).toContain('database is locked');
    ipcMock.checklist.mockResolvedValue(checklist());
    await fireEvent.click(screen.getByTestId('signoff-retry'));
    expect(await screen.findAllByTestId('signoff-check')).toHaveLength(4);
  });
});

describe('Sign-off screen: recovery plan', () => {
  it('shows the recorded plan, its digest and the findings, a failed rehearsal step in red', async () => {
    setup();
    const recovery = await check('recovery');
    const plan = within(recovery).getByTestId('evidence-recovery-plan');
    expect(within(plan).getByTestId('evidence-recovery-canary').textContent).toContain('5.0%');
    expect(within(plan).getByTestId('evidence-recovery-canary').textContent).toContain('chat-short/eu-1');
    expect(within(plan).getByTestId('evidence-recovery-breach').textContent).toContain('TTFT p99 above the class SLO');
    expect(within(plan).getByTestId('evidence-recovery-rehearsal').dataset['date']).toBe('2026-11-30');
    expect(within(plan).getByTestId('evidence-recovery-plan-sha').textContent).toBe('5'.repeat(64));
    expect(within(plan).getByTestId('evidence-recovery-admission').textContent).toContain('rollback fits as is');
    expect(plan.textContent).toContain('recorded by Owner');
    const findings = within(recovery).getAllByTestId('evidence-recovery-finding');
    expect(findings).toHaveLength(3);
    expect(findings[0]!.textContent).toBe('rehearsal step warm_up failed on 2026-11-30');
    expect(findings[0]!.classList.contains('bad')).toBe(true);
    expect(findings[1]!.classList.contains('bad')).toBe(false);
    expect(within(recovery).queryByTestId('signoff-recovery-needs-plan')).toBeNull();
    expect((within(recovery).getByTestId('signoff-sign') as HTMLButtonElement).disabled).toBe(false);
    expect(within(recovery).getByTestId('recovery-plan-open').textContent).toContain('Record a new version');
  });

  it('cannot sign the recovery check while no plan is recorded, and says why', async () => {
    ipcMock.checklist.mockResolvedValue(withoutPlan());
    setup();
    const recovery = await check('recovery');
    expect(within(recovery).queryByTestId('evidence-recovery-plan')).toBeNull();
    expect(within(recovery).getByTestId('evidence-recovery-no-plan')).toBeTruthy();
    expect(within(recovery).getByTestId('evidence-recovery-finding').textContent).toMatch(/^no recovery plan recorded/);
    const sign = within(recovery).getByTestId('signoff-sign') as HTMLButtonElement;
    expect(sign.disabled).toBe(true);
    const reason = within(recovery).getByTestId('signoff-recovery-needs-plan');
    expect(reason.textContent).toContain('recovery plan is recorded');
    expect(sign.getAttribute('aria-describedby')).toBe(reason.id);
    // Other checks are not held back.
    expect((within(await check('quality')).getByTestId('signoff-sign') as HTMLButtonElement).disabled).toBe(false);
    expect(within(recovery).getByTestId('recovery-plan-open').textContent).toContain('Record recovery plan');
  });

  it('shows the backend\'s problems at their fields', async () => {
    ipcMock.checklist.mockResolvedValue(withoutPlan());
    ipcMock.checkRecoveryPlan.mockResolvedValue([
      { path: 'canary.share_percent', expected: 'a bounded share of the route in (0, 100] percent', found: '250' },
      { path: '$', expected: 'a JSON object (duplicate keys refused)', found: 'odd' },
      { path: 'rehearsal.restart', expected: 'passed or failed', found: 'nothing' },
    ]);
    setup();
    const recovery = await check('recovery');
    await fireEvent.click(within(recovery).getByTestId('recovery-plan-open'));
    const form = within(recovery).getByTestId('recovery-plan-form');
    expect(document.activeElement).toBe(within(form).getByTestId('recovery-route'));
    await fireEvent.input(within(form).getByTestId('recovery-share'), { target: { value: '250' } });
    await waitFor(() => expect(ipcMock.checkRecoveryPlan).toHaveBeenCalled());
    const last = ipcMock.checkRecoveryPlan.mock.calls.at(-1)![0];
    expect(JSON.parse(last).canary.share_percent).toBe(250);

    await waitFor(() => {
      const share = within(form).getAllByTestId('recovery-problem').filter((p) => p.dataset['path'] === 'canary.share_percent');
      expect(share.length).toBeGreaterThan(0);
    });
    const shareInput = within(form).getByTestId('recovery-share');
    expect(shareInput.getAttribute('aria-invalid')).toBe('true');
    const described = document.getElementById(shareInput.getAttribute('aria-describedby')!)!;
    expect(within(described).getByTestId('recovery-problem').textContent).toContain('(0, 100]');
    // A problem naming no field is shown above the form.
    expect(within(within(form).getByTestId('recovery-general-problems')).getByTestId('recovery-problem').dataset['path']).toBe('$');
    // No outcome is preselected: the backend says each must be chosen.
    expect((within(form).getByTestId('recovery-restart') as HTMLSelectElement).value).toBe('');
    const restart = within(form).getAllByTestId('recovery-problem').find((p) => p.dataset['path'] === 'rehearsal.restart')!;
    expect(restart.textContent).toContain('passed or failed');
    expect((within(form).getByTestId('recovery-plan-record') as HTMLButtonElement).disabled).toBe(true);
    expect(within(form).getByTestId('recovery-plan-blocked').textContent).toContain('problems first');
    // Labels name their inputs.
    expect(within(form).getByLabelText(/Canary route/)).toBe(within(form).getByTestId('recovery-route'));
    expect(within(form).getByLabelText('Cache loss')).toBe(within(form).getByTestId('recovery-cache-loss'));
  });

  it('records the plan with the signer as author, reads the checklist again and closes the form', async () => {
    localStorage.setItem('kvgate.signer', 'Olga Owner');
    ipcMock.checklist.mockResolvedValue(withoutPlan());
    ipcMock.recordRecoveryPlan.mockResolvedValue({
      study_id: 7,
      version: 1,
      plan: PLAN,
      sha256: '6'.repeat(64),
      recorded_at: '2026-12-01T09:00:00Z',
      recorded_by: 'Olga Owner',
    });
    setup();
    const recovery = await check('recovery');
    await fireEvent.click(within(recovery).getByTestId('recovery-plan-open'));
    const form = within(recovery).getByTestId('recovery-plan-form');
    expect((within(form).getByTestId('recovery-by') as HTMLInputElement).value).toBe('Olga Owner');
    await fillRecovery(form);
    await waitFor(() => expect((within(form).getByTestId('recovery-plan-record') as HTMLButtonElement).disabled).toBe(false));

    ipcMock.checklist.mockResolvedValue(checklist());
    await fireEvent.submit(form);
    await waitFor(() => expect(ipcMock.recordRecoveryPlan).toHaveBeenCalledTimes(1));
    const input = ipcMock.recordRecoveryPlan.mock.calls[0]![0];
    expect(input.study_id).toBe(7);
    expect(input.by).toBe('Olga Owner');
    expect(JSON.parse(input.plan_json)).toEqual({
      canary: { route: 'chat-short/eu-1', share_percent: 5 },
      breach_rule: 'TTFT p99 > 800 ms for 5 min',
      drain_deadline_s: 30,
      rehearsal: { date: '2026-01-15', restart: 'passed', cache_loss: 'passed', warm_up: 'failed', notes: 'warm-up took 9 min' },
    });
    await waitFor(() => expect(screen.queryByTestId('recovery-plan-form')).toBeNull());
    expect(ipcMock.checklist).toHaveBeenCalledTimes(2);
    const after = await check('recovery');
    expect(within(after).getByTestId('recovery-plan-recorded').textContent).toContain('version 1');
    await waitFor(() => expect(within(after).getByTestId('evidence-recovery-plan')).toBeTruthy());
    expect((within(after).getByTestId('signoff-sign') as HTMLButtonElement).disabled).toBe(false);
  });

  it('shows a refusal on the form, the listed problems at their fields', async () => {
    localStorage.setItem('kvgate.signer', 'Olga');
    ipcMock.checklist.mockResolvedValue(withoutPlan());
    ipcMock.recordRecoveryPlan.mockRejectedValueOnce({
      code: 'invalid_input',
      message: 'the recovery plan cannot be recorded:\n- rehearsal.date: expected a day that has happened (today is 2026-01-14), found "2026-01-15"',
      problems: [
        {
          path: 'rehearsal.date',
          field: 'date',
          expected: 'a day that has happened (today is 2026-01-14)',
          found: '"2026-01-15"',
          code: 'recovery_plan',
        },
      ],
    });
    setup();
    const recovery = await check('recovery');
    await fireEvent.click(within(recovery).getByTestId('recovery-plan-open'));
    const form = within(recovery).getByTestId('recovery-plan-form');
    await fillRecovery(form, '64');
    await waitFor(() => expect((within(form).getByTestId('recovery-plan-record') as HTMLButtonElement).disabled).toBe(false));
    await fireEvent.click(within(form).getByTestId('recovery-plan-record'));
    await waitFor(() => expect(within(form).getByTestId('recovery-plan-error').textContent).toContain('Check the input:'));
    expect(within(form).getByTestId('recovery-plan-error').getAttribute('data-code')).toBe('invalid_input');
    expect(JSON.parse(ipcMock.recordRecoveryPlan.mock.calls[0]![0].plan_json).admission_before_restore).toBe(64);
    const date = within(form).getAllByTestId('recovery-problem').find((p) => p.dataset['path'] === 'rehearsal.date')!;
    expect(date.textContent).toContain('today is 2026-01-14');
    expect(ipcMock.checklist).toHaveBeenCalledTimes(1);

    ipcMock.recordRecoveryPlan.mockRejectedValueOnce({ code: 'conflict', message: 'this recovery plan is already recorded as version 1' });
    await fireEvent.click(within(form).getByTestId('recovery-plan-record'));
    await waitFor(() => expect(within(form).getByTestId('recovery-plan-error').textContent).toContain('already recorded as version 1'));
    expect(screen.getByTestId('recovery-plan-form')).toBe(form);
  });

  it('starts a new version from the current plan, and Escape closes the form', async () => {
    setup();
    const recovery = await check('recovery');
    const open = within(recovery).getByTestId('recovery-plan-open');
    await fireEvent.click(open);
    const form = within(recovery).getByTestId('recovery-plan-form');
    expect(form.textContent).toContain('from version 2');
    expect((within(form).getByTestId('recovery-route') as HTMLInputElement).value).toBe('chat-short/eu-1');
    expect((within(form).getByTestId('recovery-share') as HTMLInputElement).value).toBe('5');
    expect((within(form).getByTestId('recovery-drain') as HTMLInputElement).value).toBe('600');
    expect((within(form).getByTestId('recovery-admission') as HTMLInputElement).value).toBe('');
    expect((within(form).getByTestId('recovery-date') as HTMLInputElement).value).toBe('2026-11-30');
    expect((within(form).getByTestId('recovery-warm-up') as HTMLSelectElement).value).toBe('failed');
    expect((within(form).getByTestId('recovery-notes') as HTMLTextAreaElement).value).toBe('warm-up took 9 min');
    await fireEvent.keyDown(within(form).getByTestId('recovery-breach'), { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('recovery-plan-form')).toBeNull());
    await waitFor(() => expect(document.activeElement).toBe(within(recovery).getByTestId('recovery-plan-open')));
  });
});

import { describe, expect, it } from 'vitest';
import { formatBytes } from '$lib/format';
import { PLAN, signedStatus, status, voidStatus } from './signoff-fixture';
import {
  CHECKS,
  decisionWarning,
  emptyRecoveryForm,
  mergeProblems,
  placeRecoveryProblems,
  rawJson,
  recoveryFormFromPlan,
  recoveryPlanJson,
  type RecoveryForm,
} from './signoff-view';

describe('checks', () => {
  it('lists the four checks of the guide in order', () => {
    expect(CHECKS.map((c) => c.check)).toEqual(['compatibility', 'quality', 'operations', 'recovery']);
    expect(CHECKS.map((c) => c.number)).toEqual([1, 2, 3, 4]);
  });

  it('shows the evidence indented, as it was hashed', () => {
    expect(rawJson({ a: [1] })).toBe('{\n  "a": [\n    1\n  ]\n}');
  });

  it('formats bytes in binary units', () => {
    expect(formatBytes(12 * 1024 ** 3)).toBe('12.00 GiB');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(null)).toBe('absent');
  });
});

describe('decisionWarning', () => {
  const all = () => [signedStatus('compatibility', 1), signedStatus('quality', 2), signedStatus('operations', 3), signedStatus('recovery', 4)];

  it('is silent when the backend says all four checks are signed over the current evidence', () => {
    expect(decisionWarning(all())).toBeNull();
  });

  it('names the unsigned and the void checks', () => {
    const checks = all();
    checks[1] = status('quality');
    checks[3] = voidStatus('recovery', 4);
    const w = decisionWarning(checks)!;
    expect(w).toContain('not signed: quality');
    expect(w).toContain('void (evidence changed after signing): recovery');
    expect(w).toContain('refused until they are, unless it is recorded as an override');
  });

  it('counts a check the backend did not list as unsigned', () => {
    expect(decisionWarning(all().slice(0, 3))).toContain('not signed: recovery');
  });
});

describe('recovery plan form', () => {
  const filled = (patch: Partial<RecoveryForm> = {}): RecoveryForm => ({
    route: 'chat-short/eu-1',
    share: 5,
    breach: 'TTFT p99 > 800 ms for 5 min',
    drain: 30,
    admission: null,
    date: '2026-11-30',
    restart: 'passed',
    cacheLoss: 'passed',
    warmUp: 'failed',
    notes: 'warm-up took 9 min',
    ...patch,
  });

  it('builds the plan JSON from the form, leaving out an empty admission', () => {
    const plan = JSON.parse(recoveryPlanJson(filled()));
    expect(plan).toEqual({
      canary: { route: 'chat-short/eu-1', share_percent: 5 },
      breach_rule: 'TTFT p99 > 800 ms for 5 min',
      drain_deadline_s: 30,
      rehearsal: { date: '2026-11-30', restart: 'passed', cache_loss: 'passed', warm_up: 'failed', notes: 'warm-up took 9 min' },
    });
    expect('admission_before_restore' in plan).toBe(false);
    expect(JSON.parse(recoveryPlanJson(filled({ admission: 64 })))['admission_before_restore']).toBe(64);
  });

  it('sends empty numbers and unchosen outcomes as null, so the backend names their path', () => {
    const plan = JSON.parse(recoveryPlanJson(emptyRecoveryForm()));
    expect(plan.canary.share_percent).toBeNull();
    expect(plan.drain_deadline_s).toBeNull();
    expect(plan.rehearsal.restart).toBeNull();
  });

  it('fills the form from a recorded plan and builds the same plan back', () => {
    const form = recoveryFormFromPlan(PLAN);
    expect(form).toMatchObject({ route: 'chat-short/eu-1', share: 5, drain: 600, admission: null, warmUp: 'failed' });
    expect(JSON.parse(recoveryPlanJson(form))).toEqual(PLAN);
    expect(recoveryFormFromPlan({ ...PLAN, admission_before_restore: 64 }).admission).toBe(64);
  });

  it('places problems at their fields, the rest above the form, without repeating a path', () => {
    const merged = mergeProblems(
      [
        { path: 'drain_deadline_s', expected: 'a finite number of seconds greater than 0', found: 'nothing' },
        { path: '$', expected: 'a JSON object', found: 'x' },
        { path: 'canary.share_percent', expected: 'a bounded share', found: '0' },
      ],
      [
        { path: 'drain_deadline_s', expected: 'a finite number of seconds greater than 0', found: 'nothing' },
        { path: 'rehearsal.date', expected: 'a day that has happened (today is 2026-12-01)', found: '"2026-12-02"' },
      ],
    );
    expect(merged.map((p) => p.path)).toEqual(['drain_deadline_s', '$', 'canary.share_percent', 'rehearsal.date']);
    const placed = placeRecoveryProblems(merged);
    expect(placed.byPath.get('drain_deadline_s')![0]!.found).toBe('nothing');
    expect(placed.byPath.get('canary.share_percent')).toHaveLength(1);
    expect(placed.byPath.get('rehearsal.date')).toHaveLength(1);
    expect(placed.general.map((p) => p.path)).toEqual(['$']);
  });
});

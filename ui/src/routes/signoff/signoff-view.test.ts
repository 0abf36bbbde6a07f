import { describe, expect, it } from 'vitest';
import { formatBytes } from '$lib/format';
import { cell, invalidCell } from '../results/results-fixture';
import { EVIDENCE, PLAN, event, recoveryEvidenceWithoutPlan, signedStatus, status, voidStatus } from './signoff-fixture';
import {
  CHECKS,
  checkState,
  compatibilityTables,
  decisionCandidates,
  decisionLabel,
  decisionWarning,
  emptyRecoveryForm,
  isFailedStepFinding,
  isIsoDate,
  mergeProblems,
  operationsTables,
  placeRecoveryProblems,
  problemsFromMessage,
  recoveryFormFromPlan,
  recoveryFormProblems,
  recoveryNeedsPlan,
  recoveryPlanJson,
  type RecoveryForm,
  qualityTables,
  rawJson,
  recordedDecisions,
  recoveryTables,
  signedDigest,
} from './signoff-view';

describe('checkState', () => {
  it('is unsigned without a signature, signed while it holds, void when the evidence changed', () => {
    expect(checkState(status('quality'))).toBe('unsigned');
    expect(checkState(signedStatus('quality', 3))).toBe('signed');
    expect(checkState(voidStatus('quality', 3))).toBe('void');
  });

  it('follows the backend: a signature it calls invalid is void even without a reason', () => {
    expect(checkState({ signed: event(1), valid: false })).toBe('void');
    // An unsigned check is never "valid", whatever the flag says.
    expect(checkState({ signed: null, valid: true })).toBe('unsigned');
  });

  it('lists the four checks of the guide in order', () => {
    expect(CHECKS.map((c) => c.check)).toEqual(['compatibility', 'quality', 'operations', 'recovery']);
    expect(CHECKS.map((c) => c.number)).toEqual([1, 2, 3, 4]);
  });
});

describe('signedDigest', () => {
  it('reads the digest a signature was made over', () => {
    expect(signedDigest(voidStatus('recovery', 2).signed)).toBe('7'.repeat(64));
    expect(signedDigest(null)).toBeNull();
    expect(signedDigest(event(1, { payload: 'odd' }))).toBeNull();
  });
});

describe('evidence tables', () => {
  it('reads compatibility: cells with valid/invalid and reasons, evidence files with sha256', () => {
    const t = compatibilityTables(EVIDENCE.compatibility)!;
    expect(t.cells.map((c) => [c.cell, c.valid])).toEqual([
      ['B0', true],
      ['C1', true],
      ['C9', false],
    ]);
    expect(t.cells[2]!.reasons[0]).toContain('no compatibility evidence');
    expect(t.files).toEqual([
      { run: 1, cell: 'B0', kind: 'startup_log', sha256: 'a'.repeat(64) },
      { run: 3, cell: 'C1', kind: 'metrics', sha256: 'b'.repeat(64) },
    ]);
  });

  it('reads quality: only the protected paired rows, and the floors', () => {
    const t = qualityTables(EVIDENCE.quality)!;
    expect(t.policySha256).toBe('f'.repeat(64));
    expect(t.adjudications).toBe(1);
    const c1 = t.cells.find((c) => c.cell === 'C1')!;
    expect(c1.paired.map((r) => r.stratum)).toEqual(['de-long']);
    expect(c1.paired[0]).toEqual({ stratum: 'de-long', n: 40, b: 6, c: 1, delta: -0.125, ciLow: -0.3, ciHigh: -0.05, margin: 0.03, verdict: 'inferior' });
    expect(c1.floors[0]).toMatchObject({ segment: 'de-long', floor: 0.9, accepted: 8, n: 10, passes: false });
    expect(t.cells.find((c) => c.cell === 'B0')!.paired).toEqual([]);
  });

  it('reads operations: request counts in order and per class latency and goodput; a missing value stays absent', () => {
    const t = operationsTables(EVIDENCE.operations)!;
    const c1 = t.cells[0]!;
    expect(c1.requests[0]).toEqual(['offered', 40]);
    expect(c1.requests.map(([k]) => k)).toEqual(['offered', 'completed', 'failed', 'rejected', 'timeout', 'unfinished', 'validated', 'accepted']);
    expect(c1.classes).toHaveLength(1);
    expect(c1.classes[0]).toMatchObject({ klass: 'short', count: 30, perS: 0.5, good: 30, cohort: 36, sloOnly: false });
    expect(c1.classes[0]!.itl).toEqual({ p50: 20, p90: 25, p99: null });
  });

  it('lists a class with goodput but no latency', () => {
    const t = operationsTables({ cells: [{ cell: 'C2', requests: {}, latency: {}, goodput: { long: { per_s: null, good: 0, cohort: 3, slo_only: true } } }] })!;
    expect(t.cells[0]!.classes[0]).toMatchObject({ klass: 'long', ttft: null, perS: null, sloOnly: true });
    expect(t.cells[0]!.requests[0]).toEqual(['offered', null]);
  });

  it('reads recovery: the drain deadline and the rollback fit per cell', () => {
    const t = recoveryTables(EVIDENCE.recovery)!;
    expect(t.drainS).toBe(30);
    expect(t.cells[0]).toMatchObject({ cell: 'B0', fits: null });
    expect(t.cells[1]).toMatchObject({ cell: 'C1', fits: false, maxSequences: 21, shortfallBytes: 4 * 1024 ** 3 });
    expect(recoveryTables({ drain_s: null, cells: [] })).toEqual({ drainS: null, plan: null, findings: [], cells: [] });
  });

  it('reads recovery: the recorded plan with its version, digest and rehearsal, and the findings', () => {
    const t = recoveryTables(EVIDENCE.recovery)!;
    const plan = t.plan!;
    expect(plan).toMatchObject({
      version: 2,
      sha256: '5'.repeat(64),
      recordedBy: 'Owner',
      recordedAt: '2026-12-01T08:00:00Z',
      route: 'chat-short/eu-1',
      sharePercent: 5,
      drainDeadlineS: 600,
      admissionBeforeRestore: null,
    });
    expect(plan.breachRule).toContain('TTFT p99');
    expect(plan.rehearsal.date).toBe('2026-11-30');
    expect(plan.rehearsal.steps.map((s) => [s.step, s.outcome])).toEqual([
      ['restart', 'passed'],
      ['cache_loss', 'passed'],
      ['warm_up', 'failed'],
    ]);
    expect(plan.rehearsal.notes).toBe('warm-up took 9 min');
    expect(plan.source).toEqual(PLAN);
    expect(t.findings).toHaveLength(3);
    expect(t.findings.filter(isFailedStepFinding)).toEqual(['rehearsal step warm_up failed on 2026-11-30']);
    expect(recoveryNeedsPlan(EVIDENCE.recovery)).toBe(false);
  });

  it('reads recovery without a plan, and stays tolerant of a malformed one', () => {
    const none = recoveryTables(recoveryEvidenceWithoutPlan())!;
    expect(none.plan).toBeNull();
    expect(none.findings[0]).toMatch(/^no recovery plan recorded/);
    expect(recoveryNeedsPlan(recoveryEvidenceWithoutPlan())).toBe(true);
    // An evidence shape without a table view says nothing about the plan: the backend decides.
    expect(recoveryNeedsPlan('x')).toBe(false);

    const odd = recoveryTables({ cells: [], plan: { version: '2', plan: { canary: 'x', rehearsal: { restart: 'maybe' } } }, findings: [1, 'a'] })!;
    expect(odd.plan).toMatchObject({ version: null, route: null, sharePercent: null, source: null });
    expect(odd.plan!.rehearsal.steps[0]!.outcome).toBeNull();
    expect(odd.findings).toEqual(['a']);
    const withAdmission = recoveryTables({ cells: [], plan: { version: 3, plan: { ...PLAN, admission_before_restore: 64 } } })!;
    expect(withAdmission.plan!.admissionBeforeRestore).toBe(64);
    expect(withAdmission.plan!.source!.admission_before_restore).toBe(64);
  });

  it('gives no table for a shape it does not know (the raw JSON still shows it)', () => {
    expect(compatibilityTables(null)).toBeNull();
    expect(compatibilityTables({ cells: [] })).toBeNull();
    expect(qualityTables([1, 2])).toBeNull();
    expect(operationsTables({ cells: 'x' })).toBeNull();
    expect(recoveryTables('x')).toBeNull();
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

  it('is silent when all four checks are signed over the current evidence', () => {
    expect(decisionWarning(all())).toBeNull();
  });

  it('names the unsigned and the void checks', () => {
    const checks = all();
    checks[1] = status('quality');
    checks[3] = voidStatus('recovery', 4);
    const w = decisionWarning(checks)!;
    expect(w).toContain('not signed: quality');
    expect(w).toContain('void (evidence changed after signing): recovery');
    expect(w).toContain('can still be recorded');
  });

  it('counts a check the backend did not list as unsigned', () => {
    expect(decisionWarning(all().slice(0, 3))).toContain('not signed: recovery');
  });
});

describe('decisions', () => {
  it('decides about every cell but the baseline, invalid ones included', () => {
    expect(decisionCandidates([cell('B0'), cell('C1'), invalidCell('C9')]).map((c) => c.cell)).toEqual(['C1', 'C9']);
  });

  it('reads the recorded decisions from their audit events', () => {
    const rows = recordedDecisions([
      event(5, { kind: 'decision', subject: 'C1', actor: 'Architect', payload: { outcome: 'calibrate', suggested: 'calibrate', rationale: 'de-long regressed' } }),
      event(6, { kind: 'decision', subject: 'C2', payload: null }),
    ]);
    expect(rows[0]).toEqual({ seq: 5, candidate: 'C1', actor: 'Architect', at: '2026-03-05T09:00:00Z', outcome: 'calibrate', suggested: 'calibrate', rationale: 'de-long regressed' });
    expect(rows[1]).toMatchObject({ outcome: null, suggested: null, rationale: '' });
    expect(decisionLabel('retain')).toBe('retain (keep B0)');
    expect(decisionLabel('rollback')).toBe('roll back');
    expect(decisionLabel(null)).toBe('absent');
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

  it('checks the form by the backend rules, at the backend paths', () => {
    expect(recoveryFormProblems(filled(), '2026-12-01')).toEqual([]);
    const empty = recoveryFormProblems(emptyRecoveryForm(), '2026-12-01').map((p) => p.path);
    expect(empty).toEqual([
      'canary.route',
      'canary.share_percent',
      'breach_rule',
      'drain_deadline_s',
      'rehearsal.date',
      'rehearsal.restart',
      'rehearsal.cache_loss',
      'rehearsal.warm_up',
    ]);
    const paths = (patch: Partial<RecoveryForm>) => recoveryFormProblems(filled(patch), '2026-12-01').map((p) => p.path);
    expect(paths({ share: 0 })).toEqual(['canary.share_percent']);
    expect(paths({ share: 100 })).toEqual([]);
    expect(paths({ share: 100.5 })).toEqual(['canary.share_percent']);
    expect(paths({ drain: 0 })).toEqual(['drain_deadline_s']);
    expect(paths({ admission: 0 })).toEqual(['admission_before_restore']);
    expect(paths({ admission: 2.5 })).toEqual(['admission_before_restore']);
    expect(paths({ breach: '   ' })).toEqual(['breach_rule']);
    expect(paths({ route: 'x'.repeat(2001) })).toEqual(['canary.route']);
    expect(paths({ notes: '' })).toEqual([]);
    expect(paths({ notes: 'x'.repeat(2001) })).toEqual(['rehearsal.notes']);
    expect(paths({ date: '2026-02-30' })).toEqual(['rehearsal.date']);
    const future = recoveryFormProblems(filled({ date: '2026-12-02' }), '2026-12-01');
    expect(future[0]).toMatchObject({ path: 'rehearsal.date', expected: 'a day that has happened (today is 2026-12-01)' });
  });

  it('knows real calendar days', () => {
    for (const ok of ['2024-02-29', '2026-12-01', '2000-02-29']) expect(isIsoDate(ok)).toBe(true);
    for (const bad of ['2025-02-29', '1900-02-29', '2026-13-01', '2026-1-01', '26-12-01', '2026-12-0a', '']) expect(isIsoDate(bad)).toBe(false);
  });

  it('places problems at their fields, the rest above the form, the form\'s own first', () => {
    const merged = mergeProblems(
      [{ path: 'drain_deadline_s', expected: 'a finite number of seconds greater than 0', found: 'nothing' }],
      [
        { path: 'drain_deadline_s', expected: 'a recovery plan', found: 'invalid type: null' },
        { path: '$', expected: 'a JSON object', found: 'x' },
        { path: 'canary.share_percent', expected: 'a bounded share', found: '0' },
      ],
    );
    expect(merged.map((p) => p.path)).toEqual(['drain_deadline_s', '$', 'canary.share_percent']);
    const placed = placeRecoveryProblems(merged);
    expect(placed.byPath.get('drain_deadline_s')![0]!.found).toBe('nothing');
    expect(placed.byPath.get('canary.share_percent')).toHaveLength(1);
    expect(placed.general.map((p) => p.path)).toEqual(['$']);
  });

  it('reads the problems listed in a refusal to record', () => {
    const message =
      'the recovery plan cannot be recorded:\n- rehearsal.date: expected a day that has happened (today is 2026-12-01), found "2026-12-02"\n- breach_rule: expected a text of 1 to 2000 characters, found "  "';
    expect(problemsFromMessage(message)).toEqual([
      { path: 'rehearsal.date', expected: 'a day that has happened (today is 2026-12-01)', found: '"2026-12-02"' },
      { path: 'breach_rule', expected: 'a text of 1 to 2000 characters', found: '"  "' },
    ]);
    expect(problemsFromMessage('recovery plan already recorded as version 2')).toEqual([]);
  });
});

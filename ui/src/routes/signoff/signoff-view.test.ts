import { describe, expect, it } from 'vitest';
import { cell, invalidCell } from '../results/results-fixture';
import { EVIDENCE, event, signedStatus, status, voidStatus } from './signoff-fixture';
import {
  CHECKS,
  checkState,
  compatibilityTables,
  decisionCandidates,
  decisionLabel,
  decisionWarning,
  formatBytes,
  operationsTables,
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
    expect(recoveryTables({ drain_s: null, cells: [] })).toEqual({ drainS: null, cells: [] });
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
    expect(formatBytes(12 * 1024 ** 3)).toBe('12.0 GiB');
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

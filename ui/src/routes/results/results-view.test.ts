import { describe, expect, it } from 'vitest';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import {
  classGateLabel,
  classGateTone,
  floorLabel,
  gateLabel,
  missesList,
  noiseFloorText,
  operatingPointLabel,
  outcomeTone,
  testCellLabel,
  verdictLabel,
} from './results-view';

describe('labels', () => {
  it('names the client\'s in-flight cap apart from the server\'s admission limit', () => {
    const inf = { offered: { kind: 'unbounded' as const }, admission_limit: 4, client_concurrency: 2 };
    expect(operatingPointLabel(inf)).toBe('all requests at once · client cap 2 in flight · admission limit 4');
    expect(operatingPointLabel({ ...inf, client_concurrency: null })).toBe('all requests at once · admission limit 4');
  });
  it('never calls a verdict "equivalent" (the headline is the backend\'s sentence)', () => {
    const verdicts: PairedVerdict[] = ['non_inferior', 'inferior', 'collect_more_evidence'];
    expect(verdicts.map(verdictLabel).some((l) => /equivalen/i.test(l))).toBe(false);
    expect(verdictLabel('collect_more_evidence')).toBe('collect more evidence');
    expect(verdictLabel('non_inferior')).toBe('non-inferior');
    expect(verdictLabel('inferior')).toBe('inferior');
  });

  it('shows an uncontrolled comparison and an invalid baseline as dangers, a class gate in the gate\'s words', () => {
    expect(outcomeTone('uncontrolled')).toBe('danger');
    expect(outcomeTone('baseline_invalid')).toBe('danger');
    expect(outcomeTone('collect_more_evidence')).toBe('warn');
    expect(classGateLabel('undecided')).toBe('undecided');
    expect(classGateLabel('does_not')).toBe('does not qualify');
    expect(classGateLabel('qualifies')).toBe('qualifies');
    expect(classGateTone('does_not')).toBe('danger');
  });

  it('says pass, fail or no evidence for a floor, and undecided for an open gate', () => {
    expect(floorLabel(true)).toBe('pass');
    expect(floorLabel(false)).toBe('fail');
    expect(floorLabel(null)).toBe('no evidence');
    expect(gateLabel(null)).toBe('undecided');
    expect(gateLabel(false)).toBe('does not qualify');
  });

  it('names the test cells as the guide does', () => {
    expect(testCellLabel({ kind: 'b0' })).toMatch(/rollback target/);
    expect(testCellLabel({ kind: 'invalid', name: 'X', reason: 'no FP8 kernel' })).toBe('unsupported: no FP8 kernel');
    expect(testCellLabel({ kind: 'custom', name: 'int4' })).toBe('named intervention: int4');
  });

  it('says why there is no noise floor, and shows it with its n when there is', () => {
    expect(noiseFloorText(null)).toMatch(/^absent/);
    expect(noiseFloorText({ n: 40, b: 1, c: 2, flip_rate: 0.075 })).toBe('flip rate 7.5% (n = 40, b = 1, c = 2)');
  });

  it('lists only the SLO misses that happened', () => {
    expect(missesList({ ttft: 3, itl: 0, e2e: 0, after_drain: 1, not_accepted: 0, timing_missing: 2 })).toEqual([
      'TTFT 3',
      'after drain 1',
      'timing missing 2',
    ]);
  });
});

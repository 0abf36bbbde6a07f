import { describe, expect, it } from 'vitest';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import {
  OUTCOME_LABEL,
  floorLabel,
  gateLabel,
  missesList,
  noiseFloorText,
  testCellLabel,
  verdictLabel,
} from './results-view';

describe('labels', () => {
  it('never calls a verdict or an outcome "equivalent"', () => {
    const verdicts: PairedVerdict[] = ['non_inferior', 'inferior', 'collect_more_evidence'];
    const all = [...verdicts.map(verdictLabel), ...Object.values(OUTCOME_LABEL)];
    expect(all.some((l) => /equivalen/i.test(l))).toBe(false);
    expect(verdictLabel('collect_more_evidence')).toBe('collect more evidence');
    expect(verdictLabel('non_inferior')).toBe('non-inferior');
    expect(verdictLabel('inferior')).toBe('inferior');
    expect(OUTCOME_LABEL.invalid).toBe('invalid — no score');
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

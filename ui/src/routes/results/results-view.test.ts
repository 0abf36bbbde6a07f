import { describe, expect, it } from 'vitest';
import { cell } from './results-fixture';
import {
  ABSENT,
  formatDuration,
  formatNumber,
  formatP,
  formatPp,
  formatPpInterval,
  formatShare,
} from '$lib/format';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import {
  OUTCOME_LABEL,
  byClass,
  floorLabel,
  formatMeanSd,
  formatRange,
  gateLabel,
  missesList,
  noiseFloorText,
  sortPaired,
  testCellLabel,
  verdictLabel,
} from './results-view';

describe('absent values', () => {
  it('reads a missing measurement as "absent", never 0 or blank', () => {
    for (const f of [formatNumber, formatDuration, formatShare, formatPp, formatP]) {
      expect(f(null)).toBe(ABSENT);
      expect(f(undefined)).toBe(ABSENT);
      expect(f(Number.NaN)).toBe(ABSENT);
    }
    expect(formatPpInterval(null, 0.1)).toBe(ABSENT);
    expect(formatRange(0.1, null)).toBe(ABSENT);
    expect(formatMeanSd(null, 0.1)).toBe(ABSENT);
    expect(ABSENT).toBe('absent');
  });

  it('still shows a measured 0 as 0', () => {
    expect(formatNumber(0)).toBe('0');
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatShare(0)).toBe('0.0%');
  });

  it('formats measured values for reading', () => {
    expect(formatDuration(1234.56)).toBe('1.2 s');
    expect(formatDuration(234.56)).toBe('234.6 ms');
    expect(formatShare(0.9125)).toBe('91.3%');
    expect(formatPp(-0.0125)).toBe('−1.3 pp');
    expect(formatPp(0.004)).toBe('+0.4 pp');
    expect(formatPp(-0.0001)).toBe('0.0 pp');
    expect(formatPpInterval(-0.031, 0.008)).toBe('[−3.1, +0.8] pp');
    expect(formatP(0.0004)).toBe('< 0.001');
    expect(formatP(0.04567)).toBe('0.0457');
    expect(formatShare(0.9)).toBe('90.0%');
    expect(formatShare(0.975)).toBe('97.5%');
    expect(formatMeanSd(0.5, 0.05)).toBe('0.500 ± 0.0500');
    expect(formatMeanSd(0.5, null)).toBe('0.500');
    expect(formatMeanSd(1.1345, 0.05, 'good/s')).toBe('1.13 ± 0.0500 good/s');
    expect(formatRange(1.11, 1.354)).toBe('[1.11, 1.35]');
  });
});

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

  it('orders classes as the policy does, then any other', () => {
    const map = { '(unclassified)': 1, long: 2, short: 3 };
    expect(byClass(map, ['short', 'medium', 'long']).map(([k]) => k)).toEqual(['short', 'long', '(unclassified)']);
  });
});

describe('paired rows', () => {
  const rows = cell('C1').paired;

  it('groups the rows by kind, keeping the reading order the analysis gives', () => {
    const sorted = sortPaired(rows);
    expect(sorted.overall.map((r) => r.stratum)).toEqual(['overall']);
    expect(sorted.segments.map((r) => r.stratum)).toEqual(['de-long', 'numeric']);
    expect(sorted.marginals.map((r) => r.stratum)).toEqual([
      'language=en',
      'language=de',
      'length_class=long',
      'answer_kind=absent',
    ]);
  });
});

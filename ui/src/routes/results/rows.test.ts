import { describe, expect, it } from 'vitest';
import { cell } from './results-fixture';
import { byClass, pairedByKind } from './rows';

describe('table rows', () => {
  it('orders classes as the policy does, then any other', () => {
    const map = { '(unclassified)': 1, long: 2, short: 3 };
    expect(byClass(map, ['short', 'medium', 'long']).map(([k]) => k)).toEqual(['short', 'long', '(unclassified)']);
  });

  it('groups the paired rows by kind, keeping the reading order the analysis gives', () => {
    const grouped = pairedByKind(cell('C1').paired);
    expect(grouped.overall.map((r) => r.stratum)).toEqual(['overall']);
    expect(grouped.segments.map((r) => r.stratum)).toEqual(['de-long', 'numeric']);
    expect(grouped.marginals.map((r) => r.stratum)).toEqual([
      'language=en',
      'language=de',
      'length_class=long',
      'answer_kind=absent',
    ]);
  });
});

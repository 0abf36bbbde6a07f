import { describe, expect, it } from 'vitest';
import type { Pair } from './review-view';
import { orderPairs } from './review-order';

function p(id: string, over: Partial<Pair>): Pair {
  return {
    pair_id: `7:${id}`,
    candidate: 'Q8',
    item_id: id,
    strata: null,
    disagreement: true,
    a: {} as Pair['a'],
    b: {} as Pair['b'],
    item: null,
    item_note: null,
    label: null,
    note: null,
    candidate_is_a: null,
    unblinded: false,
    ...over,
  };
}

const pairs = [
  p('z-item', { label: 'both_wrong', candidate: 'C2' }),
  p('a-item', { candidate: 'C1' }),
  p('m-item', { note: 'torque off by ten' }),
];
const ids = (list: Pair[]) => list.map((x) => x.item_id);

describe('review list order and search', () => {
  it('keeps the blind order unless asked, and never changes the queue', () => {
    expect(ids(orderPairs(pairs, 'blind', ''))).toEqual(['z-item', 'a-item', 'm-item']);
    expect(ids(orderPairs(pairs, 'item', ''))).toEqual(['a-item', 'm-item', 'z-item']);
    expect(ids(orderPairs(pairs, 'candidate', ''))).toEqual(['a-item', 'z-item', 'm-item']);
    expect(ids(orderPairs(pairs, 'unlabelled', ''))).toEqual(['a-item', 'm-item', 'z-item']);
    expect(ids(pairs)).toEqual(['z-item', 'a-item', 'm-item']);
  });

  it('finds pairs by item, label, candidate and note', () => {
    expect(ids(orderPairs(pairs, 'blind', 'both wrong'))).toEqual(['z-item']);
    expect(ids(orderPairs(pairs, 'blind', 'unlabelled'))).toEqual(['a-item', 'm-item']);
    expect(ids(orderPairs(pairs, 'blind', 'TORQUE'))).toEqual(['m-item']);
    expect(ids(orderPairs(pairs, 'blind', 'c1'))).toEqual(['a-item']);
  });
});

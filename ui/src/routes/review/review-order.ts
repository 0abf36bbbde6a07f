// The order and the search of the review list. The queue comes in its blind order (drawn from the
// study's recorded seed); the reviewer may reorder or narrow what is listed, never what is in it.
import { matchesSearch, sortRows } from '$lib/table-sort';
import type { ReviewRow } from '$lib/bindings/ReviewRow';
import { labelText, strataText } from './review-view';

/** What the list orders and searches by: a row of the queue, or a whole pair. */
type Listed = Pick<ReviewRow, 'pair_id' | 'item_id' | 'candidate' | 'strata' | 'label' | 'note'>;

export type ReviewOrder = 'blind' | 'unlabelled' | 'candidate' | 'stratum' | 'item';

export const REVIEW_ORDERS: readonly { value: ReviewOrder; label: string }[] = [
  { value: 'blind', label: 'blind order' },
  { value: 'unlabelled', label: 'unlabelled first' },
  { value: 'candidate', label: 'candidate' },
  { value: 'stratum', label: 'stratum' },
  { value: 'item', label: 'fixture item' },
];

function key(pair: Listed, order: ReviewOrder): string | number {
  switch (order) {
    case 'unlabelled':
      return pair.label === null ? 0 : 1;
    case 'candidate':
      return pair.candidate;
    case 'stratum':
      return strataText(pair.strata);
    case 'item':
      return pair.item_id;
    case 'blind':
      return 0;
  }
}

/** The pairs listed: those matching every word of `query` (id, item, candidate, strata, label, note), in `order`. */
export function orderPairs<T extends Listed>(pairs: readonly T[], order: ReviewOrder, query: string): T[] {
  // Without a search, nothing is built per row (a queue may hold 100,000 pairs).
  const found = query.trim()
    ? pairs.filter((p) =>
        matchesSearch(query, [p.pair_id, p.item_id, p.candidate, strataText(p.strata), labelText(p.label), p.note]),
      )
    : pairs.slice();
  return order === 'blind' ? found : sortRows(found, { key: order, direction: 'ascending' }, key);
}

// Ordering and filtering of rows a list already holds, for the tables people sort and search.
// Presentation only: the rows and their values are the backend's; nothing is computed here.

export type SortDirection = 'ascending' | 'descending';

/** A table's order: the column key and the direction; `null` keeps the backend's order. */
export type Sort<K extends string = string> = { key: K; direction: SortDirection } | null;

/** What a column sorts by: text (natural order, "run 10" after "run 9") or a number. */
export type SortValue = string | number | boolean | null | undefined;

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

function compare(a: SortValue, b: SortValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return collator.compare(String(a), String(b));
}

function absent(v: SortValue): boolean {
  return v === null || v === undefined || v === '' || (typeof v === 'number' && !Number.isFinite(v));
}

/**
 * The rows in the order `sort` asks for; stable (equal rows keep the backend's order), and an
 * absent value goes last whichever the direction: a missing figure never passes for the least.
 */
export function sortRows<T, K extends string>(
  rows: readonly T[],
  sort: Sort<K>,
  value: (row: T, key: K) => SortValue,
): T[] {
  if (!sort) return [...rows];
  const sign = sort.direction === 'ascending' ? 1 : -1;
  return rows
    .map((row, index) => ({ row, index, v: value(row, sort.key) }))
    .sort((x, y) => {
      const ax = absent(x.v);
      const ay = absent(y.v);
      if (ax || ay) return ax === ay ? x.index - y.index : ax ? 1 : -1;
      return sign * compare(x.v, y.v) || x.index - y.index;
    })
    .map((entry) => entry.row);
}

/** A click on a column header: that column ascending, or the other direction when it is sorted already. */
export function toggleSort<K extends string>(current: Sort<K>, key: K, first: SortDirection = 'ascending'): Sort<K> {
  if (current?.key === key) return { key, direction: current.direction === 'ascending' ? 'descending' : 'ascending' };
  return { key, direction: first };
}

/** The `aria-sort` of a column header. */
export function ariaSort<K extends string>(sort: Sort<K>, key: K): 'ascending' | 'descending' | 'none' {
  return sort?.key === key ? sort.direction : 'none';
}

/** Whether every word of `query` occurs (case-insensitive) in one of `texts`; an empty query matches all. */
export function matchesSearch(query: string, texts: readonly (string | number | null | undefined)[]): boolean {
  const words = query.toLocaleLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const haystack = texts
    .filter((t) => t !== null && t !== undefined)
    .map((t) => String(t).toLocaleLowerCase())
    .join('\n');
  return words.every((w) => haystack.includes(w));
}

import { describe, expect, it } from 'vitest';
import { ariaSort, matchesSearch, sortRows, toggleSort, type Sort } from './table-sort';

type Row = { id: number; name: string; ttft: number | null };
const rows: Row[] = [
  { id: 1, name: 'run 10', ttft: 120 },
  { id: 2, name: 'run 9', ttft: null },
  { id: 3, name: 'Run 2', ttft: 80 },
  { id: 4, name: 'run 9', ttft: 80 },
];
const value = (r: Row, key: 'name' | 'ttft') => r[key];
const ids = (list: Row[]) => list.map((r) => r.id);

describe('sortRows', () => {
  it('keeps the backend order without a sort and never changes the input', () => {
    const copy = sortRows(rows, null, value);
    expect(ids(copy)).toEqual([1, 2, 3, 4]);
    expect(copy).not.toBe(rows);
  });

  it('orders text naturally and case-insensitively, stable for equal values', () => {
    expect(ids(sortRows(rows, { key: 'name', direction: 'ascending' }, value))).toEqual([3, 2, 4, 1]);
    expect(ids(sortRows(rows, { key: 'name', direction: 'descending' }, value))).toEqual([1, 2, 4, 3]);
    expect(ids(rows)).toEqual([1, 2, 3, 4]);
  });

  it('puts an absent figure last in both directions: it is not the smallest value', () => {
    expect(ids(sortRows(rows, { key: 'ttft', direction: 'ascending' }, value))).toEqual([3, 4, 1, 2]);
    expect(ids(sortRows(rows, { key: 'ttft', direction: 'descending' }, value))).toEqual([1, 3, 4, 2]);
  });
});

describe('toggleSort and ariaSort', () => {
  it('sorts a new column in its first direction and flips the sorted one', () => {
    let sort: Sort<'name' | 'ttft'> = null;
    expect(ariaSort(sort, 'name')).toBe('none');
    sort = toggleSort(sort, 'name');
    expect(sort).toEqual({ key: 'name', direction: 'ascending' });
    expect(ariaSort(sort, 'name')).toBe('ascending');
    expect(ariaSort(sort, 'ttft')).toBe('none');
    sort = toggleSort(sort, 'name');
    expect(sort).toEqual({ key: 'name', direction: 'descending' });
    expect(toggleSort(sort, 'ttft', 'descending')).toEqual({ key: 'ttft', direction: 'descending' });
  });
});

describe('matchesSearch', () => {
  it('needs every word somewhere, in any case; empty matches all', () => {
    expect(matchesSearch('', ['x'])).toBe(true);
    expect(matchesSearch('  ', [])).toBe(true);
    expect(matchesSearch('fp8 CHAT', ['FP8 KV for the chat route', null])).toBe(true);
    expect(matchesSearch('fp8 chat', ['FP8 KV', 'the chat route'])).toBe(true);
    expect(matchesSearch('fp8 llama', ['FP8 KV for the chat route'])).toBe(false);
    expect(matchesSearch('12', [112, undefined])).toBe(true);
  });
});

// The rows of the Results tables: a cell's per-class figures in the policy's class order, and its
// paired rows by kind. The order within each comes from the backend; nothing is computed here.

import type { CellAnalysis } from '$lib/bindings/CellAnalysis';
import type { PairedRow } from '$lib/bindings/PairedRow';

export type Cell = CellAnalysis;
export type Row = PairedRow;

/** Entries of a per-class map in the policy's class order, then any other (e.g. "(unclassified)"). */
export function byClass<T>(map: Partial<Record<string, T>>, classes: readonly string[]): [string, T][] {
  const known = classes.filter((c) => map[c] !== undefined).map((c): [string, T] => [c, map[c] as T]);
  const rest = Object.keys(map)
    .filter((k) => !classes.includes(k) && map[k] !== undefined)
    .sort()
    .map((k): [string, T] => [k, map[k] as T]);
  return [...known, ...rest];
}

/** The paired rows of a cell by kind, each group in the analysis's reading order (overall, segments with the protected first, marginal strata). */
export function pairedByKind(rows: readonly Row[]): { overall: Row[]; segments: Row[]; marginals: Row[] } {
  return {
    overall: rows.filter((r) => r.kind === 'overall'),
    segments: rows.filter((r) => r.kind === 'segment'),
    marginals: rows.filter((r) => r.kind === 'marginal'),
  };
}

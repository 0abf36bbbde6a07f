// @vitest-environment node
// The shared table of how a figure reads (fixtures/format/cases.json): kvgate-core's display
// module is tested against the same file, so the backend's sentences and the screens agree.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatCount, formatDuration, formatP, formatPp, formatPpInterval, formatRate, formatShare } from './format';

type Case = [unknown, string];
const cases: Record<string, Case[]> = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../fixtures/format/cases.json', import.meta.url)), 'utf8'),
);

const show: Record<string, (input: never) => string> = {
  share: (v: number | null) => formatShare(v),
  pp: (v: number | null) => formatPp(v),
  pp_interval: ([lo, hi]: [number | null, number | null]) => formatPpInterval(lo, hi),
  rate: (v: number | null) => formatRate(v, 'req/s'),
  duration_ms: (v: number | null) => formatDuration(v),
  count: (v: number) => formatCount(v),
  p_value: (v: number | null) => formatP(v),
};

describe('the shared format cases', () => {
  const kinds = Object.keys(cases).filter((k) => !k.startsWith('_'));
  it('cover every kind the backend formats', () => {
    expect(kinds.sort()).toEqual(Object.keys(show).sort());
  });
  for (const kind of kinds) {
    it(`reads ${kind} as kvgate-core does`, () => {
      const format = show[kind];
      expect(format, kind).toBeDefined();
      for (const [input, want] of cases[kind] ?? []) {
        expect(format?.(input as never), `${kind}(${JSON.stringify(input)})`).toBe(want);
      }
    });
  }
});

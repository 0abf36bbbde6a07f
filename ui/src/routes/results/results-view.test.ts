import { describe, expect, it } from 'vitest';
import { cell, invalidCell, row } from './results-fixture';
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
  capacityScatter,
  cdfLayout,
  exportFileName,
  floorLabel,
  forestLayout,
  forestRows,
  formatMeanSd,
  formatRange,
  gateLabel,
  goodputBars,
  latencyLayout,
  linearScale,
  missesList,
  niceTicks,
  noiseFloorText,
  serializeSvg,
  sortPaired,
  svgSize,
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

  it('reads overall first, then segments with the protected ones first, then marginal strata by dimension', () => {
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

  it('leaves the marginal strata out of the forest plot unless asked', () => {
    expect(forestRows(rows, false).map((r) => r.stratum)).toEqual(['overall', 'de-long', 'numeric']);
    expect(forestRows(rows, true)).toHaveLength(rows.length);
  });
});

describe('scales', () => {
  it('maps a domain linearly onto a range, reversed ranges included', () => {
    const x = linearScale([-0.1, 0.1], [100, 300]);
    expect(x(-0.1)).toBe(100);
    expect(x(0)).toBeCloseTo(200);
    expect(x(0.1)).toBe(300);
    const y = linearScale([0, 10], [200, 0]);
    expect(y(0)).toBe(200);
    expect(y(10)).toBe(0);
    expect(linearScale([5, 5], [0, 100])(5)).toBe(50);
  });

  it('chooses round ticks covering the domain', () => {
    expect(niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(-0.07, 0.03, 5)).toEqual([-0.06, -0.04, -0.02, 0, 0.02]);
    expect(niceTicks(0, 2300, 5)).toEqual([0, 500, 1000, 1500, 2000]);
  });
});

describe('forest plot', () => {
  it('places −margin and 0 on the x scale where the interval bounds are measured', () => {
    const rows = [row('overall', { ci_low: -0.05, ci_high: 0.01, delta: -0.02, margin: 0.02 })];
    const layout = forestLayout(rows, 640, 190);
    const [r] = layout.rows;
    // The domain holds every bound, 0 and −margin; positions are linear in Δ.
    expect(layout.x.domain[0]).toBeLessThan(-0.05);
    expect(layout.x.domain[1]).toBeGreaterThan(0.01);
    expect(r!.xm).toBeCloseTo(layout.x(-0.02));
    expect(r!.xd).toBeCloseTo(r!.xm);
    const unit = (layout.x(0) - layout.x(-0.05)) / 0.05;
    expect(layout.x(0) - r!.xm).toBeCloseTo(0.02 * unit);
    expect(r!.x0).toBeCloseTo(layout.x(-0.05));
    expect(r!.x1).toBeCloseTo(layout.x(0.01));
    expect(layout.sharedMargin).toBe(0.02);
    expect(r!.x0!).toBeGreaterThanOrEqual(layout.plot.left);
    expect(r!.x1!).toBeLessThanOrEqual(layout.plot.right);
  });

  it('keeps −margin on the axis even when every interval lies above it', () => {
    const layout = forestLayout([row('overall', { ci_low: 0.01, ci_high: 0.02, delta: 0.015, margin: 0.1 })]);
    expect(layout.x.domain[0]).toBeLessThanOrEqual(-0.1);
    expect(layout.rows[0]!.xm).toBeGreaterThanOrEqual(layout.plot.left);
  });

  it('draws no point for a row without pairs and marks per-row margins when they differ', () => {
    const layout = forestLayout([row('overall'), row('de-long', { margin: 0.05, n: 0, delta: null, ci_low: null, ci_high: null })]);
    expect(layout.rows[1]!.xd).toBeNull();
    expect(layout.rows[1]!.x0).toBeNull();
    expect(layout.sharedMargin).toBeNull();
    expect(layout.rows[1]!.xm).toBeCloseTo(layout.x(-0.05));
    expect(layout.rows[1]!.y).toBeGreaterThan(layout.rows[0]!.y);
  });

  it('stays within Δ ∈ [−1, 1]', () => {
    const layout = forestLayout([row('overall', { ci_low: -1, ci_high: 1, delta: 0 })]);
    expect(layout.x.domain).toEqual([-1, 1]);
  });
});

describe('goodput bars', () => {
  it('draws a bar per class of each valid cell with its repeat interval, and none for an invalid cell', () => {
    const layout = goodputBars([cell('B0'), invalidCell('C9')], ['short', 'long']);
    expect(layout.groups.map((g) => [g.cell, g.valid])).toEqual([
      ['B0', true],
      ['C9', false],
    ]);
    expect(layout.bars).toHaveLength(1);
    const bar = layout.bars[0]!;
    expect(bar.y).toBeCloseTo(layout.y(0.5));
    expect(bar.whisker?.y1).toBeCloseTo(layout.y(0.95));
    expect(bar.whisker?.y0).toBeCloseTo(layout.y(0.05));
    expect(layout.y.domain[1]).toBeGreaterThanOrEqual(0.95);
  });

  it('draws no bar height for an absent mean', () => {
    const c = cell('B0');
    const g = c.goodput['short']!;
    const absent = { ...c, goodput: { short: { ...g, repeats: { n: 0, mean: null, sd: null, ci_low: null, ci_high: null } } } };
    const bar = goodputBars([absent], ['short']).bars[0]!;
    expect(bar.y).toBeNull();
    expect(bar.mean).toBeNull();
    expect(bar.whisker).toBeNull();
  });
});

describe('latency dots', () => {
  it('places each measured percentile and leaves absent ones undrawn, invalid cells out', () => {
    const layout = latencyLayout([cell('B0'), cell('C1'), invalidCell('C9')], ['short', 'long'], 'itl_ms');
    expect(layout.bands.map((b) => b.klass)).toEqual(['short', 'long']);
    const b0 = layout.lines.find((l) => l.cell === 'B0' && l.klass === 'short')!;
    expect(b0.points.map((p) => p.value)).toEqual([20, 25, null]);
    expect(b0.points[2]!.x).toBeNull();
    expect(b0.points[0]!.x).toBeCloseTo(layout.x(20));
    expect(layout.lines.some((l) => l.cell === 'C9')).toBe(false);
    const long = layout.lines.find((l) => l.cell === 'B0' && l.klass === 'long')!;
    expect(long.points.every((p) => p.x === null)).toBe(true);
  });
});

describe('latency distribution', () => {
  it("draws each valid cell's quantiles from 0 to 100 %, and lists cells without one", () => {
    const layout = cdfLayout([cell('B0'), invalidCell('C9')], 'short', 'ttft_cdf_ms');
    expect(layout.lines.map((l) => l.cell)).toEqual(['B0']);
    const points = layout.lines[0]!.points.split(' ').map((p) => p.split(',').map(Number));
    expect(points).toHaveLength(101);
    expect(points[0]![0]).toBeCloseTo(layout.x(100), 0);
    expect(points[0]![1]).toBeCloseTo(layout.y(0), 0);
    expect(points[100]![0]).toBeCloseTo(layout.x(250), 0);
    expect(points[100]![1]).toBeCloseTo(layout.y(1), 0);
    expect(cdfLayout([cell('B0')], 'long', 'e2e_cdf_ms').missing).toEqual(['B0']);
  });
});

describe('capacity scatter', () => {
  it('plots valid cells with the figure, and lists the others instead of plotting them at 0', () => {
    const noCapacity = cell('C2', { capacity: { ...cell('C2').capacity, engine_kv_tokens: null } });
    const layout = capacityScatter([cell('B0'), cell('C1'), noCapacity, invalidCell('C9')], 'engine_kv_tokens');
    expect(layout.points.map((p) => [p.cell, p.xValue])).toEqual([
      ['B0', 100_000],
      ['C1', 200_000],
    ]);
    expect(layout.points[0]!.yValue).toBe(0.9);
    expect(layout.missing).toEqual([
      { cell: 'C2', why: 'KV capacity absent' },
      { cell: 'C9', why: 'invalid — no score' },
    ]);
  });

});

describe('export', () => {
  function chart(): SVGSVGElement {
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', '0 0 640 300');
    svg.setAttribute('class', 'svelte-abc');
    const title = document.createElementNS(ns, 'title');
    title.textContent = 'Forest plot';
    const desc = document.createElementNS(ns, 'desc');
    desc.textContent = 'Data: synthetic demo';
    const line = document.createElementNS(ns, 'line');
    line.setAttribute('stroke', '#b3261e');
    svg.append(title, desc, line);
    document.body.append(svg);
    return svg;
  }

  it('serializes a standalone SVG document with its title, size and a background', () => {
    const svg = chart();
    const text = serializeSvg(svg);
    expect(text.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<svg')).toBe(true);
    expect(text).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(text).toContain('width="640"');
    expect(text).toContain('height="300"');
    expect(text).not.toContain('svelte-abc');
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const children = [...doc.documentElement.children].map((el) => el.tagName);
    expect(children).toEqual(['title', 'desc', 'rect', 'line']);
    expect(doc.querySelector('desc')?.textContent).toBe('Data: synthetic demo');
    // The chart on screen is left as it was.
    expect(svg.children).toHaveLength(3);
    expect(svgSize(svg)).toEqual({ width: 640, height: 300 });
  });

  it('names exported files after the study and the chart', () => {
    expect(exportFileName('FP8 KV, Llama 8B', 'forest-C1', 'svg')).toBe('fp8-kv-llama-8b_forest-c1.svg');
    expect(exportFileName('', 'goodput', 'png')).toBe('study_goodput.png');
  });
});

// Presentation of the study analysis: labels, absent values, the order of the paired rows, and
// the geometry of the charts. Every figure comes from the backend's `analyze_study`; nothing here
// decides a verdict, a gate or an outcome.

import type { CellAnalysis } from '$lib/bindings/CellAnalysis';
import type { ClassGoodput } from '$lib/bindings/ClassGoodput';
import type { NoiseFloor } from '$lib/bindings/NoiseFloor';
import type { PairedRow } from '$lib/bindings/PairedRow';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import type { Percentiles } from '$lib/bindings/Percentiles';
import type { SloMisses } from '$lib/bindings/SloMisses';
import type { SuggestedOutcome } from '$lib/bindings/SuggestedOutcome';
import type { TestCell } from '$lib/bindings/TestCell';
import { STRATA } from '$lib/bindings/strata';
import { ABSENT, formatCode, formatCount, formatRate, formatShare, isPresent } from '$lib/format';

export type Cell = CellAnalysis;
export type Row = PairedRow;

/** A verdict of a paired row in words. There is no "equivalent": an undecided row asks for more evidence. */
export function verdictLabel(verdict: PairedVerdict): string {
  return formatCode(verdict);
}

export type Tone = 'ok' | 'danger' | 'warn' | 'neutral';

export function verdictTone(verdict: PairedVerdict): Tone {
  return verdict === 'non_inferior' ? 'ok' : verdict === 'inferior' ? 'danger' : 'warn';
}

export const OUTCOME_LABEL: Record<SuggestedOutcome, string> = {
  baseline: 'baseline — retained as the rollback target',
  promote: 'promote — quality and goodput both qualify',
  retain: 'retain B0 — quality holds, goodput does not improve',
  calibrate: 'calibrate — a protected segment regressed',
  rollback: 'roll back — a protected segment regressed after the intervention',
  collect_more_evidence: 'collect more evidence',
  invalid: 'invalid — no score',
};

export function outcomeTone(outcome: SuggestedOutcome): Tone {
  switch (outcome) {
    case 'promote':
      return 'ok';
    case 'calibrate':
    case 'rollback':
    case 'invalid':
      return 'danger';
    case 'collect_more_evidence':
    case 'retain':
      return 'warn';
    case 'baseline':
      return 'neutral';
  }
}

/** What a cell is in the experiment matrix, in the guide's words. */
export function testCellLabel(tc: TestCell): string {
  switch (tc.kind) {
    case 'b0':
      return 'baseline: approved precision, the rollback target';
    case 'c1':
      return 'supported FP8 KV, default scales';
    case 'c2':
      return 'supported FP8 KV, calibrated scales';
    case 'c3':
      return 'supported selective layer exclusion';
    case 'custom':
      return `named intervention: ${tc.name}`;
    case 'invalid':
      return `unsupported: ${tc.reason}`;
  }
}

/** An absolute floor check: passed, failed, or without a judged item. */
export function floorLabel(passes: boolean | null): string {
  return passes === null ? 'no evidence' : passes ? 'pass' : 'fail';
}

/** A quality or goodput gate of the decision. */
export function gateLabel(qualifies: boolean | null): string {
  return qualifies === null ? 'undecided' : qualifies ? 'qualifies' : 'does not qualify';
}

/** A rate as mean ± sd ("1.13 ± 0.05 good/s"), the mean alone below two repeats; ABSENT without one. */
export function formatMeanSd(mean: number | null, sd: number | null, unit: string | null = null): string {
  if (!isPresent(mean)) return ABSENT;
  const text = isPresent(sd) ? `${formatRate(mean, null)} ± ${formatRate(sd, null)}` : formatRate(mean, null);
  return unit ? `${text} ${unit}` : text;
}

/** "[1.11, 1.35]" from a repeat interval of a rate; ABSENT below two repeats. */
export function formatRange(low: number | null, high: number | null): string {
  if (!isPresent(low) || !isPresent(high)) return ABSENT;
  return `[${formatRate(low, null)}, ${formatRate(high, null)}]`;
}

/** The noise floor in words, or why there is none. */
export function noiseFloorText(noise: NoiseFloor | null): string {
  if (!noise) return `${ABSENT}: B0 has no second pass over the same items`;
  return `flip rate ${formatShare(noise.flip_rate)} (n = ${formatCount(noise.n)}, b = ${formatCount(noise.b)}, c = ${formatCount(noise.c)})`;
}

/** The SLO misses that happened, by reason, e.g. ["TTFT 3", "after drain 1"]. */
export function missesList(misses: SloMisses): string[] {
  const names: [keyof SloMisses, string][] = [
    ['ttft', 'TTFT'],
    ['itl', 'ITL'],
    ['e2e', 'e2e'],
    ['after_drain', 'after drain'],
    ['not_accepted', 'not accepted'],
    ['timing_missing', 'timing missing'],
  ];
  return names.filter(([key]) => misses[key] > 0).map(([key, label]) => `${label} ${formatCount(misses[key])}`);
}

/** Entries of a per-class map in the policy's class order, then any other (e.g. "(unclassified)"). */
export function byClass<T>(map: Partial<Record<string, T>>, classes: readonly string[]): [string, T][] {
  const known = classes.filter((c) => map[c] !== undefined).map((c): [string, T] => [c, map[c] as T]);
  const rest = Object.keys(map)
    .filter((k) => !classes.includes(k) && map[k] !== undefined)
    .sort()
    .map((k): [string, T] => [k, map[k] as T]);
  return [...known, ...rest];
}

// ---- paired rows -------------------------------------------------------------------------------

function marginalKey(stratum: string): [number, number, string] {
  const [dim = '', value = ''] = stratum.split('=');
  const d = STRATA.findIndex((s) => s.key === dim);
  const v = d < 0 ? -1 : (STRATA[d]!.values as readonly string[]).indexOf(value);
  return [d < 0 ? STRATA.length : d, v < 0 ? Number.MAX_SAFE_INTEGER : v, stratum];
}

/** The paired rows of a cell in reading order: overall, segments (protected first), marginal strata by dimension. */
export function sortPaired(rows: readonly Row[]): { overall: Row[]; segments: Row[]; marginals: Row[] } {
  const overall = rows.filter((r) => r.kind === 'overall');
  const segments = rows
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => r.kind === 'segment')
    .sort((a, b) => Number(b.r.protected) - Number(a.r.protected) || a.i - b.i)
    .map(({ r }) => r);
  const marginals = rows
    .filter((r) => r.kind === 'marginal')
    .sort((a, b) => {
      const [ad, av, as] = marginalKey(a.stratum);
      const [bd, bv, bs] = marginalKey(b.stratum);
      return ad - bd || av - bv || as.localeCompare(bs);
    });
  return { overall, segments, marginals };
}

/** The rows a candidate's forest plot shows: overall and segments, and the marginal strata when asked. */
export function forestRows(rows: readonly Row[], withMarginals: boolean): Row[] {
  const sorted = sortPaired(rows);
  return [...sorted.overall, ...sorted.segments, ...(withMarginals ? sorted.marginals : [])];
}

// ---- scales ------------------------------------------------------------------------------------

export type Scale = ((v: number) => number) & { domain: [number, number]; range: [number, number] };

/** A linear map of `domain` onto `range`; a degenerate domain maps everything to the range's middle. */
export function linearScale(domain: [number, number], range: [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const span = d1 - d0;
  const f = ((v: number) => (span === 0 ? (r0 + r1) / 2 : r0 + ((v - d0) / span) * (r1 - r0))) as Scale;
  f.domain = domain;
  f.range = range;
  return f;
}

/** About `count` round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (hi < lo) [lo, hi] = [hi, lo];
  if (hi === lo) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const exp = Math.floor(Math.log10(raw));
  const power = 10 ** exp;
  const mult = [1, 2, 5, 10].find((m) => m * power >= raw) ?? 10;
  const step = mult * power;
  // From integers: 3 × 2 / 10 is 0.6, where 3 × 0.2 is 0.6000000000000001.
  const at = (i: number) => (exp < 0 ? (i * mult) / 10 ** -exp : i * mult * power);
  const out: number[] = [];
  const first = Math.ceil(lo / step - 1e-9);
  // + 0 turns a −0 tick into 0.
  for (let i = first; i * step <= hi + step * 1e-9; i++) out.push(at(i) + 0);
  return out;
}

/** A pixel coordinate to a tenth, for an SVG attribute (not for reading). */
function tenth(v: number): number {
  return Math.round(v * 10) / 10;
}

// ---- chart geometry ----------------------------------------------------------------------------

/** Colours as SVG attributes (an exported file carries no stylesheet). */
export const CHART = {
  text: '#1a1d21',
  muted: '#545b64',
  grid: '#d5d9de',
  axis: '#9aa1a9',
  danger: '#b3261e',
  ok: '#1e7a3c',
  warn: '#a86200',
  accent: '#1d5fb8',
  font: 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif',
} as const;

/** One colour per cell: B0 dark grey, candidates distinct and colour-blind safe (Okabe–Ito). */
const CELL_COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9'];

/** One shade per request class, where the cells are the groups (same palette, another order). */
const CLASS_SHADES = ['#0072b2', '#56b4e9', '#009e73', '#e69f00', '#cc79a7', '#d55e00'];

export function classShade(classes: readonly string[], klass: string): string {
  const i = classes.indexOf(klass);
  return CLASS_SHADES[(i < 0 ? classes.length : i) % CLASS_SHADES.length]!;
}

export function cellColour(cells: readonly string[], cell: string): string {
  if (cell === 'B0') return '#3b4048';
  const candidates = cells.filter((c) => c !== 'B0');
  const i = candidates.indexOf(cell);
  return CELL_COLOURS[(i < 0 ? candidates.length : i) % CELL_COLOURS.length]!;
}

export type ForestRow = {
  row: Row;
  label: string;
  y: number;
  /** Pixel x of the interval bounds and Δ; null when absent (no pairs). */
  x0: number | null;
  x1: number | null;
  xd: number | null;
  /** Pixel x of this row's −margin. */
  xm: number;
};

export type ForestLayout = {
  width: number;
  height: number;
  plot: { left: number; right: number; top: number; bottom: number };
  x: Scale;
  ticks: number[];
  rows: ForestRow[];
  /** The one margin all rows share, drawn as a full-height line; null when they differ. */
  sharedMargin: number | null;
};

export const FOREST_ROW_HEIGHT = 22;

/**
 * Geometry of a forest plot: one row per stratum with its interval and Δ on a common x axis that
 * always shows 0 and every row's −margin. Δ is a difference of shares, so the axis stays in [−1, 1].
 */
export function forestLayout(rows: readonly Row[], width = 640, labelWidth = 190): ForestLayout {
  const values: number[] = [0];
  for (const r of rows) {
    values.push(-r.margin);
    for (const v of [r.ci_low, r.ci_high, r.delta]) if (isPresent(v)) values.push(v);
  }
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  const pad = Math.max((hi - lo) * 0.08, 0.005);
  lo = Math.max(-1, lo - pad);
  hi = Math.min(1, hi + pad);
  const top = 28;
  const plot = { left: labelWidth, right: width - 16, top, bottom: top + Math.max(1, rows.length) * FOREST_ROW_HEIGHT };
  const x = linearScale([lo, hi], [plot.left, plot.right]);
  const margins = [...new Set(rows.map((r) => r.margin))];
  return {
    width,
    height: plot.bottom + 52,
    plot,
    x,
    ticks: niceTicks(lo, hi, 6),
    sharedMargin: margins.length === 1 ? margins[0]! : null,
    rows: rows.map((row, i) => ({
      row,
      label: row.kind === 'overall' ? 'overall' : row.stratum,
      y: top + i * FOREST_ROW_HEIGHT + FOREST_ROW_HEIGHT / 2,
      x0: isPresent(row.ci_low) ? x(row.ci_low) : null,
      x1: isPresent(row.ci_high) ? x(row.ci_high) : null,
      xd: isPresent(row.delta) ? x(row.delta) : null,
      xm: x(-row.margin),
    })),
  };
}

export type Bar = {
  cell: string;
  klass: string;
  x: number;
  width: number;
  /** Top of the bar; null when the mean is absent (nothing drawn, "absent" written). */
  y: number | null;
  whisker: { y0: number; y1: number } | null;
  mean: number | null;
  /** The 95% repeat interval; null below two repeats. */
  low: number | null;
  high: number | null;
  runs: number;
  sloOnly: boolean;
};

export type GroupedBars = {
  width: number;
  height: number;
  plot: { left: number; right: number; top: number; bottom: number };
  y: Scale;
  ticks: number[];
  groups: { cell: string; x: number; width: number; valid: boolean }[];
  bars: Bar[];
};

/**
 * Useful goodput per cell, one bar per class, with the repeat interval as a whisker. Invalid cells
 * get a group without bars (they have no score).
 */
export function goodputBars(cells: readonly Cell[], classes: readonly string[], width = 640): GroupedBars {
  const classNames = [...classes];
  for (const c of cells) for (const k of Object.keys(c.goodput)) if (!classNames.includes(k)) classNames.push(k);
  let max = 0;
  for (const c of cells) {
    if (!c.valid) continue;
    for (const g of Object.values(c.goodput)) {
      if (!g) continue;
      for (const v of [g.repeats.mean, g.repeats.ci_high]) if (isPresent(v)) max = Math.max(max, v);
    }
  }
  const top = 16;
  const plot = { left: 56, right: width - 12, top, bottom: 200 };
  const hi = max > 0 ? max * 1.1 : 1;
  const y = linearScale([0, hi], [plot.bottom, plot.top]);
  const groupWidth = (plot.right - plot.left) / Math.max(1, cells.length);
  const barWidth = Math.min(28, (groupWidth * 0.8) / Math.max(1, classNames.length));
  const groups: GroupedBars['groups'] = [];
  const bars: Bar[] = [];
  cells.forEach((c, gi) => {
    const gx = plot.left + gi * groupWidth;
    groups.push({ cell: c.cell, x: gx, width: groupWidth, valid: c.valid });
    if (!c.valid) return;
    const inner = barWidth * classNames.length;
    classNames.forEach((k, bi) => {
      const g: ClassGoodput | undefined = c.goodput[k];
      if (!g) return;
      const mean = g.repeats.mean;
      const low = g.repeats.ci_low;
      const high = g.repeats.ci_high;
      bars.push({
        cell: c.cell,
        klass: k,
        x: gx + (groupWidth - inner) / 2 + bi * barWidth,
        width: barWidth - 2,
        y: isPresent(mean) ? y(mean) : null,
        whisker: isPresent(low) && isPresent(high) ? { y0: y(Math.max(0, low)), y1: y(high) } : null,
        mean: isPresent(mean) ? mean : null,
        low: isPresent(low) ? low : null,
        high: isPresent(high) ? high : null,
        runs: g.repeats.n,
        sloOnly: g.slo_only,
      });
    });
  });
  return { width, height: plot.bottom + 52, plot, y, ticks: niceTicks(0, hi, 5), groups, bars };
}

export type LatencyMetric = 'ttft_ms' | 'itl_ms' | 'e2e_ms';

export const LATENCY_METRICS: { key: LatencyMetric; label: string }[] = [
  { key: 'ttft_ms', label: 'TTFT' },
  { key: 'itl_ms', label: 'ITL' },
  { key: 'e2e_ms', label: 'end-to-end' },
];

export type LatencyLine = {
  cell: string;
  klass: string;
  y: number;
  count: number;
  /** Pixel x of p50, p90, p99; null for an absent percentile (not drawn). */
  points: { key: 'p50' | 'p90' | 'p99'; value: number | null; x: number | null }[];
};

export type LatencyLayout = {
  width: number;
  height: number;
  plot: { left: number; right: number; top: number; bottom: number };
  x: Scale;
  ticks: number[];
  bands: { klass: string; y0: number; y1: number }[];
  lines: LatencyLine[];
};

const LINE_HEIGHT = 14;

/** p50/p90/p99 of one latency per class (bands) and cell (lines within a band), on one linear ms axis. */
export function latencyLayout(
  cells: readonly Cell[],
  classes: readonly string[],
  metric: LatencyMetric,
  width = 640,
): LatencyLayout {
  const valid = cells.filter((c) => c.valid);
  const classNames = [...classes];
  for (const c of valid) for (const k of Object.keys(c.latency)) if (!classNames.includes(k)) classNames.push(k);
  const shown = classNames.filter((k) => valid.some((c) => c.latency[k] !== undefined));
  let max = 0;
  for (const c of valid) {
    for (const k of shown) {
      const p: Percentiles | undefined = c.latency[k]?.[metric];
      for (const v of [p?.p50, p?.p90, p?.p99]) if (isPresent(v)) max = Math.max(max, v);
    }
  }
  const top = 12;
  const bandHeight = Math.max(1, valid.length) * LINE_HEIGHT + 10;
  const plot = { left: 110, right: width - 16, top, bottom: top + Math.max(1, shown.length) * bandHeight };
  const hi = max > 0 ? max * 1.05 : 1;
  const x = linearScale([0, hi], [plot.left, plot.right]);
  const bands: LatencyLayout['bands'] = [];
  const lines: LatencyLine[] = [];
  shown.forEach((k, bi) => {
    const y0 = top + bi * bandHeight;
    bands.push({ klass: k, y0, y1: y0 + bandHeight });
    valid.forEach((c, ci) => {
      const lat = c.latency[k];
      if (!lat) return;
      const p = lat[metric];
      lines.push({
        cell: c.cell,
        klass: k,
        y: y0 + 5 + ci * LINE_HEIGHT + LINE_HEIGHT / 2,
        count: p.count,
        points: (['p50', 'p90', 'p99'] as const).map((key) => {
          const value = p[key];
          return { key, value: isPresent(value) ? value : null, x: isPresent(value) ? x(value) : null };
        }),
      });
    });
  });
  // Room below the axis title for the legend, then the data label.
  return { width, height: plot.bottom + 66, plot, x, ticks: niceTicks(0, hi, 6), bands, lines };
}

export type CdfMetric = 'ttft_cdf_ms' | 'e2e_cdf_ms';

export const CDF_METRICS: { key: CdfMetric; label: string }[] = [
  { key: 'ttft_cdf_ms', label: 'TTFT' },
  { key: 'e2e_cdf_ms', label: 'end-to-end' },
];

export type CdfLayout = {
  width: number;
  height: number;
  plot: { left: number; right: number; top: number; bottom: number };
  x: Scale;
  y: Scale;
  xTicks: number[];
  yTicks: number[];
  /** One polyline per valid cell with values; `points` is an SVG points attribute. */
  lines: { cell: string; points: string; count: number }[];
  /** Valid cells of the class without a distribution: listed, not drawn. */
  missing: string[];
};

/**
 * The latency distribution of one class, one line per valid cell: the backend's quantiles at
 * 0, 1, …, 100 % (x: ms, y: share of requests at or below).
 */
export function cdfLayout(cells: readonly Cell[], klass: string, metric: CdfMetric, width = 480): CdfLayout {
  const valid = cells.filter((c) => c.valid);
  let max = 0;
  for (const c of valid) for (const v of c.latency[klass]?.[metric] ?? []) if (Number.isFinite(v)) max = Math.max(max, v);
  const plot = { left: 56, right: width - 16, top: 12, bottom: 232 };
  const hi = max > 0 ? max * 1.05 : 1;
  const x = linearScale([0, hi], [plot.left, plot.right]);
  const y = linearScale([0, 1], [plot.bottom, plot.top]);
  const lines: CdfLayout['lines'] = [];
  const missing: string[] = [];
  for (const c of valid) {
    const q = c.latency[klass]?.[metric] ?? [];
    if (q.length < 2) {
      missing.push(c.cell);
      continue;
    }
    const last = q.length - 1;
    lines.push({
      cell: c.cell,
      count: c.latency[klass]?.count ?? 0,
      points: q.map((v, i) => `${tenth(x(v))},${tenth(y(i / last))}`).join(' '),
    });
  }
  return {
    width,
    height: plot.bottom + 66,
    plot,
    x,
    y,
    xTicks: niceTicks(0, hi, 5),
    yTicks: niceTicks(0, 1, 5),
    lines,
    missing,
  };
}

export type CapacityAxis = 'engine_kv_tokens' | 'running_max';

export const CAPACITY_AXES: { key: CapacityAxis; label: string }[] = [
  { key: 'engine_kv_tokens', label: 'engine KV capacity (tokens)' },
  { key: 'running_max', label: 'running requests, max' },
];

export type ScatterLayout = {
  width: number;
  height: number;
  plot: { left: number; right: number; top: number; bottom: number };
  x: Scale;
  y: Scale;
  xTicks: number[];
  yTicks: number[];
  points: { cell: string; x: number; y: number; xValue: number; yValue: number }[];
  /** Valid cells without the capacity figure or without offered requests: listed, never plotted at 0. */
  missing: { cell: string; why: string }[];
};

/** Capacity (x) against the accepted share of offered requests (y), one point per valid cell. */
export function capacityScatter(cells: readonly Cell[], axis: CapacityAxis, width = 480): ScatterLayout {
  const points: { cell: string; xValue: number; yValue: number }[] = [];
  const missing: ScatterLayout['missing'] = [];
  for (const c of cells) {
    if (!c.valid) {
      missing.push({ cell: c.cell, why: 'invalid — no score' });
      continue;
    }
    const xv = c.capacity[axis];
    const yv = c.accepted_share ?? null;
    if (!isPresent(xv)) missing.push({ cell: c.cell, why: `${axis === 'engine_kv_tokens' ? 'KV capacity' : 'running max'} absent` });
    else if (yv === null) missing.push({ cell: c.cell, why: 'no offered requests' });
    else points.push({ cell: c.cell, xValue: xv, yValue: yv });
  }
  const xs = points.map((p) => p.xValue);
  const xHi = xs.length > 0 ? Math.max(...xs) * 1.1 : 1;
  const plot = { left: 56, right: width - 16, top: 24, bottom: 244 };
  const x = linearScale([0, xHi], [plot.left, plot.right]);
  const y = linearScale([0, 1], [plot.bottom, plot.top]);
  return {
    width,
    height: plot.bottom + 52,
    plot,
    x,
    y,
    xTicks: niceTicks(0, xHi, 5),
    yTicks: niceTicks(0, 1, 5),
    points: points.map((p) => ({ ...p, x: x(p.xValue), y: y(p.yValue) })),
    missing,
  };
}

// ---- export --------------------------------------------------------------------------------------

/**
 * A standalone SVG document of a chart: namespaced, sized from its viewBox, with a white
 * background so the exported file reads the same outside the app.
 */
export function serializeSvg(svg: SVGSVGElement): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  const box = svgSize(svg);
  clone.setAttribute('width', String(box.width));
  clone.setAttribute('height', String(box.height));
  clone.removeAttribute('class');
  const ns = 'http://www.w3.org/2000/svg';
  const background = (svg.ownerDocument ?? document).createElementNS(ns, 'rect');
  background.setAttribute('width', '100%');
  background.setAttribute('height', '100%');
  background.setAttribute('fill', '#ffffff');
  // After <title> and <desc>, which must stay the first children to name the document.
  const firstDrawn = [...clone.children].find((el) => el.tagName !== 'title' && el.tagName !== 'desc') ?? null;
  clone.insertBefore(background, firstDrawn);
  let text = new XMLSerializer().serializeToString(clone);
  // The serializer declares the SVG namespace for an element in it; an attribute set too would be doubled.
  if (!/^<svg[^>]*\sxmlns="/.test(text)) text = text.replace(/^<svg/, `<svg xmlns="${ns}"`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${text}\n`;
}

/** The drawing size of an SVG from its viewBox (width/height attributes otherwise). */
export function svgSize(svg: SVGSVGElement): { width: number; height: number } {
  const box = svg.getAttribute('viewBox')?.trim().split(/[\s,]+/).map(Number);
  if (box && box.length === 4 && box.every(Number.isFinite)) return { width: box[2]!, height: box[3]! };
  return { width: Number(svg.getAttribute('width')) || 640, height: Number(svg.getAttribute('height')) || 320 };
}

/** A file name for an exported chart: `study-name_chart.ext`, safe on every file system. */
export function exportFileName(study: string, chart: string, ext: 'svg' | 'png'): string {
  const safe = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'study';
  return `${safe(study)}_${safe(chart)}.${ext}`;
}

/** Saves a blob through an `<a download>` with an object URL (revoked after the click). */
export function downloadBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** Renders SVG text into a PNG at `scale` times its size (the image is drawn into a canvas). */
export function svgToPng(svgText: string, size: { width: number; height: number }, scale = 2): Promise<Blob> {
  return new Promise((resolve, reject) => {
    const image = new Image();
    image.onload = () => {
      const canvas = document.createElement('canvas');
      canvas.width = Math.round(size.width * scale);
      canvas.height = Math.round(size.height * scale);
      const context = canvas.getContext('2d');
      if (!context) {
        reject(new Error('no 2D canvas in this window'));
        return;
      }
      context.fillStyle = '#ffffff';
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('the canvas gave no PNG'))), 'image/png');
    };
    image.onerror = () => reject(new Error('the chart could not be drawn as an image'));
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svgText)}`;
  });
}

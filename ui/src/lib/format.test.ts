// @vitest-environment node
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ABSENT,
  ABSENT_TITLE,
  formatBytes,
  formatCode,
  formatCount,
  formatDuration,
  formatExactBytes,
  formatFigure,
  formatMeanSd,
  formatMiB,
  formatNumber,
  formatP,
  formatPercent,
  formatPp,
  formatPpInterval,
  formatRange,
  formatRate,
  formatSeconds,
  formatShare,
  formatTimestamp,
  isPresent,
  rawTitle,
} from './format';

const MISSING = [null, undefined, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

describe('absent', () => {
  it('is one word with one title, never 0 or blank', () => {
    expect(ABSENT).toBe('absent');
    expect(ABSENT_TITLE).toMatch(/^absent: /);
    expect(ABSENT_TITLE).toContain('not 0');
  });

  it('is what every number formatter shows for null, undefined, NaN and ±Infinity', () => {
    const formatters = [
      formatCount,
      formatNumber,
      formatRate,
      formatP,
      formatShare,
      formatPercent,
      formatPp,
      formatBytes,
      formatMeanSd,
  formatMiB,
      formatDuration,
      formatSeconds,
    ] as ((v: number | null | undefined) => string)[];
    for (const f of formatters) {
      for (const v of MISSING) expect(f(v), `${f.name}(${v})`).toBe(ABSENT);
    }
    for (const v of MISSING) {
      expect(formatPpInterval(v, 0.1)).toBe(ABSENT);
      expect(formatPpInterval(-0.1, v)).toBe(ABSENT);
      expect(formatFigure(v).text).toBe(ABSENT);
      expect(isPresent(v)).toBe(false);
    }
    expect(isPresent(0)).toBe(true);
  });

  it('keeps a measured 0 as 0 in every unit', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatNumber(0)).toBe('0');
    expect(formatRate(0)).toBe('0 req/s');
    expect(formatShare(0)).toBe('0.0%');
    expect(formatPp(0)).toBe('0.0 pp');
    expect(formatBytes(0)).toBe('0 B');
    expect(formatDuration(0)).toBe('0 ms');
  });

  it('puts the raw value in a title, or says it is absent', () => {
    expect(rawTitle(0.2739846661086429)).toBe('0.2739846661086429');
    expect(rawTitle(0)).toBe('0');
    expect(rawTitle(null)).toBe(ABSENT_TITLE);
    expect(rawTitle(Number.NaN)).toBe(ABSENT_TITLE);
    expect(rawTitle('2026-03-03T08:00:00Z')).toBe('2026-03-03T08:00:00Z');
    expect(rawTitle('')).toBe(ABSENT_TITLE);
  });
});

describe('counts and numbers', () => {
  it('groups thousands and attaches no unit', () => {
    expect(formatCount(1)).toBe('1');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1234)).toBe('1,234');
    expect(formatCount(12_345_678)).toBe('12,345,678');
    expect(formatCount(-1234)).toBe('−1,234');
    expect(formatCount(Number.MAX_SAFE_INTEGER)).toBe('9,007,199,254,740,991');
  });

  it('never rounds a fractional count to a whole one silently', () => {
    expect(formatCount(2.5)).toBe('2.5');
  });

  it('shows a measured number with up to three decimals, never 17 digits', () => {
    expect(formatNumber(0.2739846661086429)).toBe('0.274');
    expect(formatNumber(1234.5678)).toBe('1,234.568');
    expect(formatNumber(1234.5678, 1)).toBe('1,234.6');
    expect(formatNumber(12)).toBe('12');
    expect(formatNumber(-3.5)).toBe('−3.5');
    expect(formatNumber(-0.0001)).toBe('0');
    expect(formatNumber(1e21)).toBe('1,000,000,000,000,000,000,000');
  });

  it('shows a rate with three significant digits and its unit', () => {
    expect(formatRate(1.1345)).toBe('1.13 req/s');
    expect(formatRate(0.31184291143227166)).toBe('0.312 req/s');
    expect(formatRate(12.345, 'good/s')).toBe('12.3 good/s');
    expect(formatRate(1234.5)).toBe('1,235 req/s');
    expect(formatRate(0.5)).toBe('0.500 req/s');
    expect(formatRate(0.004123)).toBe('0.00412 req/s');
    expect(formatRate(9.996)).toBe('10.0 req/s');
    expect(formatRate(-2.5)).toBe('−2.50 req/s');
    expect(formatRate(1.1345, null)).toBe('1.13');
  });

  it('shows a p-value with three significant digits, "< 0.001" below', () => {
    expect(formatP(0.0312345)).toBe('0.0312');
    expect(formatP(1)).toBe('1.00');
    expect(formatP(0.001)).toBe('0.00100');
    expect(formatP(0.0009)).toBe('< 0.001');
    expect(formatP(0)).toBe('< 0.001');
  });

  it('keeps every digit of a tool-reported figure in `exact`', () => {
    expect(formatFigure(0.31184291143227166)).toEqual({ text: '0.311843', exact: '0.31184291143227166', rounded: true });
    expect(formatFigure(6)).toEqual({ text: '6', exact: '6', rounded: false });
    expect(formatFigure(1234567.891)).toEqual({ text: '1234568', exact: '1234567.891', rounded: true });
    expect(formatFigure(0.5)).toEqual({ text: '0.5', exact: '0.5', rounded: false });
    expect(formatFigure(null)).toEqual({ text: ABSENT, exact: 'not a finite number', rounded: false });
  });

  it('shows a rate with its spread over repeats, the mean alone below two', () => {
    expect(formatMeanSd(0.5, 0.05)).toBe('0.500 ± 0.0500');
    expect(formatMeanSd(0.5, null)).toBe('0.500');
    expect(formatMeanSd(1.1345, 0.05, 'good/s')).toBe('1.13 ± 0.0500 good/s');
    expect(formatMeanSd(null, 0.1)).toBe(ABSENT);
    expect(formatRange(1.11, 1.354)).toBe('[1.11, 1.35]');
    expect(formatRange(0.1, null)).toBe(ABSENT);
  });
});

describe('shares and percentage points', () => {
  it('shows a share as a percentage with one decimal', () => {
    expect(formatShare(0.2739846661086429)).toBe('27.4%');
    expect(formatShare(0)).toBe('0.0%');
    expect(formatShare(1)).toBe('100.0%');
    expect(formatShare(0.9125)).toBe('91.3%');
    expect(formatShare(0.95)).toBe('95.0%');
    expect(formatShare(0.975)).toBe('97.5%');
    expect(formatShare(-0.05)).toBe('−5.0%');
    expect(formatShare(123.456)).toBe('12,345.6%');
  });

  it('shows a percentage given as a percentage by the same rule', () => {
    expect(formatPercent(5)).toBe('5.0%');
    expect(formatPercent(27.39846661086429)).toBe('27.4%');
    expect(formatPercent(0)).toBe('0.0%');
  });

  it('shows a difference of shares in signed percentage points, never as a percentage', () => {
    expect(formatPp(0.012)).toBe('+1.2 pp');
    expect(formatPp(-0.0125)).toBe('−1.3 pp');
    expect(formatPp(0.004)).toBe('+0.4 pp');
    expect(formatPp(-0.0001)).toBe('0.0 pp');
    expect(formatPp(1)).toBe('+100.0 pp');
    expect(formatPp(-1)).toBe('−100.0 pp');
    expect(formatPp(0.012)).not.toContain('%');
  });

  it('shows an interval of differences in percentage points', () => {
    expect(formatPpInterval(-0.031, 0.008)).toBe('[−3.1, +0.8] pp');
    expect(formatPpInterval(0, 0.0004)).toBe('[0.0, 0.0] pp');
    expect(formatPpInterval(-0.3, -0.05)).toBe('[−30.0, −5.0] pp');
  });
});

describe('bytes', () => {
  it('uses binary units with the unit always', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1023)).toBe('1,023 B');
    expect(formatBytes(1024)).toBe('1.00 KiB');
    expect(formatBytes(65_792)).toBe('64.25 KiB');
    expect(formatBytes(1024 ** 2)).toBe('1.00 MiB');
    expect(formatBytes(45 * 1024 ** 2)).toBe('45.00 MiB');
    expect(formatBytes(12 * 1024 ** 3)).toBe('12.00 GiB');
    expect(formatBytes(1024 ** 4)).toBe('1.00 TiB');
  });

  it('moves to the next unit when two decimals would read 1024', () => {
    expect(formatBytes(1024 ** 2 - 1)).toBe('1.00 MiB');
    expect(formatBytes(1023.6)).toBe('1.00 KiB');
    expect(formatBytes(1023.4)).toBe('1,023 B');
  });

  it('keeps a sign and stays readable at the extremes', () => {
    expect(formatBytes(-2048)).toBe('−2.00 KiB');
    expect(formatBytes(-0)).toBe('0 B');
    expect(formatBytes(2 ** 70)).toBe('1,024.00 EiB');
  });

  it('reads a size given in MiB by the same rule', () => {
    expect(formatMiB(45)).toBe('45.00 MiB');
    expect(formatMiB(23.91)).toBe('23.91 MiB');
    expect(formatMiB(16_384)).toBe('16.00 GiB');
    expect(formatMiB(0)).toBe('0 B');
  });

  it('gives every byte for a title', () => {
    expect(formatExactBytes(65_792)).toBe('65,792 bytes');
    expect(formatExactBytes(1)).toBe('1 byte');
    expect(formatExactBytes(null)).toBe(ABSENT_TITLE);
  });
});

describe('durations', () => {
  it('reads in ms below a second, with up to one decimal', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(849.6)).toBe('849.6 ms');
    expect(formatDuration(81.54)).toBe('81.5 ms');
    expect(formatDuration(0.04)).toBe('0 ms');
    expect(formatDuration(999.9)).toBe('999.9 ms');
  });

  it('rounds 999.95 ms up to 1.0 s, never "1000 ms"', () => {
    expect(formatDuration(999.95)).toBe('1.0 s');
    expect(formatDuration(1000)).toBe('1.0 s');
  });

  it('reads in seconds with one decimal, then minutes and hours', () => {
    expect(formatDuration(1234.56)).toBe('1.2 s');
    expect(formatDuration(12_400)).toBe('12.4 s');
    expect(formatDuration(59_940)).toBe('59.9 s');
    expect(formatDuration(59_960)).toBe('1 min 00 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
    expect(formatDuration(7_265_000)).toBe('2 h 01 min 05 s');
    expect(formatDuration(1e12)).toBe('277,777 h 46 min 40 s');
  });

  it('reads a duration given in seconds by the same rule', () => {
    expect(formatSeconds(30)).toBe('30.0 s');
    expect(formatSeconds(0.25)).toBe('250 ms');
    expect(formatSeconds(600)).toBe('10 min 00 s');
    expect(formatSeconds(0)).toBe('0 ms');
  });

  it('keeps the sign of a negative duration', () => {
    expect(formatDuration(-12.5)).toBe('−12.5 ms');
    expect(formatDuration(-1500)).toBe('−1.5 s');
    expect(formatDuration(-0.01)).toBe('0 ms');
  });
});

describe('timestamps', () => {
  it('shows an RFC 3339 instant in the given zone with its offset', () => {
    expect(formatTimestamp('2026-03-03T08:00:00Z', 0)).toBe('2026-03-03 08:00:00 UTC');
    expect(formatTimestamp('2026-03-03T08:00:00Z', 60)).toBe('2026-03-03 09:00:00 UTC+01:00');
    expect(formatTimestamp('2026-03-03T02:30:00Z', -300)).toBe('2026-03-02 21:30:00 UTC−05:00');
    expect(formatTimestamp('2026-03-03T20:00:00.123456Z', 330)).toBe('2026-03-04 01:30:00 UTC+05:30');
    expect(formatTimestamp('2026-03-03T10:00:00+02:00', 0)).toBe('2026-03-03 08:00:00 UTC');
  });

  it("uses the reader's own zone by default", () => {
    const iso = '2026-07-01T12:34:56Z';
    const shown = formatTimestamp(iso);
    const offset = -new Date(iso).getTimezoneOffset();
    expect(shown).toBe(formatTimestamp(iso, offset));
    expect(shown).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
  });

  it('never guesses: a day, a zoneless or an unreadable text is shown as given; nothing is absent', () => {
    expect(formatTimestamp('2026-11-30')).toBe('2026-11-30');
    expect(formatTimestamp('2026-03-03 08:00:00')).toBe('2026-03-03 08:00:00');
    expect(formatTimestamp('yesterday')).toBe('yesterday');
    expect(formatTimestamp('')).toBe(ABSENT);
    expect(formatTimestamp(null)).toBe(ABSENT);
    expect(formatTimestamp(undefined)).toBe(ABSENT);
  });
});

describe('codes as words', () => {
  it('writes snake_case codes as words', () => {
    expect(formatCode('non_inferior')).toBe('non-inferior');
    expect(formatCode('collect_more_evidence')).toBe('collect more evidence');
    expect(formatCode('factor_of_ten')).toBe('factor of ten');
    expect(formatCode('inferior')).toBe('inferior');
    expect(formatCode(null)).toBe(ABSENT);
    expect(formatCode('')).toBe(ABSENT);
  });
});

// ---- one place ----------------------------------------------------------------------------------

const SRC = fileURLToPath(new URL('../', import.meta.url));
const HERE = join('lib', 'format.ts');
const BINDINGS = join('lib', 'bindings') + sep;

/** Ways of formatting a number, a time or a code for a person, which belong in lib/format.ts only. */
const AD_HOC = [
  /\.toFixed\(/,
  /\.toLocaleString\(/,
  /\.toLocale(?:Date|Time)String\(/,
  /\bIntl\.(?:NumberFormat|DateTimeFormat)\b/,
  /\.replaceAll\(\s*['"]_['"]/,
  /\.replace\(\s*\/_\/g/,
  /\.replace\(\s*['"]_['"]/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(svelte|ts)$/.test(entry.name) && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('one place for each rule', () => {
  it('the patterns catch what they are meant to', () => {
    expect(AD_HOC.some((p) => p.test('x.toFixed(1)'))).toBe(true);
    expect(AD_HOC.some((p) => p.test("n.toLocaleString('en-US')"))).toBe(true);
    expect(AD_HOC.some((p) => p.test("code.replaceAll('_', ' ')"))).toBe(true);
    expect(AD_HOC.some((p) => p.test("code.replace('_', ' ')"))).toBe(true);
    expect(AD_HOC.some((p) => p.test('code.replace(/_/g, " ")'))).toBe(true);
    expect(AD_HOC.some((p) => p.test('formatBytes(n)'))).toBe(false);
  });

  it('no file but lib/format.ts formats numbers, times or codes for reading', () => {
    const files = sourceFiles(SRC).map((path) => relative(SRC, path));
    expect(files).toContain(HERE);
    const offenders = files
      .filter((file) => file !== HERE && !file.startsWith(BINDINGS))
      .flatMap((file) =>
        readFileSync(join(SRC, file), 'utf8')
          .split('\n')
          .map((line, i) => ({ file, line: i + 1, text: line.trim() }))
          .filter(({ text }) => AD_HOC.some((p) => p.test(text))),
      )
      .map(({ file, line, text }) => `${file}:${line}: ${text}`);
    expect(offenders).toEqual([]);
  });
});

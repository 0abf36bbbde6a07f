// How the UI shows a value the backend gave to a person: one rule per kind of value, here only.
// Presentation only: nothing here computes a domain figure, rounds one for storage, or judges it.
// A missing value reads as ABSENT, never 0 and never blank.

/** What a missing value reads as, everywhere. */
export const ABSENT = 'absent';

/** The title of a shown ABSENT: why there is no figure, and that it is not zero. */
export const ABSENT_TITLE = 'absent: not measured or not recorded (not 0)';

/** The sign of a negative figure (U+2212, not a hyphen). */
const MINUS = '−';

/** A finite number; null, undefined and NaN/±Infinity are absent. */
export function isPresent(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** The raw value for a title: the number as stored (every digit), or ABSENT_TITLE. */
export function rawTitle(v: number | string | null | undefined): string {
  if (typeof v === 'string') return v === '' ? ABSENT_TITLE : v;
  return isPresent(v) ? String(v) : ABSENT_TITLE;
}

// ---- numbers ------------------------------------------------------------------------------------

const formats = new Map<string, Intl.NumberFormat>();

function numberFormat(key: string, options: Intl.NumberFormatOptions): Intl.NumberFormat {
  let f = formats.get(key);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { useGrouping: true, ...options });
    formats.set(key, f);
  }
  return f;
}

/** `text` of |v| with the sign put back, unless the shown digits are all zero (no "−0"). */
function signed(v: number, text: string): string {
  return v < 0 && /[1-9]/.test(text) ? `${MINUS}${text}` : text;
}

/** |v| with up to `digits` decimals, thousands grouped. */
function upTo(v: number, digits: number): string {
  return signed(v, numberFormat(`max${digits}`, { maximumFractionDigits: digits }).format(Math.abs(v)));
}

/** |v| with exactly `digits` decimals, thousands grouped. */
function fixed(v: number, digits: number): string {
  return signed(
    v,
    numberFormat(`fix${digits}`, { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(Math.abs(v)),
  );
}

/** A count: whole, thousands grouped ("12,345"), no unit. A fractional count keeps its decimals. */
export function formatCount(n: number | null | undefined): string {
  if (!isPresent(n)) return ABSENT;
  return Number.isInteger(n) ? upTo(n, 0) : upTo(n, 3);
}

/** A measured number without a known unit: up to `digits` decimals (3 by default), thousands grouped. */
export function formatNumber(v: number | null | undefined, digits = 3): string {
  return isPresent(v) ? upTo(v, digits) : ABSENT;
}

/** Three significant digits, never rounding away integer digits: "0.312", "1.13", "12.3", "1,234". */
function significant(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a < 1) {
    const text = numberFormat('sig3', { minimumSignificantDigits: 3, maximumSignificantDigits: 3 }).format(a);
    return signed(v, text);
  }
  const decimals = (x: number) => Math.max(0, 3 - (Math.floor(Math.log10(x)) + 1));
  let digits = decimals(a);
  // 9.996 rounds to "10.00": count the digits of the rounded value.
  digits = decimals(Number(a.toFixed(digits)));
  return fixed(v, digits);
}

/** A rate per second with three significant digits: "1.13 req/s", "0.312 good/s"; `unit` null for the bare number. */
export function formatRate(perS: number | null | undefined, unit: string | null = 'req/s'): string {
  if (!isPresent(perS)) return ABSENT;
  const text = significant(perS);
  return unit ? `${text} ${unit}` : text;
}

/** A p-value: three significant digits, "< 0.001" below. */
export function formatP(p: number | null | undefined): string {
  if (!isPresent(p)) return ABSENT;
  if (p < 0.001) return '< 0.001';
  return p.toPrecision(3);
}

/**
 * A figure a tool reported, for reading: at least 6 significant digits (all integer digits), and
 * the exact value as JavaScript prints the stored f64 (the shortest text that reads back to the
 * same number). `rounded` says whether `text` dropped digits.
 */
export function formatFigure(value: number | null | undefined): { text: string; exact: string; rounded: boolean } {
  if (!isPresent(value)) return { text: ABSENT, exact: 'not a finite number', rounded: false };
  const exact = String(value);
  if (Number.isInteger(value) || value === 0) return { text: exact, exact, rounded: false };
  const integerDigits = Math.floor(Math.log10(Math.abs(value))) + 1;
  const digits = Math.min(21, Math.max(6, integerDigits));
  const text = String(Number(value.toPrecision(digits)));
  return { text, exact, rounded: text !== exact };
}

/** A rate as mean ± sd ("1.13 ± 0.0500 good/s"), the mean alone below two repeats; ABSENT without one. */
export function formatMeanSd(mean: number | null | undefined, sd: number | null | undefined, unit: string | null = null): string {
  if (!isPresent(mean)) return ABSENT;
  const text = isPresent(sd) ? `${formatRate(mean, null)} ± ${formatRate(sd, null)}` : formatRate(mean, null);
  return unit ? `${text} ${unit}` : text;
}

/** "[1.11, 1.35]" from a repeat interval of a rate; ABSENT below two repeats. */
export function formatRange(low: number | null | undefined, high: number | null | undefined): string {
  if (!isPresent(low) || !isPresent(high)) return ABSENT;
  return `[${formatRate(low, null)}, ${formatRate(high, null)}]`;
}

// ---- shares and percentage points ---------------------------------------------------------------

/** A share in [0, 1] as a percentage with one decimal: 0.2739… → "27.4%". */
export function formatShare(share: number | null | undefined): string {
  return isPresent(share) ? `${fixed(share * 100, 1)}%` : ABSENT;
}

/** A value that already is a percentage (e.g. a typed 5 for 5 %), shown as a share is: "5.0%". */
export function formatPercent(percent: number | null | undefined): string {
  return isPresent(percent) ? `${fixed(percent, 1)}%` : ABSENT;
}

function pp(diff: number): string {
  const text = fixed(Math.abs(diff * 100), 1);
  if (!/[1-9]/.test(text)) return text;
  return `${diff < 0 ? MINUS : '+'}${text}`;
}

/** A difference of shares in signed percentage points: −0.0125 → "−1.3 pp", +0.004 → "+0.4 pp", "0.0 pp". */
export function formatPp(diff: number | null | undefined): string {
  return isPresent(diff) ? `${pp(diff)} pp` : ABSENT;
}

/** An interval of share differences in percentage points: "[−3.1, +0.8] pp"; ABSENT when a bound is missing. */
export function formatPpInterval(low: number | null | undefined, high: number | null | undefined): string {
  if (!isPresent(low) || !isPresent(high)) return ABSENT;
  return `[${pp(low)}, ${pp(high)}] pp`;
}

// ---- bytes ----------------------------------------------------------------------------------------

const BINARY_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'] as const;
const MIB = 1024 * 1024;

/** Bytes in binary units with the unit always: "512 B", "1,023 B", "1.00 KiB", "45.00 MiB", "12.00 GiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (!isPresent(bytes)) return ABSENT;
  const whole = Math.round(Math.abs(bytes));
  if (whole < 1024) return `${signed(bytes, upTo(whole, 0))} B`;
  let v = Math.abs(bytes) / 1024;
  let unit = 0;
  // 1,048,575 B is 1023.999 KiB: shown with two decimals it is 1.00 MiB.
  while (Number(v.toFixed(2)) >= 1024 && unit < BINARY_UNITS.length - 1) {
    v /= 1024;
    unit += 1;
  }
  return `${signed(bytes, fixed(v, 2))} ${BINARY_UNITS[unit]}`;
}

/** A size the backend gives in MiB, by the bytes rule: 45 → "45.00 MiB". */
export function formatMiB(mib: number | null | undefined): string {
  return isPresent(mib) ? formatBytes(mib * MIB) : ABSENT;
}

/** Every byte, for a title next to a formatted size: "65,792 bytes". */
export function formatExactBytes(bytes: number | null | undefined): string {
  if (!isPresent(bytes)) return ABSENT_TITLE;
  return `${formatCount(bytes)} ${bytes === 1 ? 'byte' : 'bytes'}`;
}

// ---- durations -----------------------------------------------------------------------------------

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * A duration or latency given in milliseconds: ms below 1 s with up to one decimal ("850 ms",
 * "81.5 ms"), seconds with one decimal below a minute ("1.0 s", "12.4 s"), then minutes ("3 min 05 s")
 * and hours ("2 h 01 min 05 s").
 */
export function formatDuration(ms: number | null | undefined): string {
  if (!isPresent(ms)) return ABSENT;
  const a = Math.abs(ms);
  const sign = (text: string) => (ms < 0 && /[1-9]/.test(text) ? `${MINUS}${text}` : text);
  const tenthsOfMs = Math.round(a * 10) / 10;
  if (tenthsOfMs < 1000) return sign(`${upTo(tenthsOfMs, 1)} ms`);
  const tenthsOfS = Math.round(a / 100) / 10;
  if (tenthsOfS < 60) return sign(`${tenthsOfS.toFixed(1)} s`);
  const total = Math.round(a / 1000);
  const seconds = total % 60;
  const minutes = Math.floor(total / 60) % 60;
  const hours = Math.floor(total / 3600);
  if (hours === 0) return sign(`${minutes} min ${pad2(seconds)} s`);
  return sign(`${upTo(hours, 0)} h ${pad2(minutes)} min ${pad2(seconds)} s`);
}

/** A duration given in seconds (e.g. a drain deadline), by the same rule: 30 → "30.0 s", 600 → "10 min 00 s". */
export function formatSeconds(s: number | null | undefined): string {
  return isPresent(s) ? formatDuration(s * 1000) : ABSENT;
}

// ---- time ------------------------------------------------------------------------------------------

const ZONED = /(?:[zZ]|[+-]\d{2}:?\d{2})$/;

/** "UTC", "UTC+01:00", "UTC−05:00", "UTC+05:30". */
function zoneText(offsetMinutes: number): string {
  if (offsetMinutes === 0) return 'UTC';
  const a = Math.abs(offsetMinutes);
  return `UTC${offsetMinutes < 0 ? MINUS : '+'}${pad2(Math.floor(a / 60))}:${pad2(a % 60)}`;
}

/**
 * An RFC 3339 instant from the backend in the reader's local time, with its offset:
 * "2026-12-02T07:48:09Z" → "2026-12-02 08:48:09 UTC+01:00" in Berlin. `offsetMinutes` (east of UTC)
 * defaults to the local zone's at that instant. A calendar day ("2026-11-30") stays as it is; a
 * text without a zone or not a time is shown as given, never guessed. Keep the raw value in a title.
 */
export function formatTimestamp(iso: string | null | undefined, offsetMinutes?: number): string {
  if (iso === null || iso === undefined || iso.trim() === '') return ABSENT;
  const text = iso.trim();
  if (!ZONED.test(text)) return text;
  const t = Date.parse(text);
  if (!Number.isFinite(t)) return text;
  const offset = offsetMinutes ?? -new Date(t).getTimezoneOffset();
  const d = new Date(t + offset * 60_000);
  const day = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
  const time = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
  return `${day} ${time} ${zoneText(offset)}`;
}

// ---- words -------------------------------------------------------------------------------------------

/** A snake_case code as words: "collect_more_evidence" → "collect more evidence", "non_inferior" → "non-inferior". */
export function formatCode(code: string | null | undefined): string {
  if (code === null || code === undefined || code === '') return ABSENT;
  return code.replace(/^non_/, 'non-').replaceAll('_', ' ');
}

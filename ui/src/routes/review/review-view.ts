// Presentation of the blind review queue: the window of rows a long list renders, the keys a
// reviewer presses, the field-by-field diff of extracted values, and label names. Nothing here
// decides a label or reveals a side: the backend gives `candidate_is_a` only once a pair is labelled.

import { formatCode } from '$lib/format';
import type { AdjudicationLabel } from '$lib/bindings/AdjudicationLabel';
import type { Distractor } from '$lib/bindings/Distractor';
import type { ExpectedAnswer } from '$lib/bindings/ExpectedAnswer';
import type { ExtractedField } from '$lib/bindings/ExtractedField';
import type { ItemStrata } from '$lib/bindings/ItemStrata';
import type { ReasonCode } from '$lib/bindings/ReasonCode';
import type { ReviewLabel } from '$lib/bindings/ReviewLabel';
import type { ReviewPair } from '$lib/bindings/ReviewPair';

export type Pair = ReviewPair;

// ---------------------------------------------------------------------------------------------
// Labels

/** The five blind labels, on sides A and B, in the order of their keys 1–5: none needs to know
 * which side is the candidate. The backend maps them after the reveal. */
export const LABELS: readonly ReviewLabel[] = [
  'a_correct_b_wrong',
  'b_correct_a_wrong',
  'both_acceptable',
  'both_wrong',
  'ambiguous_item',
];

/** The labels that name the roles: offered only for a pair already revealed, where the backend
 * records them as unblinded. */
export const ROLE_LABELS: readonly ReviewLabel[] = ['candidate_regression', 'baseline_error'];

export const SIDE_LABEL_NAME: Record<ReviewLabel, string> = {
  a_correct_b_wrong: 'A correct, B wrong',
  b_correct_a_wrong: 'B correct, A wrong',
  both_acceptable: 'Both acceptable',
  both_wrong: 'Both wrong',
  ambiguous_item: 'Ambiguous item',
  candidate_regression: 'Candidate regression',
  baseline_error: 'Baseline error',
};

export const LABEL_NAME: Record<AdjudicationLabel, string> = {
  candidate_regression: 'Candidate regression',
  baseline_error: 'Baseline error',
  both_acceptable: 'Both acceptable',
  both_wrong: 'Both wrong',
  ambiguous_item: 'Ambiguous item',
};

/** A row's label as read in the list: its name (marked when given after the reveal), or "unlabelled". */
export function labelText(label: AdjudicationLabel | null | undefined, unblinded = false): string {
  if (!label) return 'unlabelled';
  return unblinded ? `${LABEL_NAME[label]} (unblinded)` : LABEL_NAME[label];
}

/** Which side is which, once labelled: "A = Q8, B = B0". */
export function revealText(candidateIsA: boolean, candidate: string): string {
  return candidateIsA ? `A = ${candidate}, B = B0` : `A = B0, B = ${candidate}`;
}

// ---------------------------------------------------------------------------------------------
// Filters

export const REASON_CODES: readonly ReasonCode[] = [
  'malformed',
  'missing_field',
  'extra_field',
  'wrong_type',
  'wrong_asset',
  'wrong_revision',
  'factor_of_ten',
  'wrong_value',
  'wrong_unit',
  'invented_value',
  'unexpected_refusal',
  'timeout',
  'error',
  'harness_score',
];

/** The strata of an item for a row: "de · long · end · numeric · present"; "strata unknown" without. */
export function strataText(s: ItemStrata | null | undefined): string {
  if (!s) return 'strata unknown';
  return [s.language, s.length_class, s.position, formatCode(s.task_type), s.answer_kind].join(' · ');
}

/** A count of agreeing pairs from the input: a whole number ≥ 0 (anything else reads as 0). */
export function agreeingSample(text: string | number): number {
  const n = typeof text === 'number' ? text : Number(String(text).trim());
  if (!Number.isFinite(n) || n < 0) return 0;
  return Math.min(Math.floor(n), 1_000_000);
}

// ---------------------------------------------------------------------------------------------
// Windowing: a list of fixed-height rows renders only the rows in view (plus a margin).

export type RowWindow = {
  /** First row rendered (inclusive). */
  start: number;
  /** Row after the last rendered (exclusive). */
  end: number;
  /** Pixels above the first rendered row. */
  offset: number;
  /** Height of the whole list in pixels. */
  total: number;
};

/** The rows to render for a scroll position; `overscan` rows more on each side. */
export function rowWindow(scrollTop: number, viewport: number, rowHeight: number, count: number, overscan = 5): RowWindow {
  const total = Math.max(0, count) * rowHeight;
  if (count <= 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0, total: Math.max(0, total) };
  const maxTop = Math.max(0, total - Math.max(0, viewport));
  const top = Math.min(Math.max(0, scrollTop), maxTop);
  const first = Math.floor(top / rowHeight);
  const visible = Math.ceil(Math.max(0, viewport) / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  return { start, end, offset: start * rowHeight, total };
}

/** The scroll position that brings row `index` into view, moving as little as possible; the
 * current one when it is already fully visible. */
export function scrollToRow(index: number, scrollTop: number, viewport: number, rowHeight: number): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  if (bottom > scrollTop + viewport) return Math.max(0, bottom - viewport);
  return scrollTop;
}

// ---------------------------------------------------------------------------------------------
// Keys

export type KeyAction =
  | { kind: 'next' }
  | { kind: 'previous' }
  | { kind: 'label'; label: ReviewLabel }
  | { kind: 'reveal' }
  | { kind: 'note' };

export type KeyLike = {
  key: string;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
  target?: EventTarget | null;
};

/** True when a key goes into a field the user types in (inputs, text areas, selects, editable text). */
export function isTypingTarget(target: EventTarget | null | undefined): boolean {
  if (!target || typeof (target as Element).tagName !== 'string') return false;
  const el = target as HTMLElement;
  const tag = el.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (tag === 'input') {
    const type = ((el as HTMLInputElement).type || 'text').toLowerCase();
    return !['button', 'submit', 'reset', 'checkbox', 'radio', 'range', 'color', 'file', 'image'].includes(type);
  }
  return el.isContentEditable === true || el.getAttribute?.('contenteditable') === 'true';
}

/** What a key press does on the Review screen; null when it does nothing (or the user is typing). */
export function keyAction(event: KeyLike): KeyAction | null {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  if (isTypingTarget(event.target)) return null;
  switch (event.key) {
    case 'j':
    case 'ArrowDown':
      return { kind: 'next' };
    case 'k':
    case 'ArrowUp':
      return { kind: 'previous' };
    case 'r':
      return { kind: 'reveal' };
    case 'n':
      return { kind: 'note' };
  }
  const digit = /^[1-5]$/.test(event.key) ? Number(event.key) : 0;
  const label = digit ? LABELS[digit - 1] : undefined;
  return label ? { kind: 'label', label } : null;
}

// ---------------------------------------------------------------------------------------------
// Field-by-field diff

export type DiffRow = {
  key: string;
  /** JSON text; null when the field is not there. */
  expected: string | null;
  a: string | null;
  b: string | null;
  /** Differs from the expected value (or, without one, from the other side). */
  aDiffers: boolean;
  bDiffers: boolean;
};

function numberOf(json: string): number | null {
  const t = json.trim();
  if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** Whether two JSON texts hold the same value: numbers compare as numbers (12.50 = 12.5, 12.5 ≠ 125),
 * anything else as its JSON text with insignificant whitespace removed. Absent equals absent only. */
export function sameJson(x: string | null, y: string | null): boolean {
  if (x === null || y === null) return x === y;
  const nx = numberOf(x);
  const ny = numberOf(y);
  if (nx !== null && ny !== null) return nx === ny;
  return canonicalJson(x) === canonicalJson(y);
}

function canonicalJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text.trim();
  }
}

/** Rows of expected vs A vs B per key: the expected answer's keys first, then any other key in the
 * order the sides wrote them. A side's cell differs when it does not hold the expected value. */
export function diffFields(
  expected: ExpectedAnswer | Readonly<Record<string, unknown>> | null | undefined,
  a: readonly ExtractedField[] | null | undefined,
  b: readonly ExtractedField[] | null | undefined,
): DiffRow[] {
  const exp = new Map<string, string>();
  if (expected) {
    for (const [k, v] of Object.entries(expected)) {
      // A list answer is compared member by member, under the keys the validator extracts
      // (`answers[1].unit`).
      if (k === 'answers' && Array.isArray(v) && v.length > 0) {
        v.forEach((element, i) => {
          for (const [ek, ev] of Object.entries(element as Record<string, unknown>)) exp.set(`${k}[${i}].${ek}`, JSON.stringify(ev));
        });
      } else exp.set(k, JSON.stringify(v));
    }
  }
  const side = (fields: readonly ExtractedField[] | null | undefined) => {
    const m = new Map<string, string>();
    for (const f of fields ?? []) if (!m.has(f.key)) m.set(f.key, f.json);
    return m;
  };
  const ma = side(a);
  const mb = side(b);
  const keys: string[] = [...exp.keys()];
  for (const k of [...ma.keys(), ...mb.keys()]) if (!keys.includes(k)) keys.push(k);
  return keys.map((key) => {
    const e = exp.get(key) ?? null;
    const va = ma.get(key) ?? null;
    const vb = mb.get(key) ?? null;
    const hasExpected = expected !== null && expected !== undefined;
    return {
      key,
      expected: e,
      a: va,
      b: vb,
      aDiffers: hasExpected ? !sameJson(va, e) : !sameJson(va, vb),
      bDiffers: hasExpected ? !sameJson(vb, e) : !sameJson(va, vb),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// The prompt, with its evidence and look-alike records marked

export type Segment = { text: string; kind: 'plain' | 'evidence' | 'distractor'; note?: string };

/** A run of plain lines hidden from view; `text` keeps them, so nothing is lost. */
export type Folded = { text: string; kind: 'fold'; lines: number };

/** Splits a prompt into plain text, evidence records and distractor records (first match wins,
 * never overlapping). Records not found in the text are simply not marked. */
export function markPrompt(text: string, evidence: readonly string[], distractors: readonly Distractor[]): Segment[] {
  type Mark = { from: number; to: number; kind: 'evidence' | 'distractor'; note?: string };
  const marks: Mark[] = [];
  const add = (needle: string, kind: Mark['kind'], note?: string) => {
    const n = needle.trim();
    if (!n) return;
    let from = text.indexOf(n);
    while (from >= 0) {
      const to = from + n.length;
      if (!marks.some((m) => from < m.to && to > m.from)) {
        marks.push(note === undefined ? { from, to, kind } : { from, to, kind, note });
      }
      from = text.indexOf(n, to);
    }
  };
  for (const e of evidence) add(e, 'evidence');
  for (const d of distractors) add(d.text, 'distractor', d.kinds.map(formatCode).join(', '));
  marks.sort((x, y) => x.from - y.from);
  const out: Segment[] = [];
  let at = 0;
  for (const m of marks) {
    if (m.from > at) out.push({ text: text.slice(at, m.from), kind: 'plain' });
    const seg: Segment = { text: text.slice(m.from, m.to), kind: m.kind };
    if (m.note !== undefined) seg.note = m.note;
    out.push(seg);
    at = m.to;
  }
  if (at < text.length) out.push({ text: text.slice(at), kind: 'plain' });
  return out;
}

/** Splits text into lines, each with its newline (the last may have none). */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Folds the long plain stretches of a marked prompt, so a 4k-token context shows its evidence
 * and look-alikes with `keep` lines of context around each and around the prompt's start and end;
 * a stretch is folded only when it would hide at least `minFold` lines. Concatenating every
 * segment's text (folds included) gives the prompt back, byte for byte. */
export function foldPrompt(segments: readonly Segment[], keep = 3, minFold = 8): (Segment | Folded)[] {
  const out: (Segment | Folded)[] = [];
  for (const seg of segments) {
    if (seg.kind !== 'plain') {
      out.push(seg);
      continue;
    }
    const lines = linesOf(seg.text);
    // A plain stretch between two marks starts mid-line after the first: that partial line and
    // `keep` more stay visible.
    const head = Math.min(lines.length, keep + 1);
    const tail = Math.min(lines.length - head, keep + 1);
    const hidden = lines.length - head - tail;
    if (hidden < minFold) {
      out.push(seg);
      continue;
    }
    out.push({ text: lines.slice(0, head).join(''), kind: 'plain' });
    out.push({ text: lines.slice(head, head + hidden).join(''), kind: 'fold', lines: hidden });
    out.push({ text: lines.slice(head + hidden).join(''), kind: 'plain' });
  }
  return out;
}

/** The team labels a filter asks for, as typed: `key=value` pairs separated by spaces or commas
 * (`language=de task=invoice`); empty text asks for none. Whether a key is one a team may use is
 * the backend's rule; a pair without `=`, a key given twice or an empty side is said here. */
export function parseLabels(text: string): { labels: Record<string, string> | null } | { error: string } {
  const words = text.split(/[\s,]+/).filter((w) => w !== '');
  if (words.length === 0) return { labels: null };
  const labels: Record<string, string> = {};
  for (const w of words) {
    const at = w.indexOf('=');
    const key = at > 0 ? w.slice(0, at) : '';
    const value = at > 0 ? w.slice(at + 1) : '';
    if (!key || !value) return { error: `labels: expected key=value pairs (e.g. language=de), found "${w}"` };
    if (key in labels) return { error: `labels: expected each key once, found "${key}" again` };
    labels[key] = value;
  }
  return { labels };
}

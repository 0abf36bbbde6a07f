import { describe, expect, it } from 'vitest';
import { formatCount, formatDuration } from '$lib/format';
import {
  LABELS,
  LABEL_NAME,
  ROLE_LABELS,
  SIDE_LABEL_NAME,
  agreeingSample,
  diffFields,
  isTypingTarget,
  keyAction,
  labelText,
  foldPrompt,
  markPrompt,
  parseLabels,
  revealText,
  rowWindow,
  sameJson,
  scrollToRow,
  strataText,
} from './review-view';

describe('rowWindow', () => {
  it('renders only the rows in view plus the overscan, for 100,000 rows', () => {
    const w = rowWindow(44 * 50_000, 440, 44, 100_000, 5);
    expect(w.total).toBe(4_400_000);
    expect(w.start).toBe(49_995);
    expect(w.end).toBe(50_016);
    expect(w.offset).toBe(49_995 * 44);
    expect(w.end - w.start).toBeLessThan(30);
  });

  it('starts at the top and clamps a scroll past the end', () => {
    expect(rowWindow(0, 440, 44, 100, 5)).toEqual({ start: 0, end: 16, offset: 0, total: 4400 });
    const last = rowWindow(1e9, 440, 44, 100, 5);
    expect(last.end).toBe(100);
    expect(last.start).toBe(85);
    expect(rowWindow(-50, 440, 44, 100, 0).start).toBe(0);
  });

  it('renders everything of a short list and nothing of an empty one', () => {
    expect(rowWindow(0, 440, 44, 3)).toEqual({ start: 0, end: 3, offset: 0, total: 132 });
    expect(rowWindow(0, 440, 44, 0)).toEqual({ start: 0, end: 0, offset: 0, total: 0 });
  });

  it('handles a row straddling the top edge', () => {
    const w = rowWindow(66, 100, 44, 1000, 0);
    expect(w.start).toBe(1);
    expect(w.end).toBe(5);
    expect(w.offset).toBe(44);
  });
});

describe('scrollToRow', () => {
  it('moves as little as possible to show a row, and not at all when it is in view', () => {
    expect(scrollToRow(5, 0, 440, 44)).toBe(0);
    expect(scrollToRow(10, 0, 440, 44)).toBe(44);
    expect(scrollToRow(2, 440, 440, 44)).toBe(88);
    expect(scrollToRow(99_999, 0, 440, 44)).toBe(99_999 * 44 + 44 - 440);
  });
});

describe('keyAction', () => {
  it('maps j/k and the arrows, 1–5, r and n', () => {
    expect(keyAction({ key: 'j' })).toEqual({ kind: 'next' });
    expect(keyAction({ key: 'ArrowDown' })).toEqual({ kind: 'next' });
    expect(keyAction({ key: 'k' })).toEqual({ kind: 'previous' });
    expect(keyAction({ key: 'ArrowUp' })).toEqual({ kind: 'previous' });
    expect(keyAction({ key: 'r' })).toEqual({ kind: 'reveal' });
    expect(keyAction({ key: 'n' })).toEqual({ kind: 'note' });
    expect(['1', '2', '3', '4', '5'].map((key) => keyAction({ key }))).toEqual(LABELS.map((label) => ({ kind: 'label', label })));
    expect(keyAction({ key: '6' })).toBeNull();
    expect(keyAction({ key: '0' })).toBeNull();
    expect(keyAction({ key: 'x' })).toBeNull();
  });

  it('ignores keys with modifiers and keys typed into fields', () => {
    expect(keyAction({ key: 'j', ctrlKey: true })).toBeNull();
    expect(keyAction({ key: '1', altKey: true })).toBeNull();
    expect(keyAction({ key: 'k', metaKey: true })).toBeNull();
    const input = document.createElement('input');
    const textarea = document.createElement('textarea');
    const select = document.createElement('select');
    const button = document.createElement('button');
    const checkbox = document.createElement('input');
    checkbox.type = 'checkbox';
    const editable = document.createElement('div');
    editable.setAttribute('contenteditable', 'true');
    for (const target of [input, textarea, select, editable]) {
      expect(isTypingTarget(target)).toBe(true);
      expect(keyAction({ key: '1', target })).toBeNull();
      expect(keyAction({ key: 'j', target })).toBeNull();
    }
    expect(keyAction({ key: '2', target: button })).toEqual({ kind: 'label', label: 'b_correct_a_wrong' });
    expect(keyAction({ key: 'j', target: checkbox })).toEqual({ kind: 'next' });
    expect(isTypingTarget(document.body)).toBe(false);
    expect(isTypingTarget(null)).toBe(false);
  });
});

describe('diffFields', () => {
  const expected = { asset: 'PX-12', revision: 'C', nominal_torque: 12.5, unit: 'N·m' };
  const f = (key: string, json: string, kind: 'string' | 'number' = json.startsWith('"') ? 'string' : 'number') => ({ key, kind, json });

  it('marks a factor-of-ten value, and compares numbers as numbers', () => {
    const rows = diffFields(
      expected,
      [f('asset', '"PX-12"'), f('revision', '"C"'), f('nominal_torque', '12.50'), f('unit', '"N·m"')],
      [f('asset', '"PX-12"'), f('revision', '"C"'), f('nominal_torque', '125'), f('unit', '"N·m"')],
    );
    expect(rows.map((r) => r.key)).toEqual(['asset', 'revision', 'nominal_torque', 'unit']);
    const torque = rows.find((r) => r.key === 'nominal_torque')!;
    expect(torque).toEqual({ key: 'nominal_torque', expected: '12.5', a: '12.50', b: '125', aDiffers: false, bDiffers: true });
    expect(rows.filter((r) => r.aDiffers || r.bDiffers).map((r) => r.key)).toEqual(['nominal_torque']);
  });

  it('marks a number written as a string, missing and extra fields', () => {
    const rows = diffFields(expected, [f('asset', '"PX-12"'), f('nominal_torque', '"12.5"', 'string'), f('comment', '"ok"')], null);
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey['nominal_torque']!.aDiffers).toBe(true);
    expect(byKey['revision']!.a).toBeNull();
    expect(byKey['revision']!.aDiffers).toBe(true);
    expect(byKey['comment']).toEqual({ key: 'comment', expected: null, a: '"ok"', b: null, aDiffers: true, bDiffers: false });
    expect(byKey['asset']!.bDiffers).toBe(true);
    expect(rows.map((r) => r.key)).toEqual(['asset', 'revision', 'nominal_torque', 'unit', 'comment']);
  });

  it('compares the refusal object, and the two sides against each other without an expected answer', () => {
    expect(diffFields({ error: 'not_found' }, [f('error', '"not_found"')], [f('asset', '"PX-13"')])).toEqual([
      { key: 'error', expected: '"not_found"', a: '"not_found"', b: null, aDiffers: false, bDiffers: true },
      { key: 'asset', expected: null, a: null, b: '"PX-13"', aDiffers: false, bDiffers: true },
    ]);
    const noItem = diffFields(null, [f('nominal_torque', '12.5')], [f('nominal_torque', '125')]);
    expect(noItem).toEqual([{ key: 'nominal_torque', expected: null, a: '12.5', b: '125', aDiffers: true, bDiffers: true }]);
    expect(diffFields(null, [f('x', '1')], [f('x', '1.0')])[0]!.aDiffers).toBe(false);
  });

  it('compares a list answer member by member, under the keys the validator extracts', () => {
    const second = { asset: 'KL-233', revision: 'D', nominal_torque: 8.75, unit: 'kN.m' };
    const side = (a: typeof expected, b: typeof expected) =>
      [a, b].flatMap((o, i) =>
        Object.entries(o).map(([k, v]) => f(`answers[${i}].${k}`, JSON.stringify(v), typeof v === 'number' ? 'number' : 'string')),
      );
    const rows = diffFields({ answers: [expected, second] }, side(expected, second), side(second, expected));
    expect(rows.map((r) => r.key)).toEqual([
      'answers[0].asset',
      'answers[0].revision',
      'answers[0].nominal_torque',
      'answers[0].unit',
      'answers[1].asset',
      'answers[1].revision',
      'answers[1].nominal_torque',
      'answers[1].unit',
    ]);
    expect(rows.every((r) => !r.aDiffers)).toBe(true);
    // The right records in the wrong order differ in every member.
    expect(rows.every((r) => r.bDiffers)).toBe(true);
    expect(rows[2]).toEqual({ key: 'answers[0].nominal_torque', expected: '12.5', a: '12.5', b: '8.75', aDiffers: false, bDiffers: true });
  });

  it('sameJson: numbers numerically, everything else by JSON text', () => {
    expect(sameJson('12.50', '12.5')).toBe(true);
    expect(sameJson('1e1', '10')).toBe(true);
    expect(sameJson('12.5', '125')).toBe(false);
    expect(sameJson('"12.5"', '12.5')).toBe(false);
    expect(sameJson('"N·m"', '"N·m"')).toBe(true);
    expect(sameJson('"Nm"', '"N·m"')).toBe(false);
    expect(sameJson('{"a": 1}', '{"a":1}')).toBe(true);
    expect(sameJson(null, null)).toBe(true);
    expect(sameJson(null, '1')).toBe(false);
  });
});

describe('markPrompt', () => {
  it('marks the evidence and the look-alikes, leaving the rest plain', () => {
    const text = 'Records:\nPX-12 rev C torque 12.5 N·m\nPX-12 rev B torque 11 N·m\nPX-21 rev C torque 125 N·m\nQuestion?';
    const segs = markPrompt(text, ['PX-12 rev C torque 12.5 N·m'], [
      { kinds: ['superseded_revision'], text: 'PX-12 rev B torque 11 N·m' },
      { kinds: ['similar_identifier', 'factor_of_ten'], text: 'PX-21 rev C torque 125 N·m' },
      { kinds: ['other_unit'], text: 'not in the prompt' },
    ]);
    expect(segs.map((s) => s.text).join('')).toBe(text);
    expect(segs.filter((s) => s.kind === 'evidence').map((s) => s.text)).toEqual(['PX-12 rev C torque 12.5 N·m']);
    const d = segs.filter((s) => s.kind === 'distractor');
    expect(d.map((s) => s.text)).toEqual(['PX-12 rev B torque 11 N·m', 'PX-21 rev C torque 125 N·m']);
    expect(d[1]!.note).toBe('similar identifier, factor of ten');
  });

  it('gives the whole text as plain when nothing is found', () => {
    expect(markPrompt('abc', [], [])).toEqual([{ text: 'abc', kind: 'plain' }]);
    expect(markPrompt('abc', [''], [])).toEqual([{ text: 'abc', kind: 'plain' }]);
  });
});

describe('labels and text', () => {
  it('names the five blind side labels in key order, and the role labels apart', () => {
    expect(LABELS.map((l) => SIDE_LABEL_NAME[l])).toEqual([
      'A correct, B wrong',
      'B correct, A wrong',
      'Both acceptable',
      'Both wrong',
      'Ambiguous item',
    ]);
    // No key names a role: a reviewer who has not seen the reveal cannot say which side is the candidate.
    expect(LABELS).not.toContain('candidate_regression');
    expect(LABELS).not.toContain('baseline_error');
    expect(ROLE_LABELS.map((l) => SIDE_LABEL_NAME[l])).toEqual(['Candidate regression', 'Baseline error']);
    expect(labelText(null)).toBe('unlabelled');
    expect(labelText('both_wrong')).toBe('Both wrong');
    expect(LABEL_NAME.candidate_regression).toBe('Candidate regression');
    expect(labelText('candidate_regression', true)).toBe('Candidate regression (unblinded)');
  });

  it('says which side is which', () => {
    expect(revealText(true, 'Q8')).toBe('A = Q8, B = B0');
    expect(revealText(false, 'Q8')).toBe('A = B0, B = Q8');
  });

  it('formats strata, absent measurements and the agreeing sample', () => {
    expect(strataText({ language: 'de', length_class: 'long', position: 'end', task_type: 'multi_document', answer_kind: 'present' })).toBe(
      'de · long · end · multi document · present',
    );
    expect(strataText(null)).toBe('strata unknown');
    expect(formatDuration(null)).toBe('absent');
    expect(formatDuration(1234.56)).toBe('1.2 s');
    expect(formatDuration(234.56)).toBe('234.6 ms');
    expect(formatCount(null)).toBe('absent');
    expect(formatCount(0)).toBe('0');
    expect(agreeingSample('12')).toBe(12);
    expect(agreeingSample('-3')).toBe(0);
    expect(agreeingSample('abc')).toBe(0);
    expect(agreeingSample('2.7')).toBe(2);
  });
});

describe('foldPrompt', () => {
  const records = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `filler record ${from + i}\n`).join('');
  const evidence = 'AX-104 rev B torque 12.5 N·m\n';
  const text = `Records:\n${records(0, 40)}${evidence}${records(40, 45)}Question?`;
  const marked = markPrompt(text, [evidence], []);

  it('folds long plain stretches and keeps the evidence with its context', () => {
    const folded = foldPrompt(marked, 3, 8);
    // Nothing is lost: the folds keep their text.
    expect(folded.map((s) => s.text).join('')).toBe(text);
    const folds = folded.filter((s) => s.kind === 'fold');
    expect(folds).toHaveLength(1);
    // 41 lines before the evidence: 4 shown at the start, 4 before the evidence, 33 folded.
    expect(folds[0]).toMatchObject({ lines: 33 });
    const shown = folded.filter((s) => s.kind !== 'fold').map((s) => s.text).join('');
    expect(shown).toContain('filler record 2\n');
    expect(shown).not.toContain('filler record 3\n');
    expect(shown).toContain('filler record 37\n');
    expect(shown).toContain(evidence);
    // The 6 lines after the evidence are too few to fold.
    expect(shown).toContain('filler record 44\nQuestion?');
  });

  it('leaves short prompts and marks alone', () => {
    const short = markPrompt(`a\nb\n${evidence}c\n`, [evidence], []);
    expect(foldPrompt(short)).toEqual(short);
    expect(foldPrompt([])).toEqual([]);
    // A stretch hiding fewer lines than minFold stays whole.
    const eleven = markPrompt(records(0, 11), [], []);
    expect(foldPrompt(eleven, 3, 8)).toEqual(eleven);
    const twelve = foldPrompt(markPrompt(records(0, 16), [], []), 3, 8);
    expect(twelve.filter((s) => s.kind === 'fold')).toEqual([
      { kind: 'fold', lines: 8, text: records(4, 12) },
    ]);
  });
});

describe('parseLabels', () => {
  it('reads key=value pairs and names what it cannot read', () => {
    expect(parseLabels('')).toEqual({ labels: null });
    expect(parseLabels(' language=de,task=x.y ')).toEqual({ labels: { language: 'de', task: 'x.y' } });
    expect(parseLabels('context_length=≤1024')).toEqual({ labels: { context_length: '≤1024' } });
    for (const bad of ['language', '=de', 'language=', 'a=1 a=2']) expect('error' in parseLabels(bad)).toBe(true);
  });
});

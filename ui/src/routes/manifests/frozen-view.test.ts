import { describe, expect, it } from 'vitest';
import type { Section } from '$lib/schema-form';
import { isToken, scalarList, scalarText, setEntries, setFields } from './frozen-view';

const field = (name: string) => ({ name, required: false, optional: true, node: { kind: 'text' as const } });
const sections: Section[] = [
  { title: 'Identity', fields: [field('cell'), field('candidate_id'), field('notes')] },
  { title: 'KV', fields: [field('kv_dtype'), field('skipped_layers'), field('scheduler')] },
  { title: 'Empty', fields: [field('trace_sha256')] },
];

describe('frozen manifest view', () => {
  it('keeps what is set, grouped; an empty list is set, null and absent are not', () => {
    const { sections: shown, unset } = setFields(
      { cell: 'B0', candidate_id: null, kv_dtype: 'fp8', skipped_layers: [], scheduler: {}, custom_key: 3 },
      sections,
    );
    expect(shown.map((s) => [s.title, s.fields.map((f) => f.name)])).toEqual([
      ['Identity', ['cell']],
      ['KV', ['kv_dtype', 'skipped_layers', 'scheduler']],
      ['Other fields', ['custom_key']],
    ]);
    expect(unset).toEqual(['candidate_id', 'notes', 'trace_sha256']);
  });

  it('shows values as frozen: every digit, booleans in words, lists in a line', () => {
    expect(scalarText(0)).toBe('0');
    expect(scalarText(0.30000000000000004)).toBe('0.30000000000000004');
    expect(scalarText(false)).toBe('no');
    expect(scalarText('auto')).toBe('auto');
    expect(scalarList([0, 1, 31])).toBe('0, 1, 31');
    expect(scalarList([{ layer: 1 }])).toBeNull();
    expect(setEntries({ a: 1, b: null, c: [] })).toEqual([
      ['a', 1],
      ['c', []],
    ]);
  });

  it('sets digests in monospace, not sentences', () => {
    expect(isToken('b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53')).toBe(true);
    expect(isToken('sha256:0123456789abcdef0123456789')).toBe(true);
    expect(isToken('ggml CPU flash attention (flash_attn = enabled)')).toBe(false);
  });
});

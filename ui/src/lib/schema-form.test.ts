// @vitest-environment node
import { describe, expect, it } from 'vitest';
import schemaJson from '$schemas/manifest.schema.json';
import {
  fieldsOf,
  formatScalarList,
  groupFields,
  parseScalarList,
  problemsAt,
  unsafeNumberPath,
  withKey,
  type Field,
  type JsonSchema,
} from './schema-form';

const schema = schemaJson as unknown as JsonSchema;
const fields = fieldsOf(schema);
const byName = (name: string, list: Field[] = fields): Field => {
  const found = list.find((f) => f.name === name);
  if (!found) throw new Error(`no field ${name}`);
  return found;
};

describe('fields from the generated manifest schema', () => {
  it('has one field per property, required ones first', () => {
    expect(fields.map((f) => f.name).sort()).toEqual(Object.keys(schema.properties ?? {}).sort());
    const firstOptional = fields.findIndex((f) => !f.required);
    expect(fields.slice(firstOptional).every((f) => !f.required)).toBe(true);
    expect(fields[0]!.name).toBe('cell');
  });

  it('reads option types, refs and null unions as optional widgets', () => {
    expect(byName('kv_dtype')).toMatchObject({ required: true, optional: false, node: { kind: 'text' } });
    expect(byName('candidate_id')).toMatchObject({ required: false, optional: true, node: { kind: 'text' } });
    expect(byName('kv_block_size').node).toEqual({ kind: 'number', integer: true });
    expect(byName('scales_observed_loaded')).toMatchObject({ optional: true, node: { kind: 'boolean' } });
    expect(byName('engine').node).toEqual({
      kind: 'enum',
      options: [{ value: 'vllm' }, { value: 'llama.cpp' }, { value: 'other' }],
    });
    const source = byName('scale_source');
    expect(source.optional).toBe(true);
    expect(source.node.kind === 'enum' && source.node.options.map((o) => o.value)).toEqual([
      'default',
      'checkpoint',
      'runtime',
    ]);
    expect(source.node.kind === 'enum' && source.node.options[0]!.description).toContain('1.0');
  });

  it('reads arrays, nested objects and maps', () => {
    expect(byName('skipped_layers').node).toEqual({ kind: 'scalar-list', item: 'integer', tokens: ['sliding_window'] });
    expect(byName('effective_args').node).toEqual({ kind: 'map', value: 'string' });
    const gpus = byName('gpu_inventory').node;
    expect(gpus.kind).toBe('object-list');
    if (gpus.kind === 'object-list') {
      expect(gpus.itemTitle).toBe('GpuGroup');
      expect(gpus.item.fields.map((f) => [f.name, f.required])).toEqual([
        ['model', true],
        ['count', true],
        ['memory_bytes', false],
      ]);
    }
    const geometry = byName('model_geometry');
    expect(geometry.optional).toBe(true);
    expect(geometry.node.kind).toBe('object');
    if (geometry.node.kind === 'object') {
      const window = byName('sliding_window', geometry.node.fields);
      expect(window.optional).toBe(true);
      expect(window.node.kind === 'object' && byName('layers', window.node.fields).node).toEqual({
        kind: 'scalar-list',
        item: 'integer',
        tokens: [],
      });
    }
    const stopping = byName('stopping').node;
    expect(stopping.kind === 'object' && byName('stop', stopping.fields).node).toEqual({ kind: 'string-list' });
    const decoding = byName('decoding').node;
    expect(decoding.kind === 'object' && byName('temperature', decoding.fields).node).toEqual({
      kind: 'number',
      integer: false,
    });
  });

  it('groups fields into sections and keeps the ones no section names', () => {
    const sections = groupFields(fields, [{ title: 'Identity', names: ['cell', 'nope', 'label'] }], 'Other');
    expect(sections[0]!.fields.map((f) => f.name)).toEqual(['cell', 'label']);
    expect(sections[1]!.title).toBe('Other');
    expect(sections[1]!.fields).toHaveLength(fields.length - 2);
  });
});

describe('values', () => {
  it('sets a member in place and removes it for undefined', () => {
    const obj = { a: 1, b: 2, c: 3 };
    expect(Object.keys(withKey(obj, 'b', 5))).toEqual(['a', 'b', 'c']);
    expect(withKey(obj, 'b', undefined)).toEqual({ a: 1, c: 3 });
    expect(Object.keys(withKey(obj, 'd', 0))).toEqual(['a', 'b', 'c', 'd']);
    expect(obj).toEqual({ a: 1, b: 2, c: 3 });
  });

  it('parses comma-separated lists without judging them', () => {
    expect(parseScalarList('0, 31 ,sliding_window', 'integer')).toEqual([0, 31, 'sliding_window']);
    expect(parseScalarList(' -1, 1.5, x ', 'integer')).toEqual([-1, 1.5, 'x']);
    expect(parseScalarList('1, 2', 'string')).toEqual(['1', '2']);
    expect(parseScalarList(' , ', 'integer')).toEqual([]);
    expect(formatScalarList([0, 31, 'sliding_window'])).toBe('0, 31, sliding_window');
  });

  it('finds integers JSON.parse could not keep exact', () => {
    expect(unsafeNumberPath(JSON.parse('{"decoding": {"seed": 9007199254740993}}'))).toBe('decoding.seed');
    expect(unsafeNumberPath(JSON.parse('{"a": [1, 2, 1e300]}'))).toBe('a[2]');
    expect(unsafeNumberPath(JSON.parse('{"a": 9007199254740991, "b": 0.5}'))).toBeNull();
  });

  it('picks the problems of a field, with its items when asked', () => {
    const problems = [
      { path: 'skipped_layers[2]' },
      { path: 'skipped_layers' },
      { path: 'skipped_layers_extra' },
      { path: 'decoding.top_p' },
    ];
    expect(problemsAt(problems, 'skipped_layers', true).map((p) => p.path)).toEqual(['skipped_layers[2]', 'skipped_layers']);
    expect(problemsAt(problems, 'skipped_layers').map((p) => p.path)).toEqual(['skipped_layers']);
    expect(problemsAt(problems, 'decoding')).toEqual([]);
  });
});

// Turns a JSON Schema (draft 2020-12, as schemars writes it) into a model of form fields, and
// edits plain JSON values by path. Presentation only: no rule of the domain is decided here,
// whatever the user enters goes into the JSON as entered and the backend says what is wrong.

export type JsonSchema = {
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  description?: string;
  title?: string;
  format?: string;
};

export type ChoiceOption = { value: string; description?: string };

export type ScalarKind = 'string' | 'integer' | 'number' | 'boolean';

export type ObjectNode = { kind: 'object'; fields: Field[] };

export type FieldNode =
  | { kind: 'text' }
  | { kind: 'number'; integer: boolean }
  | { kind: 'boolean' }
  | { kind: 'enum'; options: ChoiceOption[] }
  /** Scalars typed as one comma-separated line; `tokens` are the words the items may also be. */
  | { kind: 'scalar-list'; item: 'integer' | 'number' | 'string'; tokens: string[] }
  /** Free text items (they may contain commas): one input each. */
  | { kind: 'string-list' }
  | ObjectNode
  | { kind: 'object-list'; item: ObjectNode; itemTitle: string }
  | { kind: 'map'; value: ScalarKind }
  /** Anything the form has no widget for, edited as JSON text. */
  | { kind: 'json' };

export type Field = {
  name: string;
  required: boolean;
  /** The schema allows the value to be absent (not required, or null allowed). */
  optional: boolean;
  description?: string;
  /** Name of the `$defs` type, for legends. */
  typeName?: string;
  node: FieldNode;
};

type Resolved = { schema: JsonSchema; nullable: boolean; description?: string; typeName?: string };

const MAX_DEPTH = 12;

function refName(ref: string): string {
  return ref.replace(/^#\/\$defs\//, '');
}

function isNullBranch(s: JsonSchema): boolean {
  return s.type === 'null' || (Array.isArray(s.type) && s.type.length === 1 && s.type[0] === 'null');
}

/** Follows `$ref`s and strips `null` alternatives, remembering that null (absent) was allowed. */
function resolve(schema: JsonSchema, root: JsonSchema): Resolved {
  let current = schema;
  let nullable = false;
  let description = schema.description;
  let typeName: string | undefined;
  for (let i = 0; i < MAX_DEPTH; i++) {
    if (current.$ref) {
      typeName = refName(current.$ref);
      const target = root.$defs?.[typeName];
      if (!target) break;
      description ??= target.description;
      current = target;
      continue;
    }
    const union = current.anyOf ?? current.oneOf;
    if (union) {
      const rest = union.filter((s) => !isNullBranch(s));
      if (rest.length < union.length) nullable = true;
      if (rest.length === 1 && rest[0]) {
        current = rest[0];
        continue;
      }
      current = { ...current, anyOf: rest, oneOf: undefined };
      break;
    }
    if (current.allOf?.length === 1 && current.allOf[0]) {
      current = current.allOf[0];
      continue;
    }
    break;
  }
  if (Array.isArray(current.type)) {
    const types = current.type.filter((t) => t !== 'null');
    if (types.length < current.type.length) nullable = true;
    current = { ...current, type: types.length === 1 ? types[0] : types };
  }
  return { schema: current, nullable, description, typeName };
}

/** The string values of an enum-like schema (`enum`, `const`, or a union of them), else null. */
function choicesOf(schema: JsonSchema, root: JsonSchema): ChoiceOption[] | null {
  if (schema.enum) {
    return schema.enum.every((v) => typeof v === 'string')
      ? schema.enum.map((v) => ({ value: v as string }))
      : null;
  }
  if (typeof schema.const === 'string') return [{ value: schema.const, description: schema.description }];
  const union = schema.anyOf ?? schema.oneOf;
  if (!union) return null;
  const options: ChoiceOption[] = [];
  for (const branch of union) {
    const r = resolve(branch, root);
    const sub = choicesOf(r.schema, root);
    if (!sub) return null;
    options.push(...sub.map((o) => ({ ...o, description: o.description ?? r.description })));
  }
  return options;
}

function scalarKind(schema: JsonSchema): ScalarKind | null {
  const t = schema.type;
  return t === 'string' || t === 'integer' || t === 'number' || t === 'boolean' ? t : null;
}

function arrayNode(items: JsonSchema | undefined, root: JsonSchema, depth: number): FieldNode {
  if (!items) return { kind: 'json' };
  const r = resolve(items, root);
  const choices = choicesOf(r.schema, root);
  if (choices) return { kind: 'scalar-list', item: 'string', tokens: choices.map((c) => c.value) };
  const scalar = scalarKind(r.schema);
  if (scalar === 'string') return { kind: 'string-list' };
  if (scalar === 'integer' || scalar === 'number') return { kind: 'scalar-list', item: scalar, tokens: [] };
  const union = r.schema.anyOf ?? r.schema.oneOf;
  if (union) {
    // e.g. skipped_layers: a layer index or the token `sliding_window`.
    let numeric: 'integer' | 'number' | null = null;
    const tokens: string[] = [];
    for (const branch of union) {
      const b = resolve(branch, root);
      const kind = scalarKind(b.schema);
      const words = choicesOf(b.schema, root);
      if (words) tokens.push(...words.map((w) => w.value));
      else if (kind === 'integer' || kind === 'number') numeric = kind;
      else return { kind: 'json' };
    }
    return { kind: 'scalar-list', item: numeric ?? 'string', tokens };
  }
  const node = nodeOf(r.schema, root, depth + 1);
  if (node.kind === 'object') return { kind: 'object-list', item: node, itemTitle: r.typeName ?? 'item' };
  return { kind: 'json' };
}

function nodeOf(schema: JsonSchema, root: JsonSchema, depth: number): FieldNode {
  if (depth > MAX_DEPTH) return { kind: 'json' };
  const choices = choicesOf(schema, root);
  if (choices) return { kind: 'enum', options: choices };
  switch (schema.type) {
    case 'string':
      return { kind: 'text' };
    case 'integer':
      return { kind: 'number', integer: true };
    case 'number':
      return { kind: 'number', integer: false };
    case 'boolean':
      return { kind: 'boolean' };
    case 'array':
      return arrayNode(schema.items, root, depth);
    case 'object': {
      if (schema.properties) return { kind: 'object', fields: fieldsOf(schema, root, depth + 1) };
      const extra = schema.additionalProperties;
      if (extra && typeof extra === 'object') {
        const value = scalarKind(resolve(extra, root).schema);
        if (value) return { kind: 'map', value };
      }
      return { kind: 'json' };
    }
    default:
      return { kind: 'json' };
  }
}

/**
 * The fields of an object schema: required ones first in the schema's `required` order
 * (the declaration order of the Rust type), then the optional ones in property order.
 */
export function fieldsOf(schema: JsonSchema, root: JsonSchema = schema, depth = 0): Field[] {
  const properties = schema.properties ?? {};
  const required = schema.required ?? [];
  const names = [
    ...required.filter((name) => name in properties),
    ...Object.keys(properties).filter((name) => !required.includes(name)),
  ];
  return names.map((name) => {
    const r = resolve(properties[name] as JsonSchema, root);
    const isRequired = required.includes(name);
    return {
      name,
      required: isRequired,
      optional: !isRequired || r.nullable,
      description: r.description,
      typeName: r.typeName,
      node: nodeOf(r.schema, root, depth),
    };
  });
}

export type Section = { title: string; fields: Field[] };

/** Groups fields by name into titled sections; fields no section names go into `restTitle`. */
export function groupFields(fields: Field[], sections: { title: string; names: string[] }[], restTitle: string): Section[] {
  const byName = new Map(fields.map((f) => [f.name, f]));
  const used = new Set<string>();
  const groups: Section[] = sections.map(({ title, names }) => ({
    title,
    fields: names.flatMap((name) => {
      const field = byName.get(name);
      if (!field || used.has(name)) return [];
      used.add(name);
      return [field];
    }),
  }));
  const rest = fields.filter((f) => !used.has(f.name));
  if (rest.length > 0) groups.push({ title: restTitle, fields: rest });
  return groups.filter((g) => g.fields.length > 0);
}

// ---- values -------------------------------------------------------------------------------

export type JsonObject = { [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A copy of `obj` with `key` set (in place, keeping member order) or removed when `value` is undefined. */
export function withKey(obj: JsonObject, key: string, value: unknown): JsonObject {
  if (value === undefined) {
    const { [key]: _removed, ...rest } = obj;
    void _removed;
    return rest;
  }
  return { ...obj, [key]: value };
}

/** Path of a child for problem matching and test ids: `decoding.top_p`, `gpu_inventory[0].model`. */
/** Problems to show beside the field at `path`; `withItems` adds those of its items (`path[2]`). */
export function problemsAt<P extends { path: string }>(problems: readonly P[], path: string, withItems = false): P[] {
  return problems.filter((p) => p.path === path || (withItems && p.path.startsWith(`${path}[`)));
}

export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/** An element id for a field path (ids cannot hold every character a path may). */
export function fieldId(path: string): string {
  return `field-${path.replace(/[^A-Za-z0-9_-]/g, (c) => `-${c.charCodeAt(0).toString(16)}-`)}`;
}

/** JSON.parse would round integers beyond 2^53 − 1: the form must not rewrite such a document. */
export function unsafeNumberPath(value: unknown, path = '$'): string | null {
  if (typeof value === 'number') return Number.isInteger(value) && !Number.isSafeInteger(value) ? path : null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unsafeNumberPath(item, `${path}[${i}]`);
      if (found) return found;
    }
  } else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const found = unsafeNumberPath(item, path === '$' ? key : `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/** One comma-separated line → items; numbers where the text is a number, the text itself otherwise. */
export function parseScalarList(raw: string, item: 'integer' | 'number' | 'string'): unknown[] {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => (item !== 'string' && NUMBER.test(part) ? Number(part) : part));
}

export function formatScalarList(value: unknown): string {
  return Array.isArray(value) ? value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ') : '';
}

/** Same JSON value (member order ignored); used to tell a user's own edit from an outside change. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && sameValue(a[k], b[k]));
  }
  return false;
}

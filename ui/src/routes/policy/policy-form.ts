// The acceptance policy as the Policy screen edits it: a structured form kept in step with the raw
// JSON text. Only the shape is handled here (which keys, which types); whether the values may be
// locked is the backend's `check_policy`, whose problems are placed beside the fields they name.

import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import { STRATA } from '$lib/bindings/strata';

/** The filter dimensions of a segment, in the order of the policy file, with their values. */
export const FILTER_DIMENSIONS = STRATA;

export type FilterKey = (typeof FILTER_DIMENSIONS)[number]['key'];

/** A number as typed: `null` when the field is empty (an optional key is then left out). */
export type NumberField = number | null;

export type ClassForm = {
  name: string;
  max_input_tokens: NumberField;
  /** `null`: no route key (every route). */
  route: string | null;
  ttft_ms: NumberField;
  itl_ms: NumberField;
  e2e_ms: NumberField;
  /** The error contract, a share; empty: not declared. */
  max_error_rate: NumberField;
  /** The completion contract, a share; empty: not declared. */
  min_completion_rate: NumberField;
};

export type SegmentForm = {
  name: string;
  /** `''`: the dimension is not filtered (every value matches). */
  filter: Record<FilterKey, string>;
  floor: NumberField;
  margin: NumberField;
  protected: boolean;
};

export type PolicyForm = {
  classes: ClassForm[];
  interval_s: NumberField;
  drain_s: NumberField;
  alpha: NumberField;
  target_offered_load_rps: NumberField;
  /** `envelope.min_good_share`: the operating envelope's bar, a share. */
  min_good_share: NumberField;
  /** `cost.per_instance_hour`: what one serving instance costs per hour. */
  cost_per_instance_hour: NumberField;
  segments: SegmentForm[];
};

export function emptyFilter(): Record<FilterKey, string> {
  return { language: '', length_class: '', position: '', task_type: '', answer_kind: '' };
}

export function newClass(): ClassForm {
  return {
    name: '',
    max_input_tokens: null,
    route: null,
    ttft_ms: null,
    itl_ms: null,
    e2e_ms: null,
    max_error_rate: null,
    min_completion_rate: null,
  };
}

export function newSegment(): SegmentForm {
  return { name: '', filter: emptyFilter(), floor: null, margin: 0.02, protected: true };
}

/**
 * A starting point for a study without a policy: three length classes, and three protected
 * segments (German long context, numeric answers, long context) at margin 0.02 and floor 0.9.
 * The SLO values are placeholders for the service owner to replace, not recommendations.
 */
export function templateForm(): PolicyForm {
  const segment = (name: string, filter: Partial<Record<FilterKey, string>>): SegmentForm => ({
    name,
    filter: { ...emptyFilter(), ...filter },
    floor: 0.9,
    margin: 0.02,
    protected: true,
  });
  return {
    classes: [
      { name: 'short', max_input_tokens: 1023, route: null, ttft_ms: 500, itl_ms: 50, e2e_ms: 5000, max_error_rate: null, min_completion_rate: null },
      { name: 'medium', max_input_tokens: 4095, route: null, ttft_ms: 1500, itl_ms: 60, e2e_ms: 15000, max_error_rate: null, min_completion_rate: null },
      { name: 'long', max_input_tokens: 32767, route: null, ttft_ms: 5000, itl_ms: 80, e2e_ms: 60000, max_error_rate: null, min_completion_rate: null },
    ],
    interval_s: 60,
    drain_s: 30,
    alpha: 0.05,
    target_offered_load_rps: null,
    min_good_share: null,
    cost_per_instance_hour: null,
    segments: [
      segment('de-long', { language: 'de', length_class: 'long' }),
      segment('numeric', { task_type: 'numeric' }),
      segment('long-context', { length_class: 'long' }),
    ],
  };
}

/** A number field holds a value (`bind:value` leaves `undefined` or `null` in an emptied field). */
function isSet(v: NumberField | undefined): v is number {
  return v !== null && v !== undefined;
}

/** The policy value of a form, keys in the order of the Rust type; optional keys left out when empty. */
export function formToPolicy(form: PolicyForm): Record<string, unknown> {
  const policy: Record<string, unknown> = {
    classes: form.classes.map((c) => {
      const slo: Record<string, number> = {};
      if (isSet(c.ttft_ms)) slo['ttft_ms'] = c.ttft_ms;
      if (isSet(c.itl_ms)) slo['itl_ms'] = c.itl_ms;
      if (isSet(c.e2e_ms)) slo['e2e_ms'] = c.e2e_ms;
      return {
        name: c.name,
        max_input_tokens: c.max_input_tokens ?? null,
        ...(c.route !== null ? { route: c.route } : {}),
        slo,
        ...(isSet(c.max_error_rate) ? { max_error_rate: c.max_error_rate } : {}),
        ...(isSet(c.min_completion_rate) ? { min_completion_rate: c.min_completion_rate } : {}),
      };
    }),
    goodput: { interval_s: form.interval_s ?? null, drain_s: form.drain_s ?? null },
    alpha: form.alpha ?? null,
    segments: form.segments.map((s) => {
      const filter: Record<string, string> = {};
      for (const { key } of FILTER_DIMENSIONS) if (s.filter[key] !== '') filter[key] = s.filter[key];
      return {
        name: s.name,
        filter,
        ...(isSet(s.floor) ? { floor: s.floor } : {}),
        margin: s.margin ?? null,
        protected: s.protected,
      };
    }),
  };
  if (isSet(form.target_offered_load_rps)) policy['target_offered_load_rps'] = form.target_offered_load_rps;
  if (isSet(form.min_good_share)) policy['envelope'] = { min_good_share: form.min_good_share };
  if (isSet(form.cost_per_instance_hour)) policy['cost'] = { per_instance_hour: form.cost_per_instance_hour };
  return policy;
}

/** The raw JSON view of a form: two-space indented. */
export function formToJson(form: PolicyForm): string {
  return `${JSON.stringify(formToPolicy(form), null, 2)}\n`;
}

/** Why a JSON text cannot be shown in the form (it stays editable as text). */
export class NotRepresentable extends Error {}

type Json = Record<string, unknown>;

function object(value: unknown, path: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new NotRepresentable(`${path}: expected an object, found ${describe(value)}`);
  }
  return value as Json;
}

function onlyKeys(value: Json, path: string, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new NotRepresentable(`${path}: unknown key "${key}" (allowed: ${allowed.join(', ')})`);
    }
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return JSON.stringify(value);
}

function num(value: unknown, path: string, required: boolean): NumberField {
  if (value === undefined) {
    if (required) throw new NotRepresentable(`${path}: expected a number, found nothing`);
    return null;
  }
  if (value === null) return null;
  if (typeof value !== 'number') throw new NotRepresentable(`${path}: expected a number, found ${describe(value)}`);
  return value;
}

function str(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new NotRepresentable(`${path}: expected a string, found ${describe(value)}`);
  return value;
}

function list(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new NotRepresentable(`${path}: expected a list, found ${describe(value)}`);
  return value;
}

/**
 * The form of a policy JSON text. Throws NotRepresentable (or SyntaxError) when the text has a
 * key or a type the form cannot hold, so that nothing typed is silently dropped.
 */
export function jsonToForm(text: string): PolicyForm {
  const root = object(JSON.parse(text) as unknown, '$');
  onlyKeys(root, '$', ['classes', 'goodput', 'alpha', 'segments', 'target_offered_load_rps', 'envelope', 'cost']);
  const goodput = object(root['goodput'], 'goodput');
  onlyKeys(goodput, 'goodput', ['interval_s', 'drain_s']);
  const envelope = root['envelope'] === undefined ? {} : object(root['envelope'], 'envelope');
  onlyKeys(envelope, 'envelope', ['min_good_share']);
  const cost = root['cost'] === undefined ? {} : object(root['cost'], 'cost');
  onlyKeys(cost, 'cost', ['per_instance_hour']);
  const classes = list(root['classes'], 'classes').map((value, i): ClassForm => {
    const path = `classes[${i}]`;
    const c = object(value, path);
    onlyKeys(c, path, ['name', 'max_input_tokens', 'route', 'slo', 'max_error_rate', 'min_completion_rate']);
    const slo = object(c['slo'], `${path}.slo`);
    onlyKeys(slo, `${path}.slo`, ['ttft_ms', 'itl_ms', 'e2e_ms']);
    return {
      name: str(c['name'], `${path}.name`),
      max_input_tokens: num(c['max_input_tokens'], `${path}.max_input_tokens`, true),
      route: c['route'] === undefined || c['route'] === null ? null : str(c['route'], `${path}.route`),
      ttft_ms: num(slo['ttft_ms'], `${path}.slo.ttft_ms`, false),
      itl_ms: num(slo['itl_ms'], `${path}.slo.itl_ms`, false),
      e2e_ms: num(slo['e2e_ms'], `${path}.slo.e2e_ms`, false),
      max_error_rate: num(c['max_error_rate'], `${path}.max_error_rate`, false),
      min_completion_rate: num(c['min_completion_rate'], `${path}.min_completion_rate`, false),
    };
  });
  const segments = list(root['segments'], 'segments').map((value, i): SegmentForm => {
    const path = `segments[${i}]`;
    const s = object(value, path);
    onlyKeys(s, path, ['name', 'filter', 'floor', 'margin', 'protected']);
    const f = object(s['filter'], `${path}.filter`);
    onlyKeys(
      f,
      `${path}.filter`,
      FILTER_DIMENSIONS.map((d) => d.key),
    );
    const filter = emptyFilter();
    for (const { key, values } of FILTER_DIMENSIONS) {
      const v = f[key];
      if (v === undefined || v === null) continue;
      const text = str(v, `${path}.filter.${key}`);
      if (!(values as readonly string[]).includes(text)) {
        throw new NotRepresentable(`${path}.filter.${key}: expected one of ${values.join(', ')}, found "${text}"`);
      }
      filter[key] = text;
    }
    if (typeof s['protected'] !== 'boolean') {
      throw new NotRepresentable(`${path}.protected: expected true or false, found ${describe(s['protected'])}`);
    }
    return {
      name: str(s['name'], `${path}.name`),
      filter,
      floor: num(s['floor'], `${path}.floor`, false),
      margin: num(s['margin'], `${path}.margin`, true),
      protected: s['protected'],
    };
  });
  return {
    classes,
    interval_s: num(goodput['interval_s'], 'goodput.interval_s', true),
    drain_s: num(goodput['drain_s'], 'goodput.drain_s', true),
    alpha: num(root['alpha'], 'alpha', true),
    target_offered_load_rps: num(root['target_offered_load_rps'], 'target_offered_load_rps', false),
    min_good_share: num(envelope['min_good_share'], 'envelope.min_good_share', root['envelope'] !== undefined),
    cost_per_instance_hour: num(cost['per_instance_hour'], 'cost.per_instance_hour', root['cost'] !== undefined),
    segments,
  };
}

/** `jsonToForm` as a value: the form, or why the text cannot be shown in it. */
export function parsePolicyText(text: string): { form: PolicyForm; error: null } | { form: null; error: string } {
  try {
    return { form: jsonToForm(text), error: null };
  } catch (reason) {
    if (reason instanceof NotRepresentable) return { form: null, error: reason.message };
    if (reason instanceof SyntaxError) return { form: null, error: `not valid JSON: ${reason.message}` };
    throw reason;
  }
}

/** Required numbers left empty in the form: the backend would only say "null" without a path. */
export function missingNumbers(form: PolicyForm): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  const need = (path: string, value: NumberField | undefined, expected = 'a number') => {
    if (!isSet(value)) out.push({ path, expected, found: 'nothing' });
  };
  form.classes.forEach((c, i) => need(`classes[${i}].max_input_tokens`, c.max_input_tokens, 'a whole number of tokens'));
  need('goodput.interval_s', form.interval_s);
  need('goodput.drain_s', form.drain_s);
  need('alpha', form.alpha);
  form.segments.forEach((s, i) => need(`segments[${i}].margin`, s.margin));
  return out;
}

/** Every JSON path the form shows a field for; problems on other paths are shown above the form. */
export function fieldPaths(form: PolicyForm): string[] {
  const paths = [
    'classes',
    'goodput.interval_s',
    'goodput.drain_s',
    'alpha',
    'target_offered_load_rps',
    'envelope.min_good_share',
    'cost.per_instance_hour',
    'segments',
  ];
  form.classes.forEach((_, i) => {
    for (const key of [
      'name',
      'max_input_tokens',
      'route',
      'slo.ttft_ms',
      'slo.itl_ms',
      'slo.e2e_ms',
      'max_error_rate',
      'min_completion_rate',
    ]) {
      paths.push(`classes[${i}].${key}`);
    }
  });
  form.segments.forEach((_, i) => {
    for (const key of ['name', 'floor', 'margin', 'protected']) paths.push(`segments[${i}].${key}`);
    for (const { key } of FILTER_DIMENSIONS) paths.push(`segments[${i}].filter.${key}`);
  });
  return paths;
}

/** Problems by the field they name, and those naming no field of the form (e.g. `$`). */
export function placeProblems(
  problems: readonly PolicyProblem[],
  form: PolicyForm | null,
): { byPath: Map<string, PolicyProblem[]>; general: PolicyProblem[] } {
  const known = new Set(form ? fieldPaths(form) : []);
  const byPath = new Map<string, PolicyProblem[]>();
  const general: PolicyProblem[] = [];
  for (const p of problems) {
    if (known.has(p.path)) byPath.set(p.path, [...(byPath.get(p.path) ?? []), p]);
    else general.push(p);
  }
  return { byPath, general };
}

/** The DOM id of a field's input, from its JSON path, for labels and aria-describedby. */
export function fieldId(path: string): string {
  return `policy-${path.replace(/[^A-Za-z0-9_]+/g, '-').replace(/-+$/, '')}`;
}

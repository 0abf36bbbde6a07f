import { describe, expect, it } from 'vitest';
import {
  fieldId,
  fieldPaths,
  formToJson,
  formToPolicy,
  jsonToForm,
  missingNumbers,
  parsePolicyText,
  placeProblems,
  templateForm,
} from './policy-form';

// Every key a policy can hold, each optional one present, in the order of the Rust type.
const FULL = {
  classes: [
    {
      name: 'short',
      max_input_tokens: 1023,
      route: 'chat',
      slo: { ttft_ms: 500, itl_ms: 50, e2e_ms: 5000 },
      max_error_rate: 0.01,
      min_completion_rate: 0.99,
    },
    { name: 'long', max_input_tokens: 8191, slo: { e2e_ms: 20000 } },
  ],
  goodput: { interval_s: 60, drain_s: 30 },
  alpha: 0.05,
  segments: [
    {
      name: 'de-long-end',
      filter: { language: 'de', length_class: 'long', position: 'end', task_type: 'numeric', answer_kind: 'absent' },
      floor: 0.9,
      margin: 0.02,
      protected: true,
    },
    { name: 'everything', filter: {}, margin: 0.05, protected: false },
  ],
  target_offered_load_rps: 4.5,
  envelope: { min_good_share: 0.95 },
  cost: { per_instance_hour: 4 },
};

describe('JSON and form round trip', () => {
  it('keeps every field of a full policy, optional keys included, in the same order', () => {
    const text = JSON.stringify(FULL, null, 2);
    const form = jsonToForm(text);
    expect(formToPolicy(form)).toEqual(FULL);
    expect(formToJson(form)).toBe(`${text}\n`);
    expect(form.classes[0]?.route).toBe('chat');
    expect(form.classes[1]?.ttft_ms).toBeNull();
    expect(form.segments[1]?.floor).toBeNull();
    expect(form.segments[0]?.filter).toEqual({
      language: 'de',
      length_class: 'long',
      position: 'end',
      task_type: 'numeric',
      answer_kind: 'absent',
    });
  });

  it('leaves optional keys out when empty, never writing 0 for them', () => {
    const form = jsonToForm(JSON.stringify(FULL));
    form.classes[0]!.ttft_ms = null;
    form.classes[0]!.route = null;
    form.classes[0]!.max_error_rate = null;
    form.classes[0]!.min_completion_rate = null;
    form.segments[0]!.floor = null;
    form.segments[0]!.filter.position = '';
    form.target_offered_load_rps = null;
    form.min_good_share = null;
    form.cost_per_instance_hour = null;
    const policy = formToPolicy(form) as typeof FULL;
    expect(policy.classes[0]).toEqual({ name: 'short', max_input_tokens: 1023, slo: { itl_ms: 50, e2e_ms: 5000 } });
    expect(policy.segments[0]).not.toHaveProperty('floor');
    expect(policy.segments[0]?.filter).not.toHaveProperty('position');
    expect(policy).not.toHaveProperty('target_offered_load_rps');
    expect(policy).not.toHaveProperty('envelope');
    expect(policy).not.toHaveProperty('cost');
  });

  it('treats a field emptied through bind:value (undefined) as empty', () => {
    const form = templateForm();
    (form.classes[0] as { ttft_ms: number | null | undefined }).ttft_ms = undefined;
    (form as { alpha: number | null | undefined }).alpha = undefined;
    const policy = formToPolicy(form) as { alpha: unknown; classes: { slo: object }[] };
    expect(policy.classes[0]?.slo).not.toHaveProperty('ttft_ms');
    // A required number stays in the text as null, so the backend and the form both name it.
    expect(policy.alpha).toBeNull();
    expect(missingNumbers(form).map((p) => p.path)).toEqual(['alpha']);
  });

  it('keeps a required number left empty as null and reports it at its path', () => {
    const form = templateForm();
    form.classes[1]!.max_input_tokens = null;
    form.segments[2]!.margin = null;
    const text = formToJson(form);
    expect(JSON.parse(text).classes[1].max_input_tokens).toBeNull();
    expect(missingNumbers(form)).toEqual([
      { path: 'classes[1].max_input_tokens', expected: 'a whole number of tokens', found: 'nothing' },
      { path: 'segments[2].margin', expected: 'a number', found: 'nothing' },
    ]);
    // Null survives the way back, so the text and the form still agree.
    expect(formToJson(jsonToForm(text))).toBe(text);
  });

  it('refuses to show in the form what it would drop or change', () => {
    const unknownKey = { ...FULL, classes: [{ ...FULL.classes[0], slo: { tpot_ms: 5 } }] };
    expect(parsePolicyText(JSON.stringify(unknownKey)).error).toMatch(/classes\[0\]\.slo: unknown key "tpot_ms"/);
    expect(parsePolicyText(JSON.stringify({ ...FULL, extra: 1 })).error).toMatch(/\$: unknown key "extra"/);
    expect(parsePolicyText(JSON.stringify({ ...FULL, alpha: '0.05' })).error).toBe('alpha: expected a number, found "0.05"');
    const badFilter = { ...FULL, segments: [{ ...FULL.segments[0], filter: { language: 'fr' } }] };
    expect(parsePolicyText(JSON.stringify(badFilter)).error).toMatch(/segments\[0\]\.filter\.language: expected one of en, de/);
    expect(parsePolicyText('{"classes": [').error).toMatch(/^not valid JSON/);
    expect(parsePolicyText('[]').error).toBe('$: expected an object, found a list');
    expect(parsePolicyText(JSON.stringify(FULL)).form).not.toBeNull();
  });
});

describe('template', () => {
  it('has three length classes and three protected segments at margin 0.02 and floor 0.9', () => {
    const policy = formToPolicy(templateForm()) as typeof FULL;
    expect(policy.classes.map((c) => [c.name, c.max_input_tokens])).toEqual([
      ['short', 1023],
      ['medium', 4095],
      ['long', 32767],
    ]);
    expect(policy.segments.map((s) => s.name)).toEqual(['de-long', 'numeric', 'long-context']);
    expect(policy.segments.every((s) => s.protected && s.margin === 0.02 && s.floor === 0.9)).toBe(true);
    expect(policy.segments[0]?.filter).toEqual({ language: 'de', length_class: 'long' });
    expect(missingNumbers(templateForm())).toEqual([]);
  });
});

describe('problems beside fields', () => {
  it('places each backend problem at the field of its path, the rest above the form', () => {
    const form = jsonToForm(JSON.stringify(FULL));
    const problems = [
      { path: 'classes[1].slo.ttft_ms', expected: 'a finite number greater than 0', found: '-1' },
      { path: 'segments[0].margin', expected: 'a share in [0, 1)', found: '1' },
      { path: 'segments[0].margin', expected: 'something else', found: 'x' },
      { path: 'alpha', expected: 'a significance level in (0, 0.5)', found: '0.5' },
      { path: '$', expected: 'a policy as in schemas/policy.schema.json', found: 'invalid type' },
      { path: 'classes[7].name', expected: 'a name', found: '""' },
    ];
    const { byPath, general } = placeProblems(problems, form);
    expect(byPath.get('classes[1].slo.ttft_ms')).toEqual([problems[0]]);
    expect(byPath.get('segments[0].margin')).toHaveLength(2);
    expect(byPath.get('alpha')).toEqual([problems[3]]);
    expect(general.map((p) => p.path)).toEqual(['$', 'classes[7].name']);
  });

  it('puts everything above the form when the form cannot show the text', () => {
    const problems = [{ path: 'alpha', expected: 'a number', found: 'x' }];
    expect(placeProblems(problems, null).general).toEqual(problems);
  });

  it('knows a path for every field the form draws', () => {
    const paths = fieldPaths(templateForm());
    for (const p of ['classes[2].slo.e2e_ms', 'classes[0].route', 'segments[1].filter.task_type', 'segments[2].protected', 'goodput.drain_s']) {
      expect(paths).toContain(p);
    }
    expect(paths).not.toContain('classes[3].name');
  });

  it('turns paths into distinct element ids', () => {
    expect(fieldId('classes[1].slo.ttft_ms')).toBe('policy-classes-1-slo-ttft_ms');
    expect(fieldId('classes[1].name')).not.toBe(fieldId('classes[11].name'));
  });
});

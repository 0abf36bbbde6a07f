// Analyses and charts as the backend sends them, for the Results tests: valid B0, a candidate with
// paired rows, and an invalid cell; charts as `study_results` draws them (their drawing is tested in
// `kvgate-app`'s charts module).

import type { Chart } from '$lib/bindings/Chart';
import type { ChartMark } from '$lib/bindings/ChartMark';
import type { ChartSpec } from '$lib/bindings/ChartSpec';
import type { StudyAnalysis } from '$lib/bindings/StudyAnalysis';
import type { StudyCharts } from '$lib/bindings/StudyCharts';
import type { StudyResults } from '$lib/bindings/StudyResults';
import type { Cell, Row } from './rows';

const NONE = { p50: null, p90: null, p99: null, count: 0 };
const MISSES = { ttft: 0, itl: 0, e2e: 0, after_drain: 0, not_accepted: 0, timing_missing: 0 };

export function row(stratum: string, patch: Partial<Row> = {}): Row {
  return {
    stratum,
    kind: stratum === 'overall' ? 'overall' : stratum.includes('=') ? 'marginal' : 'segment',
    protected: false,
    n: 40,
    b: 2,
    c: 1,
    delta: -0.025,
    mcnemar_p: 1,
    mcnemar_p_holm: null,
    ci_low: -0.09,
    ci_high: 0.04,
    level: 0.9,
    alpha: 0.05,
    margin: 0.02,
    verdict: 'collect_more_evidence',
    ...patch,
  };
}

export function cell(name: string, patch: Partial<Cell> = {}): Cell {
  const baseline = name === 'B0';
  return {
    cell: name,
    test_cell: baseline ? { kind: 'b0' } : { kind: 'c1' },
    manifest_sha256: `${name.toLowerCase()}${'0'.repeat(62)}`.slice(0, 64),
    valid: true,
    invalid_reasons: [],
    runs: baseline ? [1, 2] : [3],
    requests: {
      offered: 40,
      completed: 38,
      failed: 1,
      refused: 0,
      timeout: 1,
      unfinished: 0,
      validated: 39,
      accepted: 36,
    },
    accepted_share: 0.9,
    latency: {
      short: {
        ttft_ms: { p50: 120.5, p90: 180, p99: 250, count: 30 },
        itl_ms: { p50: 20, p90: 25, p99: null, count: 28 },
        e2e_ms: { p50: 900, p90: 1400, p99: 2100, count: 30 },
        count: 30,
        itl_not_applicable: 2,
        client_delay_ms: { p50: 0.4, p90: 1.2, p99: 3.5, count: 32 },
        engine_itl_ms: { p50: 14.2, p90: 15.1, p99: 17.9, count: 30 },
        ttft_cdf_ms: Array.from({ length: 101 }, (_, q) => 100 + q * 1.5),
        e2e_cdf_ms: Array.from({ length: 101 }, (_, q) => 800 + q * 13),
      },
      long: {
        ttft_ms: NONE,
        itl_ms: NONE,
        e2e_ms: NONE,
        count: 0,
        itl_not_applicable: 0,
        client_delay_ms: NONE,
        engine_itl_ms: NONE,
        ttft_cdf_ms: [],
        e2e_cdf_ms: [],
      },
    },
    goodput: {
      short: {
        per_s: 0.5,
        good: 30,
        cohort: 36,
        unfinished: 1,
        failed: 1,
        refused: 0,
        misses: { ...MISSES, ttft: 3, after_drain: 1 },
        itl_not_applicable: 2,
        slo_only: false,
        repeats: { n: 2, mean: 0.5, sd: 0.05, ci_low: 0.05, ci_high: 0.95 },
        runs: [
          {
            run_id: baseline ? 1 : 3,
            per_s: 0.5,
            good: 30,
            cohort: 36,
            unfinished: 1,
            failed: 1,
            refused: 0,
            misses: { ...MISSES, ttft: 3, after_drain: 1 },
            itl_not_applicable: 2,
            slo_only: false,
          },
        ],
      },
    },
    goodput_total: { n: 2, mean: 0.5, sd: 0.05, ci_low: 0.05, ci_high: 0.95 },
    unpaired: [],
    corpus_mismatches: [],
    operating_point: { offered: { kind: 'rate', per_s: 2 }, admission_limit: 64, client_concurrency: null },
    other_points: [],
    goodput_comparable: baseline
      ? null
      : { comparable: true, point: { offered: { kind: 'rate', per_s: 2 }, admission_limit: 64, client_concurrency: null }, reason: null },
    envelope: [],
    contracts: [],
    paired: baseline
      ? []
      : // As `study_results` sends them, in reading order: overall, segments (protected first), marginal strata.
        [
          row('overall', { n: 120 }),
          row('de-long', { protected: true, margin: 0.03, mcnemar_p_holm: 0.8, verdict: 'inferior', ci_low: -0.3, ci_high: -0.05 }),
          row('numeric', { protected: false, verdict: 'non_inferior', ci_low: -0.01, ci_high: 0.03, delta: 0.01 }),
          row('language=en'),
          row('language=de'),
          row('length_class=long'),
          row('answer_kind=absent', { n: 0, delta: null, ci_low: null, ci_high: null }),
        ],
    floors: [{ segment: 'de-long', protected: true, floor: 0.9, n: 10, accepted: 8, rate: 0.8, passes: false }],
    capacity: {
      engine_kv_tokens: baseline ? 100_000 : 200_000,
      engine_kv_mib: null,
      // Synthetic figures in the shape of the recorded SmolLM2 f16 start; C1 states none.
      device_memory: baseline
        ? {
            weights_mib: 92.1,
            kv_cache_mib: 45,
            cuda_graph_mib: null,
            recurrent_state_mib: null,
            compute_mib: 16.83,
            allocated_mib: null,
            allocated_gpus: null,
            sources: ['weights_mib: run 2, startup log line 129', 'kv_cache_mib: run 2, startup log line 149'],
            differences: [],
          }
        : null,
      metric_series: [],
      kv_usage_max: 0.42,
      waiting_max: null,
      running_max: 8,
      preemptions_delta: null,
      runs: baseline ? [2] : [],
      model_kv_tokens: baseline ? 98_304 : 196_608,
      rollback_fit: baseline
        ? null
        : {
            required_bytes: 12 * 1024 * 1024 * 1024,
            budget_bytes: 8 * 1024 * 1024 * 1024,
            fits: false,
            shortfall_bytes: 4 * 1024 * 1024 * 1024,
            max_sequences_that_fit: 21,
            caveat: 'a model estimate, not a measurement',
          },
      model_note: null,
    },
    decision: baseline
      ? {
          outcome: 'baseline',
          table_decision: 'Retain as rollback target',
          rules: ['B0 is retained as the rollback target'],
          next_experiment: [],
          quality_qualifies: null,
          goodput_qualifies: null,
          headline: 'baseline — retained as the rollback target',
          goodput_by_class: [],
          uncontrolled_findings: [],
          accepted_findings: [],
          pairs_needed: null,
        }
      : {
          outcome: 'calibrate',
          table_decision: 'Promote only if every protected segment passes',
          rules: ['protected segment `de-long`: inferior (upper bound -0.05 < −0.03)'],
          next_experiment: ['investigate scales: calibrated FP8 (C2)'],
          quality_qualifies: false,
          goodput_qualifies: null,
          headline: 'calibrate — protected segment `de-long` regressed',
          goodput_by_class: [
            {
              class: 'short',
              status: 'undecided',
              reason: 'fewer than 2 repeats on a side: goodput variation unknown',
              candidate_per_s: 0.5,
              b0_per_s: 0.25,
            },
          ],
          uncontrolled_findings: [],
          accepted_findings: [],
          pairs_needed: null,
        },
    ...patch,
  };
}

export function invalidCell(name: string): Cell {
  return cell(name, {
    test_cell: { kind: 'invalid', name, reason: 'unsupported backend' },
    valid: false,
    invalid_reasons: ['no compatibility evidence: no startup log or /metrics for this cell'],
    latency: {},
    goodput: {},
    goodput_total: { n: 0, mean: null, sd: null, ci_low: null, ci_high: null },
    paired: [],
    floors: [],
    decision: {
      outcome: 'invalid',
      table_decision: 'Mark invalid; do not manufacture a result',
      rules: ['invalid cell: compatibility evidence missing or contradicting the manifest; no score'],
      next_experiment: [],
      quality_qualifies: null,
      goodput_qualifies: null,
      headline: 'invalid — Mark invalid; do not manufacture a result',
      goodput_by_class: [],
      uncontrolled_findings: [],
      accepted_findings: [],
      pairs_needed: null,
    },
  });
}

export function analysis(patch: Partial<StudyAnalysis> = {}): StudyAnalysis {
  return {
    study_id: 7,
    study_name: 'FP8 KV demo',
    provenance: 'synthetic_demo',
    provenance_label: 'synthetic demo',
    policy_version: 2,
    policy_sha256: 'f'.repeat(64),
    policy_locked_at: '2026-03-04T10:00:00Z',
    policy_locked_by: 'Service Owner',
    policy_changed_after_results: false,
    policy_first_lock_after_results: false,
    measured_requests: 120,
    adjudicated_labels: 0,
    adjudicated: {},
    adjudicated_unblinded_labels: 0,
    adjudicated_unblinded: {},
    classes: ['short', 'long'],
    cells: [cell('B0'), cell('C1'), invalidCell('C9')],
    noise_floor: { n: 40, b: 1, c: 1, flip_rate: 0.05 },
    ...patch,
  };
}

function mark(cell: string, text: string, patch: Partial<ChartMark> = {}): ChartMark {
  return { cell, class: null, stratum: null, text, ...patch };
}

export function chart(id: string, spec: ChartSpec, patch: Partial<Chart> = {}): Chart {
  const title = patch.title ?? `Chart ${id}`;
  return {
    spec,
    id,
    title,
    choice: id,
    svg: `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="300" viewBox="0 0 640 300" role="img"><title>${title}</title><desc>Data: synthetic demo.</desc><text x="12" y="292">Data: synthetic demo</text></svg>\n`,
    width: 640,
    height: 300,
    marks: [],
    not_drawn: [],
    note: `How to read ${id}.`,
    ...patch,
  };
}

export function charts(patch: Partial<StudyCharts> = {}): StudyCharts {
  const forestRow = (stratum: string) => mark('C1', `${stratum}: Δ −2.5 pp`, { stratum });
  const segments = ['overall', 'de-long', 'numeric'];
  const marginals = ['language=en', 'language=de', 'length_class=long', 'answer_kind=absent'];
  return {
    forest: [
      {
        cell: 'C1',
        segments: chart('forest-C1', { chart: 'forest', cell: 'C1', marginals: false }, { marks: segments.map(forestRow) }),
        marginals: chart('forest-C1-marginals', { chart: 'forest', cell: 'C1', marginals: true }, {
          marks: [...segments, ...marginals].map(forestRow),
        }),
      },
    ],
    goodput: chart('goodput', { chart: 'goodput' }, {
      title: 'Useful goodput per cell and class (good requests per second)',
      marks: [mark('B0', 'B0 · short: 0.500 good/s', { class: 'short' }), mark('C1', 'C1 · short: 0.500 good/s', { class: 'short' })],
      not_drawn: [{ cell: 'C9', why: 'invalid — no score' }],
    }),
    latency: (['ttft', 'itl', 'e2e'] as const).map((metric) =>
      chart(`latency-${metric}`, { chart: 'latency', metric }, {
        choice: { ttft: 'TTFT', itl: 'ITL', e2e: 'end-to-end' }[metric],
        marks: [mark('B0', `short · B0: ${metric}`, { class: 'short' })],
      }),
    ),
    cdf: ['short', 'long'].flatMap((klass) =>
      (['ttft', 'e2e'] as const).map((metric) =>
        chart(`latency-cdf-${klass}-${metric}`, { chart: 'cdf', class: klass, metric }, {
          choice: metric === 'ttft' ? 'TTFT' : 'end-to-end',
          marks: klass === 'short' ? [mark('B0', 'B0: n = 30', { class: klass })] : [],
          not_drawn: klass === 'short' ? [] : [{ cell: 'B0', why: 'no distribution' }],
        }),
      ),
    ),
    capacity: (['engine_kv_tokens', 'running_max'] as const).map((axis) =>
      chart(`capacity-${axis}`, { chart: 'capacity', axis }, {
        choice: axis === 'engine_kv_tokens' ? 'engine KV capacity (tokens)' : 'running requests, max',
        marks: [mark('B0', 'B0: 100,000'), mark('C1', 'C1: 200,000')],
      }),
    ),
    envelope: (
      [
        ['goodput', 'useful goodput'],
        ['good_share', 'good share'],
        ['ttft_p90', 'TTFT p90'],
        ['e2e_p90', 'end-to-end p90'],
        ['cost', 'cost per good response'],
      ] as const
    ).map(([metric, choice]) =>
      chart(`envelope-short-${metric}`, { chart: 'envelope', class: 'short', metric }, {
        choice,
        marks: [mark('B0', `B0 · short at 2.00 req/s: ${metric}`, { class: 'short' })],
      }),
    ),
    load: ['B0', 'C1'].map((cell) =>
      chart(`load-${cell.toLowerCase()}`, { chart: 'load', cell }, {
        choice: cell,
        marks: [mark(cell, `${cell} run 1: KV cache usage over 3 scrapes, highest 80.0%`)],
      }),
    ),
    ...patch,
  };
}

export function results(patch: Partial<StudyAnalysis> = {}, chartsPatch: Partial<StudyCharts> = {}): StudyResults {
  return { analysis: analysis(patch), charts: charts(chartsPatch) };
}

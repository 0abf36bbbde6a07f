// The analysis's codes and counts in words, with the tone each is shown in: verdicts, outcome tones,
// test cells, floors, gates, the noise floor, SLO misses. Every figure comes from the backend's
// `study_results`; nothing here decides a verdict, a gate or an outcome.

import type { ContractKind } from '$lib/bindings/ContractKind';
import type { GateStatus } from '$lib/bindings/GateStatus';
import type { NoiseFloor } from '$lib/bindings/NoiseFloor';
import type { EnvelopePoint } from '$lib/bindings/EnvelopePoint';
import type { OfferedLoad } from '$lib/bindings/OfferedLoad';
import type { OperatingPoint } from '$lib/bindings/OperatingPoint';
import type { UnpairedReason } from '$lib/bindings/UnpairedReason';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import type { SloMisses } from '$lib/bindings/SloMisses';
import type { SuggestedOutcome } from '$lib/bindings/SuggestedOutcome';
import type { TestCell } from '$lib/bindings/TestCell';
import { ABSENT, formatCode, formatCount, formatNumber, formatShare } from '$lib/format';

/** A verdict of a paired row in words. There is no "equivalent": an undecided row asks for more evidence. */
export function verdictLabel(verdict: PairedVerdict): string {
  return formatCode(verdict);
}

export type Tone = 'ok' | 'danger' | 'warn' | 'neutral';

export function verdictTone(verdict: PairedVerdict): Tone {
  return verdict === 'non_inferior' ? 'ok' : verdict === 'inferior' ? 'danger' : 'warn';
}

export function outcomeTone(outcome: SuggestedOutcome): Tone {
  switch (outcome) {
    case 'promote':
      return 'ok';
    case 'calibrate':
    case 'rollback':
    case 'invalid':
    case 'baseline_invalid':
    case 'uncontrolled':
      return 'danger';
    case 'collect_more_evidence':
    case 'retain':
      return 'warn';
    case 'baseline':
      return 'neutral';
  }
}

/** What a cell is in the experiment matrix, in the guide's words. */
export function testCellLabel(tc: TestCell): string {
  switch (tc.kind) {
    case 'b0':
      return 'baseline: approved precision, the rollback target';
    case 'c1':
      return 'supported FP8 KV, default scales';
    case 'c2':
      return 'supported FP8 KV, calibrated scales';
    case 'c3':
      return 'supported selective layer exclusion';
    case 'custom':
      return `named intervention: ${tc.name}`;
    case 'invalid':
      return `unsupported: ${tc.reason}`;
  }
}

/** An absolute floor check: passed, failed, or without a judged item. */
export function floorLabel(passes: boolean | null): string {
  return passes === null ? 'no evidence' : passes ? 'pass' : 'fail';
}

/** A quality or goodput gate of the decision. */
export function gateLabel(qualifies: boolean | null): string {
  return qualifies === null ? 'undecided' : qualifies ? 'qualifies' : 'does not qualify';
}

/** The goodput gate of one class, in the same words as the whole gate. */
export function classGateLabel(status: GateStatus): string {
  return gateLabel(status === 'undecided' ? null : status === 'qualifies');
}

export function classGateTone(status: GateStatus): Tone {
  return status === 'qualifies' ? 'ok' : status === 'does_not' ? 'danger' : 'warn';
}

/** A class contract's name, with the direction of its limit. */
export const CONTRACT_LABEL: Record<ContractKind, string> = {
  max_error_rate: 'error rate, at most',
  min_completion_rate: 'completion rate, at least',
};

/** What the analysis found of a contract: met, broken, or undecided without a request. */
export function contractLabel(passes: boolean | null): string {
  return passes === null ? 'undecided' : passes ? 'met' : 'broken';
}

export function contractTone(passes: boolean | null): Tone {
  return passes === null ? 'warn' : passes ? 'ok' : 'danger';
}

/** The noise floor in words, or why there is none. */
export function noiseFloorText(noise: NoiseFloor | null): string {
  if (!noise) return `${ABSENT}: B0 has no second pass over the same items`;
  return `flip rate ${formatShare(noise.flip_rate)} (n = ${formatCount(noise.n)}, b = ${formatCount(noise.b)}, c = ${formatCount(noise.c)})`;
}

/** The SLO misses that happened, by reason, e.g. ["TTFT 3", "after drain 1"]. */
export function missesList(misses: SloMisses): string[] {
  const names: [keyof SloMisses, string][] = [
    ['ttft', 'TTFT'],
    ['itl', 'ITL'],
    ['e2e', 'e2e'],
    ['after_drain', 'after drain'],
    ['not_accepted', 'not accepted'],
    ['timing_missing', 'timing missing'],
  ];
  return names.filter(([key]) => misses[key] > 0).map(([key, label]) => `${label} ${formatCount(misses[key])}`);
}

/** Why an item (or a run's requests) was left without a pair, in words. */
export const UNPAIRED_REASON_LABEL: Record<UnpairedReason, string> = {
  baseline_only: 'judged by B0 only',
  candidate_only: 'judged by the candidate only',
  prompt_differs: 'same item id, another prompt',
  prompt_unknown: 'prompt not proven (no digest)',
  no_item_id: 'no item id: never paired',
};

/** An operating point in words: the load offered and the admission limit, e.g. "2 req/s offered · admission limit 64". */
/** The load a run offered, in words. */
export function offeredLabel(o: OfferedLoad): string {
  return o.kind === 'rate'
    ? `${formatNumber(o.per_s)} req/s offered`
    : o.kind === 'trace'
      ? `arrival trace ${o.sha256.slice(0, 12)}…`
      : o.kind === 'concurrency'
        ? `closed loop × ${formatCount(o.requests)}`
        : o.kind === 'unbounded'
          ? 'all requests at once'
          : 'offered load unknown';
}

/**
 * Whether a cell's envelope says more than its goodput table: a knee, or a point that offered
 * a rate (a quality pass alone is one closed-loop point, already shown as goodput).
 */
export function showEnvelope(envelope: readonly EnvelopePoint[], knee: number | undefined): boolean {
  return knee !== undefined || envelope.some((p) => p.offered_rps !== null);
}

export function operatingPointLabel(point: OperatingPoint): string {
  const offered = offeredLabel(point.offered);
  const limit = point.admission_limit === null ? 'unknown' : formatCount(point.admission_limit);
  // The client's own in-flight cap, never the server's admission limit.
  const client = point.client_concurrency === null ? '' : ` · client cap ${formatCount(point.client_concurrency)} in flight`;
  return `${offered}${client} · admission limit ${limit}`;
}

// Presentation of the acceptance checklist and the decision: the state of a check's signature,
// readable tables from the evidence JSON each check signs, and the warning shown before a decision
// is recorded. Every digest, signature and suggestion comes from the backend; nothing here decides
// whether a signature holds or what the outcome should be.

import type { Wire } from '$lib/ipc';
import type { AuditEvent } from '$lib/bindings/AuditEvent';
import type { CellAnalysis } from '$lib/bindings/CellAnalysis';
import type { Check } from '$lib/bindings/Check';
import type { CheckStatus } from '$lib/bindings/CheckStatus';
import type { DecisionOutcome } from '$lib/bindings/DecisionOutcome';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';

export type Status = Wire<CheckStatus>;
export type Event = Wire<AuditEvent>;

/** The four checks of the guide, in its order, with what each one means. */
export const CHECKS: readonly { check: Check; number: number; title: string; meaning: string[] }[] = [
  {
    check: 'compatibility',
    number: 1,
    title: 'Compatibility',
    meaning: [
      'The pinned image loads the intended model, attention backend, KV dtype, scales and layer exceptions: the effective backend, KV dtype, scales and skipped layers match the manifest.',
      'The effective configuration and the startup evidence are archived (listed below with their sha256).',
      'No silent fallback and no unknown scale provenance is acceptable: a cell without evidence is invalid.',
    ],
  },
  {
    check: 'quality',
    number: 2,
    title: 'Quality',
    meaning: [
      'Absolute quality floors and allowable paired regressions per protected segment, as locked in the acceptance policy before results were visible.',
      'Every protected language, long-context and numeric segment must pass. Where the sample cannot tell an acceptable change apart, collect more evidence rather than calling the result equivalent.',
    ],
  },
  {
    check: 'operations',
    number: 3,
    title: 'Operations',
    meaning: [
      'The agreed TTFT, streaming, error and completion contracts hold at the target offered load.',
      'The cost per accepted, SLO-compliant response is recorded, retries included: useful goodput per class, with rejected, failed and unfinished requests kept in offered demand.',
    ],
  },
  {
    check: 'recovery',
    number: 4,
    title: 'Recovery',
    meaning: [
      "Rollback fit: B0's larger KV representation may not hold the candidate's admission limit; reduce admission before restoring it where necessary.",
      'A bounded canary route with its breach rule sends new traffic back to B0; existing streams drain only until the declared drain deadline.',
      'Restart, cache loss and warm-up are rehearsed; the approved manifest is never reconstructed during an incident.',
    ],
  },
];

export function checkTitle(check: Check): string {
  return CHECKS.find((c) => c.check === check)?.title ?? check;
}

export type CheckState = 'unsigned' | 'signed' | 'void';

/** Unsigned without a signature; signed while the backend says it holds; void otherwise. */
export function checkState(status: Pick<Status, 'signed' | 'valid'>): CheckState {
  if (!status.signed) return 'unsigned';
  return status.valid ? 'signed' : 'void';
}

export const STATE_LABEL: Record<CheckState, string> = {
  unsigned: 'not signed',
  signed: 'signed',
  void: 'VOID — evidence changed after signing',
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function bool(v: unknown): boolean | null {
  return typeof v === 'boolean' ? v : null;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

function objects(v: unknown): Record<string, unknown>[] | null {
  return Array.isArray(v) && v.every(isObject) ? v : null;
}

/** The evidence digest a signature was made over, when it records one. */
export function signedDigest(event: Pick<Event, 'payload'> | null): string | null {
  return event && isObject(event.payload) ? str(event.payload['evidence_sha256']) : null;
}

/** The evidence as it was hashed, indented, for the raw view. */
export function rawJson(evidence: unknown): string {
  return JSON.stringify(evidence, null, 2) ?? 'null';
}

// ---- compatibility ----

export type CompatCell = { cell: string; manifestSha256: string | null; valid: boolean | null; reasons: string[] };
export type EvidenceFile = { run: number | null; cell: string | null; kind: string | null; sha256: string | null };
export type CompatibilityTables = { cells: CompatCell[]; files: EvidenceFile[] };

/** Cells with their validity and reasons, and the archived evidence files; null for another shape. */
export function compatibilityTables(evidence: unknown): CompatibilityTables | null {
  if (!isObject(evidence)) return null;
  const cells = objects(evidence['cells']);
  const files = objects(evidence['evidence']);
  if (!cells || !files) return null;
  return {
    cells: cells.map((c) => ({
      cell: str(c['cell']) ?? '?',
      manifestSha256: str(c['manifest_sha256']),
      valid: bool(c['valid']),
      reasons: strings(c['invalid_reasons']),
    })),
    files: files.map((f) => ({ run: num(f['run']), cell: str(f['cell']), kind: str(f['kind']), sha256: str(f['sha256']) })),
  };
}

// ---- quality ----

export type QualityRow = {
  stratum: string;
  n: number | null;
  b: number | null;
  c: number | null;
  delta: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  margin: number | null;
  verdict: PairedVerdict | null;
};
export type QualityFloor = {
  segment: string;
  protected: boolean;
  floor: number | null;
  n: number | null;
  accepted: number | null;
  rate: number | null;
  passes: boolean | null;
};
export type QualityCell = { cell: string; paired: QualityRow[]; floors: QualityFloor[] };
export type QualityTables = { policySha256: string | null; cells: QualityCell[]; adjudications: number };

const VERDICTS: readonly PairedVerdict[] = ['non_inferior', 'inferior', 'collect_more_evidence'];

function verdict(v: unknown): PairedVerdict | null {
  return typeof v === 'string' && (VERDICTS as readonly string[]).includes(v) ? (v as PairedVerdict) : null;
}

/** Per cell the protected paired rows and the floors; null for another shape. */
export function qualityTables(evidence: unknown): QualityTables | null {
  if (!isObject(evidence)) return null;
  const cells = objects(evidence['cells']);
  if (!cells) return null;
  return {
    policySha256: str(evidence['policy_sha256']),
    adjudications: Array.isArray(evidence['adjudications']) ? evidence['adjudications'].length : 0,
    cells: cells.map((c) => ({
      cell: str(c['cell']) ?? '?',
      paired: (objects(c['paired']) ?? [])
        .filter((r) => r['protected'] === true)
        .map((r) => ({
          stratum: str(r['stratum']) ?? '?',
          n: num(r['n']),
          b: num(r['b']),
          c: num(r['c']),
          delta: num(r['delta']),
          ciLow: num(r['ci_low']),
          ciHigh: num(r['ci_high']),
          margin: num(r['margin']),
          verdict: verdict(r['verdict']),
        })),
      floors: (objects(c['floors']) ?? []).map((f) => ({
        segment: str(f['segment']) ?? '?',
        protected: f['protected'] === true,
        floor: num(f['floor']),
        n: num(f['n']),
        accepted: num(f['accepted']),
        rate: num(f['rate']),
        passes: bool(f['passes']),
      })),
    })),
  };
}

// ---- operations ----

export type Pcts = { p50: number | null; p90: number | null; p99: number | null };
export type OperationsClass = {
  klass: string;
  count: number | null;
  ttft: Pcts | null;
  itl: Pcts | null;
  e2e: Pcts | null;
  perS: number | null;
  good: number | null;
  cohort: number | null;
  sloOnly: boolean;
};
export type OperationsCell = { cell: string; requests: [string, number | null][]; classes: OperationsClass[] };
export type OperationsTables = { policySha256: string | null; cells: OperationsCell[] };

/** The request counts in the order they are read: offered first, the outcomes, then validation. */
export const REQUEST_KEYS = ['offered', 'completed', 'failed', 'rejected', 'timeout', 'unfinished', 'validated', 'accepted'] as const;

function pcts(v: unknown): Pcts | null {
  if (!isObject(v)) return null;
  return { p50: num(v['p50']), p90: num(v['p90']), p99: num(v['p99']) };
}

/** Per cell the request counts and, per class, latency percentiles and useful goodput; null for another shape. */
export function operationsTables(evidence: unknown): OperationsTables | null {
  if (!isObject(evidence)) return null;
  const cells = objects(evidence['cells']);
  if (!cells) return null;
  return {
    policySha256: str(evidence['policy_sha256']),
    cells: cells.map((c) => {
      const requests = isObject(c['requests']) ? c['requests'] : {};
      const latency = isObject(c['latency']) ? c['latency'] : {};
      const goodput = isObject(c['goodput']) ? c['goodput'] : {};
      const names = [...Object.keys(latency), ...Object.keys(goodput).filter((k) => !(k in latency))];
      return {
        cell: str(c['cell']) ?? '?',
        requests: REQUEST_KEYS.map((k) => [k, num(requests[k])] as [string, number | null]),
        classes: names.map((klass) => {
          const l = isObject(latency[klass]) ? latency[klass] : null;
          const g = isObject(goodput[klass]) ? goodput[klass] : null;
          return {
            klass,
            count: l ? num(l['count']) : null,
            ttft: l ? pcts(l['ttft_ms']) : null,
            itl: l ? pcts(l['itl_ms']) : null,
            e2e: l ? pcts(l['e2e_ms']) : null,
            perS: g ? num(g['per_s']) : null,
            good: g ? num(g['good']) : null,
            cohort: g ? num(g['cohort']) : null,
            sloOnly: g?.['slo_only'] === true,
          };
        }),
      };
    }),
  };
}

// ---- recovery ----

export type RollbackFitRow = {
  cell: string;
  fits: boolean | null;
  requiredBytes: number | null;
  budgetBytes: number | null;
  shortfallBytes: number | null;
  maxSequences: number | null;
  caveat: string | null;
  modelNote: string | null;
};
export type RecoveryTables = { drainS: number | null; cells: RollbackFitRow[] };

/** The drain deadline and, per cell, whether B0's representation holds its admission limit; null for another shape. */
export function recoveryTables(evidence: unknown): RecoveryTables | null {
  if (!isObject(evidence)) return null;
  const cells = objects(evidence['cells']);
  if (!cells) return null;
  return {
    drainS: num(evidence['drain_s']),
    cells: cells.map((c) => {
      const fit = isObject(c['rollback_fit']) ? c['rollback_fit'] : null;
      return {
        cell: str(c['cell']) ?? '?',
        fits: fit ? bool(fit['fits']) : null,
        requiredBytes: fit ? num(fit['required_bytes']) : null,
        budgetBytes: fit ? num(fit['budget_bytes']) : null,
        shortfallBytes: fit ? num(fit['shortfall_bytes']) : null,
        maxSequences: fit ? num(fit['max_sequences_that_fit']) : null,
        caveat: fit ? str(fit['caveat']) : null,
        modelNote: str(c['model_note']),
      };
    }),
  };
}

/** Bytes in binary units ("12.0 GiB"); "absent" when missing. */
export function formatBytes(v: number | null): string {
  if (v === null) return 'absent';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let x = v;
  let u = 0;
  while (Math.abs(x) >= 1024 && u < units.length - 1) {
    x /= 1024;
    u += 1;
  }
  return u === 0 ? `${x} B` : `${x.toFixed(1)} ${units[u]}`;
}

// ---- decision ----

export const OUTCOMES: readonly { outcome: DecisionOutcome; label: string; hint: string }[] = [
  { outcome: 'retain', label: 'Retain (keep B0)', hint: 'quality holds but goodput does not improve: keep the simpler baseline' },
  { outcome: 'calibrate', label: 'Calibrate', hint: 'try the next experiment: scales, backend, supported layer exclusion (C2/C3)' },
  { outcome: 'rollback', label: 'Roll back', hint: 'return to B0 and keep it as the serving configuration' },
];

export const DECISION_LABEL: Record<DecisionOutcome, string> = {
  retain: 'retain (keep B0)',
  calibrate: 'calibrate',
  rollback: 'roll back',
};

/** Every cell the decision is about: all but the baseline. */
export function decisionCandidates(cells: readonly Wire<CellAnalysis>[]): Wire<CellAnalysis>[] {
  return cells.filter((c) => c.cell !== 'B0' && c.test_cell.kind !== 'b0');
}

/**
 * The warning shown before a decision is recorded when not all four checks are signed over the
 * evidence as it stands; null when they are. It warns, it does not block.
 */
export function decisionWarning(checks: readonly Pick<Status, 'check' | 'signed' | 'valid'>[]): string | null {
  const unsigned: string[] = [];
  const voided: string[] = [];
  for (const { check } of CHECKS) {
    const status = checks.find((s) => s.check === check);
    const state = status ? checkState(status) : 'unsigned';
    if (state === 'unsigned') unsigned.push(checkTitle(check).toLowerCase());
    else if (state === 'void') voided.push(checkTitle(check).toLowerCase());
  }
  if (unsigned.length === 0 && voided.length === 0) return null;
  const parts: string[] = [];
  if (unsigned.length > 0) parts.push(`not signed: ${unsigned.join(', ')}`);
  if (voided.length > 0) parts.push(`void (evidence changed after signing): ${voided.join(', ')}`);
  return `Not all four checks are signed over the current evidence (${parts.join('; ')}). The decision can still be recorded; the state of every check is recorded with it.`;
}

export type RecordedDecision = {
  seq: number;
  candidate: string;
  actor: string;
  at: string;
  outcome: string | null;
  suggested: string | null;
  rationale: string;
};

/** The decisions recorded in the audit chain, as rows (oldest first, as the backend lists them). */
export function recordedDecisions(events: readonly Event[]): RecordedDecision[] {
  return events.map((e) => {
    const p = isObject(e.payload) ? e.payload : {};
    return {
      seq: e.seq,
      candidate: e.subject,
      actor: e.actor,
      at: e.at,
      outcome: str(p['outcome']),
      suggested: str(p['suggested']),
      rationale: str(p['rationale']) ?? '',
    };
  });
}

/** A recorded outcome in words; an unknown value verbatim. */
export function decisionLabel(outcome: string | null): string {
  if (outcome === null) return 'absent';
  return outcome in DECISION_LABEL ? DECISION_LABEL[outcome as DecisionOutcome] : outcome;
}

// Checklists as the backend sends them (`checklist`), for the Sign-off tests: the typed evidence
// of each check, signatures and decisions as audit events.

import type { AuditEvent } from '$lib/bindings/AuditEvent';
import type { Check } from '$lib/bindings/Check';
import type { CheckStatus } from '$lib/bindings/CheckStatus';
import type { Checklist } from '$lib/bindings/Checklist';
import type { CompatibilityEvidence } from '$lib/bindings/CompatibilityEvidence';
import type { OperationsEvidence } from '$lib/bindings/OperationsEvidence';
import type { QualityEvidence } from '$lib/bindings/QualityEvidence';
import type { RecordedDecision } from '$lib/bindings/RecordedDecision';
import type { RecoveryEvidence } from '$lib/bindings/RecoveryEvidence';
import type { RecoveryFinding } from '$lib/bindings/RecoveryFinding';
import type { RecoveryPlan } from '$lib/bindings/RecoveryPlan';
import type { PairedRow } from '$lib/bindings/PairedRow';

const SHA = (c: string) => c.repeat(64);

/** A recorded recovery plan: warm-up failed, no admission to reduce to, drain 600 s. */
export const PLAN: RecoveryPlan = {
  canary: { route: 'chat-short/eu-1', share_percent: 5 },
  breach_rule: 'TTFT p99 above the class SLO for 5 minutes: new traffic goes back to B0',
  drain_deadline_s: 600,
  rehearsal: { date: '2026-11-30', restart: 'passed', cache_loss: 'passed', warm_up: 'failed', notes: 'warm-up took 9 min' },
};

const percentiles = (p50: number | null, p90: number | null, p99: number | null, count: number) => ({ p50, p90, p99, count });

function paired(stratum: string, protectedRow: boolean, patch: Partial<PairedRow>): PairedRow {
  return {
    stratum,
    kind: protectedRow ? 'segment' : 'overall',
    protected: protectedRow,
    n: 0,
    b: 0,
    c: 0,
    delta: null,
    mcnemar_p: 1,
    mcnemar_p_holm: null,
    ci_low: null,
    ci_high: null,
    level: 0.9,
    alpha: 0.05,
    margin: 0.02,
    verdict: 'collect_more_evidence',
    ...patch,
  };
}

export const COMPATIBILITY: CompatibilityEvidence = {
  cells: [
    { cell: 'B0', manifest_sha256: SHA('0'), valid: true, invalid_reasons: [] },
    { cell: 'C1', manifest_sha256: SHA('1'), valid: true, invalid_reasons: [] },
    {
      cell: 'C9',
      manifest_sha256: SHA('9'),
      valid: false,
      invalid_reasons: ['no compatibility evidence: no startup log or /metrics for this cell'],
    },
  ],
  evidence: [
    { run: 1, cell: 'B0', kind: 'startup_log', sha256: SHA('a') },
    { run: 3, cell: 'C1', kind: 'metrics', sha256: SHA('b') },
  ],
};

export const QUALITY: QualityEvidence = {
  policy_sha256: SHA('f'),
  cells: [
    { cell: 'B0', manifest_sha256: SHA('0'), paired: [], floors: [] },
    {
      cell: 'C1',
      manifest_sha256: SHA('1'),
      paired: [
        paired('overall', false, { n: 120, b: 4, c: 2, delta: -0.017, ci_low: -0.05, ci_high: 0.02 }),
        paired('de-long', true, { n: 40, b: 6, c: 1, delta: -0.125, ci_low: -0.3, ci_high: -0.05, margin: 0.03, verdict: 'inferior' }),
      ],
      floors: [{ segment: 'de-long', protected: true, floor: 0.9, n: 10, accepted: 8, rate: 0.8, passes: false }],
    },
  ],
  noise_floor: null,
  adjudications: [{ pair: 'p1', label: 'candidate_regression', event: 1 }],
};

export const OPERATIONS: OperationsEvidence = {
  policy_sha256: SHA('f'),
  cells: [
    {
      cell: 'C1',
      manifest_sha256: SHA('1'),
      requests: { offered: 40, completed: 38, failed: 1, rejected: 0, timeout: 1, unfinished: 0, validated: 39, accepted: 36 },
      latency: {
        short: {
          ttft_ms: percentiles(120.5, 180, 250, 30),
          itl_ms: percentiles(20, 25, null, 28),
          e2e_ms: percentiles(900, 1400, 2100, 30),
          count: 30,
        },
      },
      goodput: {
        short: { per_s: 0.5, good: 30, cohort: 36, slo_only: false },
        long: { per_s: null, good: 0, cohort: 3, slo_only: true },
      },
    },
  ],
};

export const FINDINGS: RecoveryFinding[] = [
  { kind: 'rehearsal_step_failed', text: 'rehearsal step warm_up failed on 2026-11-30' },
  { kind: 'drain_differs', text: "the plan drains streams for 600 s, the locked policy's goodput drain is 30 s" },
  {
    kind: 'rollback_does_not_fit',
    text: "rollback from C1 does not fit B0's cache at its admission, and the plan names no admission to reduce to before restoring it",
  },
];

export const RECOVERY: RecoveryEvidence = {
  drain_s: 30,
  plan: {
    version: 2,
    sha256: SHA('5'),
    recorded_at: '2026-12-01T08:00:00Z',
    recorded_by: 'Owner',
    plan: PLAN,
  },
  findings: FINDINGS.map((f) => f.text),
  cells: [
    { cell: 'B0', rollback_fit: null, model_note: null },
    {
      cell: 'C1',
      rollback_fit: {
        required_bytes: 12 * 1024 ** 3,
        budget_bytes: 8 * 1024 ** 3,
        fits: false,
        shortfall_bytes: 4 * 1024 ** 3,
        max_sequences_that_fit: 21,
        caveat: 'a model estimate, not a measurement',
      },
      model_note: null,
    },
  ],
};

export function event(seq: number, patch: Partial<AuditEvent> = {}): AuditEvent {
  return {
    seq,
    at: '2026-03-05T09:00:00Z',
    actor: 'Architect',
    kind: 'signoff',
    subject: 'compatibility',
    payload: {},
    previous: null,
    prev_hash: SHA('c'),
    hash: SHA('d'),
    ...patch,
  };
}

type Common = Omit<CheckStatus, 'check' | 'evidence' | 'findings'>;

function withEvidence(check: Check, common: Common): CheckStatus {
  switch (check) {
    case 'compatibility':
      return { ...common, check, evidence: COMPATIBILITY };
    case 'quality':
      return { ...common, check, evidence: QUALITY };
    case 'operations':
      return { ...common, check, evidence: OPERATIONS };
    case 'recovery':
      return { ...common, check, evidence: RECOVERY, findings: FINDINGS };
  }
}

export function status(check: Check, patch: Partial<Common> = {}): CheckStatus {
  return withEvidence(check, {
    evidence_sha256: `${check}-${'e'.repeat(64)}`.slice(0, 64),
    signed: null,
    signed_sha256: null,
    state: 'unsigned',
    valid: false,
    void_reason: null,
    blocker: null,
    failures: [],
    signed_reason: null,
    ...patch,
  });
}

/** A signature over the evidence digest the status shows: it holds. */
export function signedStatus(check: Check, seq: number): CheckStatus {
  const digest = status(check).evidence_sha256;
  return status(check, {
    signed: event(seq, { subject: check, payload: { evidence_sha256: digest } }),
    signed_sha256: digest,
    state: 'signed',
    valid: true,
  });
}

/** A signature over an older digest: void. */
export function voidStatus(check: Check, seq: number): CheckStatus {
  const now = status(check).evidence_sha256;
  const old = '7'.repeat(64);
  return status(check, {
    signed: event(seq, { subject: check, payload: { evidence_sha256: old } }),
    signed_sha256: old,
    state: 'void',
    valid: false,
    void_reason: `signed by Architect at 2026-03-05T09:00:00Z over evidence ${old}; the evidence is now ${now}: the signature is void`,
  });
}

export function checklist(patch: Partial<Checklist> = {}): Checklist {
  return {
    study_id: 7,
    checks: [status('compatibility'), status('quality'), status('operations'), status('recovery')],
    candidates: ['C1', 'C9'],
    decisions: [],
    ...patch,
  };
}

/** The recovery check without a recorded plan: the backend says it cannot be signed. */
export function recoveryWithoutPlan(): CheckStatus {
  const text =
    'no recovery plan recorded: canary route, breach rule, drain deadline and a dated rehearsal are required before this check can be signed';
  return {
    ...status('recovery', { evidence_sha256: '3'.repeat(64), blocker: 'no_recovery_plan' }),
    check: 'recovery',
    evidence: { ...RECOVERY, plan: null, findings: [text] },
    findings: [{ kind: 'no_plan', text }],
  };
}

/** A decision as the checklist lists it: its audit event and what it records. */
export function decision(
  seq: number,
  candidate: string,
  actor: string,
  outcome: 'retain' | 'calibrate' | 'rollback' | 'promote',
  rationale: string,
  overridden = false,
): RecordedDecision {
  return {
    event: event(seq, { kind: 'decision', subject: candidate, actor }),
    record: {
      outcome,
      rationale,
      suggested: 'calibrate',
      rules: [],
      next_experiment: [],
      policy_sha256: SHA('f'),
      checks: [],
      ...(overridden ? { overridden: true, overridden_checks: [{ check: 'quality', state: 'unsigned' }] } : {}),
    },
  };
}

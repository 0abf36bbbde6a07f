// Checklists as the backend sends them (`checklist`), for the Sign-off tests: the evidence JSON of
// each check in the shapes kvgate-app builds, signatures and decisions as audit events.

import type { Check } from '$lib/bindings/Check';
import type { Checklist } from '$lib/bindings/Checklist';
import type { RecoveryPlan } from '$lib/bindings/RecoveryPlan';
import type { Event, Status } from './signoff-view';

const SHA = (c: string) => c.repeat(64);

/** A recorded recovery plan: warm-up failed, no admission to reduce to, drain 600 s. */
export const PLAN: RecoveryPlan = {
  canary: { route: 'chat-short/eu-1', share_percent: 5 },
  breach_rule: 'TTFT p99 above the class SLO for 5 minutes: new traffic goes back to B0',
  drain_deadline_s: 600,
  rehearsal: { date: '2026-11-30', restart: 'passed', cache_loss: 'passed', warm_up: 'failed', notes: 'warm-up took 9 min' },
};

export const EVIDENCE: Record<Check, unknown> = {
  compatibility: {
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
  },
  quality: {
    policy_sha256: SHA('f'),
    cells: [
      { cell: 'B0', manifest_sha256: SHA('0'), paired: [], floors: [] },
      {
        cell: 'C1',
        manifest_sha256: SHA('1'),
        paired: [
          { stratum: 'overall', kind: 'overall', protected: false, n: 120, b: 4, c: 2, delta: -0.017, ci_low: -0.05, ci_high: 0.02, margin: 0.02, verdict: 'collect_more_evidence' },
          { stratum: 'de-long', kind: 'segment', protected: true, n: 40, b: 6, c: 1, delta: -0.125, ci_low: -0.3, ci_high: -0.05, margin: 0.03, verdict: 'inferior' },
        ],
        floors: [{ segment: 'de-long', protected: true, floor: 0.9, n: 10, accepted: 8, rate: 0.8, passes: false }],
      },
    ],
    noise_floor: null,
    adjudications: [{ pair: 'p1', label: 'candidate_worse', event: 1 }],
  },
  operations: {
    policy_sha256: SHA('f'),
    cells: [
      {
        cell: 'C1',
        manifest_sha256: SHA('1'),
        requests: { offered: 40, completed: 38, failed: 1, rejected: 0, timeout: 1, unfinished: 0, validated: 39, accepted: 36 },
        latency: {
          short: {
            ttft_ms: { p50: 120.5, p90: 180, p99: 250, count: 30 },
            itl_ms: { p50: 20, p90: 25, p99: null, count: 28 },
            e2e_ms: { p50: 900, p90: 1400, p99: 2100, count: 30 },
            count: 30,
          },
        },
        goodput: { short: { per_s: 0.5, good: 30, cohort: 36, slo_only: false } },
      },
    ],
  },
  recovery: {
    drain_s: 30,
    plan: {
      version: 2,
      sha256: SHA('5'),
      recorded_at: '2026-12-01T08:00:00Z',
      recorded_by: 'Owner',
      plan: PLAN,
    },
    findings: [
      'rehearsal step warm_up failed on 2026-11-30',
      "the plan drains streams for 600 s, the locked policy's goodput drain is 30 s",
      "rollback from C1 does not fit B0's cache at its admission, and the plan names no admission to reduce to before restoring it",
    ],
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
  },
};

export function event(seq: number, patch: Partial<Event> = {}): Event {
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

export function status(check: Check, patch: Partial<Status> = {}): Status {
  return {
    check,
    evidence_sha256: `${check}-${'e'.repeat(64)}`.slice(0, 64),
    evidence: EVIDENCE[check],
    signed: null,
    valid: false,
    void_reason: null,
    ...patch,
  };
}

/** A signature over the evidence digest the status shows: it holds. */
export function signedStatus(check: Check, seq: number): Status {
  const s = status(check);
  return { ...s, signed: event(seq, { subject: check, payload: { evidence_sha256: s.evidence_sha256 } }), valid: true };
}

/** A signature over an older digest: void. */
export function voidStatus(check: Check, seq: number): Status {
  const s = status(check);
  const old = '7'.repeat(64);
  return {
    ...s,
    signed: event(seq, { subject: check, payload: { evidence_sha256: old } }),
    valid: false,
    void_reason: `signed by Architect at 2026-03-05T09:00:00Z over evidence ${old}; the evidence is now ${s.evidence_sha256}: the signature is void`,
  };
}

export function checklist(patch: Partial<Checklist> = {}): Checklist {
  return {
    study_id: 7,
    checks: [status('compatibility'), status('quality'), status('operations'), status('recovery')],
    decisions: [],
    ...patch,
  };
}

/** The recovery evidence before any plan is recorded. */
export function recoveryEvidenceWithoutPlan(): unknown {
  const e = EVIDENCE.recovery as Record<string, unknown>;
  return {
    ...e,
    plan: null,
    findings: ['no recovery plan recorded: canary route, breach rule, drain deadline and a dated rehearsal are required before this check can be signed'],
  };
}

/** The recovery check without a recorded plan: it cannot be signed. */
export function recoveryWithoutPlan(patch: Partial<Status> = {}): Status {
  return status('recovery', { evidence: recoveryEvidenceWithoutPlan(), evidence_sha256: '3'.repeat(64), ...patch });
}

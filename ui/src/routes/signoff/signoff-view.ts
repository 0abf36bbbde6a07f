// Words and layout of the acceptance checklist and the decision: what each check means, how a
// signature's state and an outcome read, the recovery plan form's fields, and the warning shown
// before a decision is recorded. Every digest, state, finding, problem and suggestion comes from
// the backend; nothing here decides whether a signature holds, what a plan lacks or what the
// outcome should be.

import type { Check } from '$lib/bindings/Check';
import type { CheckStatus } from '$lib/bindings/CheckStatus';
import type { DecisionOutcome } from '$lib/bindings/DecisionOutcome';
import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import type { RecoveryPlan } from '$lib/bindings/RecoveryPlan';
import type { RehearsalOutcome } from '$lib/bindings/RehearsalOutcome';
import type { RequestCountsEvidence } from '$lib/bindings/RequestCountsEvidence';
import type { SignatureState } from '$lib/bindings/SignatureState';

/** The four checks of the guide, in its order, with what each one means. */
export const CHECKS: readonly { check: Check; number: number; title: string; meaning: string[] }[] = [
  {
    check: 'compatibility',
    number: 1,
    title: 'Compatibility',
    meaning: [
      "Checked against the manifest from the startup evidence: the effective KV dtype, attention backend, scales, skipped layers and, when the log states it, the KV capacity.",
      'Not checked: the image (its digest is in the manifest, never compared with what ran), the engine version and the model name (read from the startup log and archived with it, not compared with the manifest). The signer confirms those by reading the archived evidence.',
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
      'Useful goodput per class (accepted responses within the SLOs per second), with rejected, failed and unfinished requests kept in offered demand. No cost per accepted response is computed.',
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

export const STATE_LABEL: Record<SignatureState, string> = {
  unsigned: 'not signed',
  signed: 'signed',
  void: 'VOID — evidence changed after signing',
};

/** The evidence as it was hashed, indented, for the raw view. */
export function rawJson(evidence: unknown): string {
  return JSON.stringify(evidence, null, 2) ?? 'null';
}

/**
 * Check 3's request counts in the order they are read (offered first, the outcomes, then
 * validation), each with its name as shown. The signed evidence keeps the key `rejected` for
 * server refusals; "rejected" on a screen is the validator's verdict only, so it reads "refused".
 */
export const REQUEST_KEYS: readonly { key: keyof RequestCountsEvidence; label: string }[] = [
  { key: 'offered', label: 'offered' },
  { key: 'completed', label: 'completed' },
  { key: 'failed', label: 'failed' },
  { key: 'rejected', label: 'refused' },
  { key: 'timeout', label: 'timeout' },
  { key: 'unfinished', label: 'unfinished' },
  { key: 'validated', label: 'validated' },
  { key: 'accepted', label: 'accepted' },
];

export type RehearsalStep = 'restart' | 'cache_loss' | 'warm_up';

/** The rehearsal steps in the guide's order, with their names as shown. */
export const REHEARSAL_STEPS: readonly { step: RehearsalStep; label: string }[] = [
  { step: 'restart', label: 'Restart from the frozen manifest' },
  { step: 'cache_loss', label: 'Cache loss' },
  { step: 'warm_up', label: 'Warm-up to the SLOs' },
];

// ---- recovery plan form ----

/** The recovery plan as typed in the form: empty numbers are null, an unchosen outcome is ''. */
export type RecoveryForm = {
  route: string;
  share: number | null;
  breach: string;
  drain: number | null;
  /** null: rollback fits as is, the key is left out. */
  admission: number | null;
  date: string;
  restart: RehearsalOutcome | '';
  cacheLoss: RehearsalOutcome | '';
  warmUp: RehearsalOutcome | '';
  notes: string;
};

export function emptyRecoveryForm(): RecoveryForm {
  return { route: '', share: null, breach: '', drain: null, admission: null, date: '', restart: '', cacheLoss: '', warmUp: '', notes: '' };
}

/** The form filled from a recorded plan, to record a new version from it. */
export function recoveryFormFromPlan(plan: RecoveryPlan): RecoveryForm {
  return {
    route: plan.canary.route,
    share: plan.canary.share_percent,
    breach: plan.breach_rule,
    drain: plan.drain_deadline_s,
    admission: plan.admission_before_restore ?? null,
    date: plan.rehearsal.date,
    restart: plan.rehearsal.restart,
    cacheLoss: plan.rehearsal.cache_loss,
    warmUp: plan.rehearsal.warm_up,
    notes: plan.rehearsal.notes,
  };
}

/**
 * The plan JSON the form stands for, as the backend reads it. An empty admission is left out
 * (rollback fits as is); an empty number or unchosen outcome is sent as null so that the
 * backend's check names its path.
 */
export function recoveryPlanJson(form: RecoveryForm): string {
  const plan: Record<string, unknown> = {
    canary: { route: form.route, share_percent: form.share },
    breach_rule: form.breach,
    drain_deadline_s: form.drain,
  };
  if (form.admission !== null) plan['admission_before_restore'] = form.admission;
  plan['rehearsal'] = {
    date: form.date,
    restart: form.restart === '' ? null : form.restart,
    cache_loss: form.cacheLoss === '' ? null : form.cacheLoss,
    warm_up: form.warmUp === '' ? null : form.warmUp,
    notes: form.notes,
  };
  return JSON.stringify(plan, null, 2);
}

/** The JSON paths the recovery form has a field for; problems elsewhere are shown above it. */
export const RECOVERY_FIELD_PATHS = [
  'canary.route',
  'canary.share_percent',
  'breach_rule',
  'drain_deadline_s',
  'admission_before_restore',
  'rehearsal.date',
  'rehearsal.restart',
  'rehearsal.cache_loss',
  'rehearsal.warm_up',
  'rehearsal.notes',
] as const;

/** The first list, then the problems of the second on paths the first said nothing about. */
export function mergeProblems(first: readonly PolicyProblem[], second: readonly PolicyProblem[]): PolicyProblem[] {
  const seen = new Set(first.map((p) => p.path));
  return [...first, ...second.filter((p) => !seen.has(p.path))];
}

/** Problems by the field they name, and those naming no field of the form (e.g. `$`). */
export function placeRecoveryProblems(problems: readonly PolicyProblem[]): { byPath: Map<string, PolicyProblem[]>; general: PolicyProblem[] } {
  const known = new Set<string>(RECOVERY_FIELD_PATHS);
  const byPath = new Map<string, PolicyProblem[]>();
  const general: PolicyProblem[] = [];
  for (const p of problems) {
    if (known.has(p.path)) byPath.set(p.path, [...(byPath.get(p.path) ?? []), p]);
    else general.push(p);
  }
  return { byPath, general };
}

// ---- decision ----

export const OUTCOMES: readonly { outcome: DecisionOutcome; label: string; hint: string }[] = [
  { outcome: 'retain', label: 'Retain (keep B0)', hint: 'quality holds but goodput does not improve: keep the simpler baseline' },
  { outcome: 'calibrate', label: 'Calibrate', hint: 'try the next experiment: scales, backend, supported layer exclusion (C2/C3)' },
  { outcome: 'rollback', label: 'Roll back', hint: 'return to B0 and keep it as the serving configuration' },
  { outcome: 'promote', label: 'Promote', hint: 'the candidate goes to production, through the canary of the recovery plan' },
];

export const DECISION_LABEL: Record<DecisionOutcome, string> = {
  retain: 'retain (keep B0)',
  calibrate: 'calibrate',
  rollback: 'roll back',
  promote: 'promote',
};

/**
 * The warning shown before a decision is recorded when not all four checks are signed over the
 * evidence as it stands (by the states the backend gives); null when they are. The backend then
 * refuses the decision unless it is recorded as an override with a rationale.
 */
export function decisionWarning(checks: readonly Pick<CheckStatus, 'check' | 'state'>[]): string | null {
  const unsigned: string[] = [];
  const voided: string[] = [];
  for (const { check } of CHECKS) {
    const state = checks.find((s) => s.check === check)?.state ?? 'unsigned';
    if (state === 'unsigned') unsigned.push(checkTitle(check).toLowerCase());
    else if (state === 'void') voided.push(checkTitle(check).toLowerCase());
  }
  if (unsigned.length === 0 && voided.length === 0) return null;
  const parts: string[] = [];
  if (unsigned.length > 0) parts.push(`not signed: ${unsigned.join(', ')}`);
  if (voided.length > 0) parts.push(`void (evidence changed after signing): ${voided.join(', ')}`);
  return `Not all four checks are signed over the current evidence (${parts.join('; ')}). A decision is refused until they are, unless it is recorded as an override with a rationale: an audit event shown in red here and in the packet.`;
}

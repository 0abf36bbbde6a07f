// Presentation of the acceptance checklist and the decision: the state of a check's signature,
// readable tables from the evidence JSON each check signs, and the warning shown before a decision
// is recorded. Every digest, signature and suggestion comes from the backend; nothing here decides
// whether a signature holds or what the outcome should be.

import { ABSENT } from '$lib/format';
import type { AuditEvent } from '$lib/bindings/AuditEvent';
import type { CellAnalysis } from '$lib/bindings/CellAnalysis';
import type { Check } from '$lib/bindings/Check';
import type { CheckStatus } from '$lib/bindings/CheckStatus';
import type { DecisionOutcome } from '$lib/bindings/DecisionOutcome';
import type { PairedVerdict } from '$lib/bindings/PairedVerdict';
import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import type { RecoveryPlan } from '$lib/bindings/RecoveryPlan';
import type { RehearsalOutcome } from '$lib/bindings/RehearsalOutcome';

export type Status = CheckStatus;
export type Event = AuditEvent;

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
/** A recorded recovery plan as the evidence carries it; a missing or mistyped value is null. */
export type RecoveryPlanView = {
  version: number | null;
  sha256: string | null;
  recordedAt: string | null;
  recordedBy: string | null;
  route: string | null;
  sharePercent: number | null;
  breachRule: string | null;
  drainDeadlineS: number | null;
  /** null: no admission to reduce to (rollback fits as is, or not set). */
  admissionBeforeRestore: number | null;
  rehearsal: {
    date: string | null;
    steps: { step: RehearsalStep; label: string; outcome: RehearsalOutcome | null }[];
    notes: string | null;
  };
  /** The plan itself when it has the full shape, to start the next version from. */
  source: RecoveryPlan | null;
};
export type RecoveryTables = {
  drainS: number | null;
  /** null: no recovery plan recorded (the check cannot be signed). */
  plan: RecoveryPlanView | null;
  findings: string[];
  cells: RollbackFitRow[];
};

export type RehearsalStep = 'restart' | 'cache_loss' | 'warm_up';

/** The rehearsal steps in the guide's order, with their names as shown. */
export const REHEARSAL_STEPS: readonly { step: RehearsalStep; label: string }[] = [
  { step: 'restart', label: 'Restart from the frozen manifest' },
  { step: 'cache_loss', label: 'Cache loss' },
  { step: 'warm_up', label: 'Warm-up to the SLOs' },
];

function outcome(v: unknown): RehearsalOutcome | null {
  return v === 'passed' || v === 'failed' ? v : null;
}

/** The plan when every field has its type (unknown extra keys are ignored here); null otherwise. */
function asRecoveryPlan(v: unknown): RecoveryPlan | null {
  if (!isObject(v) || !isObject(v['canary']) || !isObject(v['rehearsal'])) return null;
  const c = v['canary'];
  const r = v['rehearsal'];
  const route = str(c['route']);
  const share = num(c['share_percent']);
  const breach = str(v['breach_rule']);
  const drain = num(v['drain_deadline_s']);
  const admission = v['admission_before_restore'];
  const date = str(r['date']);
  const restart = outcome(r['restart']);
  const cacheLoss = outcome(r['cache_loss']);
  const warmUp = outcome(r['warm_up']);
  const notes = str(r['notes']);
  if (route === null || share === null || breach === null || drain === null || date === null || notes === null) return null;
  if (restart === null || cacheLoss === null || warmUp === null) return null;
  if (admission !== undefined && admission !== null && num(admission) === null) return null;
  const plan: RecoveryPlan = {
    canary: { route, share_percent: share },
    breach_rule: breach,
    drain_deadline_s: drain,
    rehearsal: { date, restart, cache_loss: cacheLoss, warm_up: warmUp, notes },
  };
  if (typeof admission === 'number') plan.admission_before_restore = admission;
  return plan;
}

function recoveryPlanView(v: unknown): RecoveryPlanView | null {
  if (!isObject(v)) return null;
  const plan = isObject(v['plan']) ? v['plan'] : {};
  const canary = isObject(plan['canary']) ? plan['canary'] : {};
  const rehearsal = isObject(plan['rehearsal']) ? plan['rehearsal'] : {};
  return {
    version: num(v['version']),
    sha256: str(v['sha256']),
    recordedAt: str(v['recorded_at']),
    recordedBy: str(v['recorded_by']),
    route: str(canary['route']),
    sharePercent: num(canary['share_percent']),
    breachRule: str(plan['breach_rule']),
    drainDeadlineS: num(plan['drain_deadline_s']),
    admissionBeforeRestore: num(plan['admission_before_restore']),
    rehearsal: {
      date: str(rehearsal['date']),
      steps: REHEARSAL_STEPS.map(({ step, label }) => ({ step, label, outcome: outcome(rehearsal[step]) })),
      notes: str(rehearsal['notes']),
    },
    source: asRecoveryPlan(plan),
  };
}

/** Whether a finding reports a failed rehearsal step (shown in red). */
export function isFailedStepFinding(finding: string): boolean {
  return /^rehearsal step \S+ failed\b/.test(finding);
}

/** The drain deadline, the recorded recovery plan and the findings to weigh, and per cell whether
 * B0's representation holds its admission limit; null for another shape. */
export function recoveryTables(evidence: unknown): RecoveryTables | null {
  if (!isObject(evidence)) return null;
  const cells = objects(evidence['cells']);
  if (!cells) return null;
  return {
    drainS: num(evidence['drain_s']),
    plan: recoveryPlanView(evidence['plan']),
    findings: strings(evidence['findings']),
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

/** True when the recovery evidence says no plan is recorded: signing it would be refused. */
export function recoveryNeedsPlan(evidence: unknown): boolean {
  const t = recoveryTables(evidence);
  return t !== null && t.plan === null;
}

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

/** The most characters the backend takes in one text. */
export const MAX_RECOVERY_TEXT_CHARS = 2000;

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

/** Today's date in UTC, as the backend bounds a rehearsal date. */
export function todayUtc(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** Whether `s` is a real calendar day written YYYY-MM-DD (from 1970 on, as the backend reads it). */
export function isIsoDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1970 || mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return d <= days;
}

/**
 * The form's own problems, at the paths the backend uses; they let the form say at once what is
 * missing. The backend's `check_recovery_plan` stays the authority on what may be recorded.
 */
export function recoveryFormProblems(form: RecoveryForm, today: string): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  const text = (path: string, v: string) => {
    const n = [...v].length;
    if (v.trim() === '' || n > MAX_RECOVERY_TEXT_CHARS) {
      out.push({ path, expected: `a text of 1 to ${MAX_RECOVERY_TEXT_CHARS} characters`, found: n > MAX_RECOVERY_TEXT_CHARS ? `${n} characters` : 'nothing' });
    }
  };
  text('canary.route', form.route);
  if (form.share === null || !Number.isFinite(form.share) || form.share <= 0 || form.share > 100) {
    out.push({ path: 'canary.share_percent', expected: 'a bounded share of the route in (0, 100] percent', found: form.share === null ? 'nothing' : String(form.share) });
  }
  text('breach_rule', form.breach);
  if (form.drain === null || !Number.isFinite(form.drain) || form.drain <= 0) {
    out.push({ path: 'drain_deadline_s', expected: 'a finite number of seconds greater than 0', found: form.drain === null ? 'nothing' : String(form.drain) });
  }
  if (form.admission !== null && (!Number.isInteger(form.admission) || form.admission < 1)) {
    out.push({ path: 'admission_before_restore', expected: 'a whole number of at least 1 sequence, or empty when rollback fits as is', found: String(form.admission) });
  }
  if (!isIsoDate(form.date)) {
    out.push({ path: 'rehearsal.date', expected: 'a calendar day written YYYY-MM-DD', found: form.date === '' ? 'nothing' : JSON.stringify(form.date) });
  } else if (form.date > today) {
    out.push({ path: 'rehearsal.date', expected: `a day that has happened (today is ${today})`, found: JSON.stringify(form.date) });
  }
  const step = (path: string, v: RehearsalOutcome | '') => {
    if (v === '') out.push({ path, expected: 'passed or failed', found: 'nothing chosen' });
  };
  step('rehearsal.restart', form.restart);
  step('rehearsal.cache_loss', form.cacheLoss);
  step('rehearsal.warm_up', form.warmUp);
  const notes = [...form.notes].length;
  if (notes > MAX_RECOVERY_TEXT_CHARS) {
    out.push({ path: 'rehearsal.notes', expected: `at most ${MAX_RECOVERY_TEXT_CHARS} characters`, found: `${notes} characters` });
  }
  return out;
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

/** The form's problems first, then the backend's on paths the form said nothing about. */
export function mergeProblems(local: readonly PolicyProblem[], backend: readonly PolicyProblem[]): PolicyProblem[] {
  const seen = new Set(local.map((p) => p.path));
  return [...local, ...backend.filter((p) => !seen.has(p.path))];
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

/** The `- path: expected …, found …` lines of a refusal to record, as problems; [] when it has none. */
export function problemsFromMessage(message: string): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  for (const line of message.split('\n')) {
    const m = /^- (.+?): expected (.*), found (.*)$/.exec(line.trim());
    if (m) out.push({ path: m[1]!, expected: m[2]!, found: m[3]! });
  }
  return out;
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
export function decisionCandidates(cells: readonly CellAnalysis[]): CellAnalysis[] {
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
  if (outcome === null) return ABSENT;
  return outcome in DECISION_LABEL ? DECISION_LABEL[outcome as DecisionOutcome] : outcome;
}

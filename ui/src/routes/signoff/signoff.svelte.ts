import { analyzeStudy, checkRecoveryPlan, checklist, decide, recordRecoveryPlan, signCheck, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import type { RecordedRecoveryPlan } from '$lib/bindings/RecordedRecoveryPlan';
import type { RecoveryPlan } from '$lib/bindings/RecoveryPlan';
import type { Check } from '$lib/bindings/Check';
import type { Checklist } from '$lib/bindings/Checklist';
import type { DecisionOutcome } from '$lib/bindings/DecisionOutcome';
import type { StudyAnalysis } from '$lib/bindings/StudyAnalysis';
import type { LoadState } from '$lib/workspace.svelte';
import { emptyRecoveryForm, mergeProblems, recoveryFormFromPlan, recoveryPlanJson, type RecoveryForm } from './signoff-view';

const CHECK_DELAY_MS = 250;

const SIGNER_KEY = 'kvgate.signer';

function readSigner(): string {
  try {
    return globalThis.localStorage?.getItem(SIGNER_KEY) ?? '';
  } catch {
    return '';
  }
}

/** What is being decided for one candidate, before it is recorded. */
export type DecisionDraft = { outcome: DecisionOutcome | null; rationale: string; override: boolean };

/**
 * The Sign-off screen's state: the checklist of the open study (evidence, digests, signatures,
 * decisions) and its analysis (suggested outcomes), both replaced whole from the backend. A
 * signature is sent with the digest that was shown; a refusal because the evidence changed stays
 * on screen while the checklist is read again.
 */
export class SignoffModel {
  studyId = $state<number | null>(null);
  checklist = $state.raw<Checklist | null>(null);
  analysis = $state.raw<StudyAnalysis | null>(null);
  state = $state<LoadState>('idle');
  error = $state<AppError | null>(null);
  analysisError = $state<AppError | null>(null);
  signer = $state(readSigner());
  /** The check being signed, while its request runs. */
  signing = $state<Check | null>(null);
  signError = $state<{ check: Check; error: AppError } | null>(null);
  drafts = $state<Record<string, DecisionDraft>>({});
  /** The candidate whose decision is being recorded, while its request runs. */
  deciding = $state<string | null>(null);
  decideError = $state<{ candidate: string; error: AppError } | null>(null);
  /** The last decision recorded in this session, for the confirmation. */
  recorded = $state<{ candidate: string; seq: number } | null>(null);

  /** The recovery plan form, open while a plan (or its next version) is being recorded. */
  recoveryOpen = $state(false);
  recoveryForm = $state<RecoveryForm>(emptyRecoveryForm());
  recoveryBy = $state('');
  /** The version the form started from, or null for a first plan. */
  recoveryFrom = $state<number | null>(null);
  /** The backend's problems with `recoveryCheckedText`. */
  recoveryBackendProblems = $state.raw<PolicyProblem[]>([]);
  recoveryCheckState = $state<'idle' | 'checking' | 'checked' | 'failed'>('idle');
  recoveryCheckedText = $state<string | null>(null);
  recoveryCheckError = $state<AppError | null>(null);
  recoveryRecording = $state(false);
  recoveryError = $state<AppError | null>(null);
  /** The problems named by the last refusal to record, placed at their fields. */
  recoveryRefusedProblems = $state.raw<PolicyProblem[]>([]);
  /** The last plan version recorded in this session, for the confirmation. */
  recoveryRecorded = $state.raw<RecordedRecoveryPlan | null>(null);

  private seq = 0;
  private recoveryTimer: ReturnType<typeof setTimeout> | undefined;
  private recoveryCheckSeq = 0;

  /** What the screen calls when shown: reads the checklist and the analysis (again). */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.checklist = null;
      this.analysis = null;
      this.state = 'idle';
      this.error = null;
      this.analysisError = null;
      this.signError = null;
      this.decideError = null;
      this.recorded = null;
      this.drafts = {};
      this.closeRecovery();
      this.recoveryRecorded = null;
    }
    if (studyId !== null) void this.load();
  }

  async load(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    const seq = ++this.seq;
    this.state = 'loading';
    const [list, analysis] = await Promise.allSettled([checklist(studyId), analyzeStudy(studyId)]);
    if (seq !== this.seq) return;
    if (list.status === 'fulfilled') {
      this.checklist = list.value;
      this.error = null;
      this.state = 'ready';
    } else {
      // Never a stale checklist: a refused one hides the previous one too.
      this.checklist = null;
      this.error = toAppError(list.reason);
      this.state = 'failed';
    }
    if (analysis.status === 'fulfilled') {
      this.analysis = analysis.value;
      this.analysisError = null;
    } else {
      this.analysis = null;
      this.analysisError = toAppError(analysis.reason);
    }
  }

  /** True when the checklist is refused because the study has no locked policy. */
  get policyNotLocked(): boolean {
    return this.error?.code === 'policy_not_locked';
  }

  setSigner(name: string): void {
    this.signer = name;
    try {
      globalThis.localStorage?.setItem(SIGNER_KEY, name);
    } catch {
      // Not remembered; still used for this session.
    }
  }

  private signerMissing(): AppError | null {
    return this.signer.trim() ? null : { code: 'invalid_input', message: 'Enter your name as signer first.' };
  }

  /** The reason typed for signing a check whose evidence shows a failure, by check. */
  reasons = $state<Partial<Record<Check, string>>>({});

  /** Signs `check` over `digest`, the evidence digest shown, with the reason typed for it (the
   * backend requires one when the evidence shows a failure); the checklist is read again
   * afterwards, and also when the backend refuses because the evidence changed. */
  async sign(check: Check, digest: string): Promise<boolean> {
    const studyId = this.studyId;
    if (studyId === null || this.signing) return false;
    const missing = this.signerMissing();
    if (missing) {
      this.signError = { check, error: missing };
      return false;
    }
    this.signing = check;
    this.signError = null;
    try {
      const reason = (this.reasons[check] ?? '').trim();
      await signCheck({ study_id: studyId, check, by: this.signer.trim(), expected_sha256: digest, ...(reason ? { reason } : {}) });
      this.reasons[check] = '';
      await this.load();
      return true;
    } catch (reason) {
      const error = toAppError(reason);
      this.signError = { check, error };
      if (error.code === 'conflict') await this.load();
      return false;
    } finally {
      this.signing = null;
    }
  }

  draft(candidate: string): DecisionDraft {
    return this.drafts[candidate] ?? { outcome: null, rationale: '', override: false };
  }

  setDraft(candidate: string, patch: Partial<DecisionDraft>): void {
    this.drafts[candidate] = { ...this.draft(candidate), ...patch };
  }

  /** Records the chosen outcome for `candidate` with the rationale; reads the checklist again. */
  async decide(candidate: string): Promise<boolean> {
    const studyId = this.studyId;
    if (studyId === null || this.deciding) return false;
    const { outcome, rationale, override } = this.draft(candidate);
    const missing =
      this.signerMissing() ?? (outcome === null ? { code: 'invalid_input' as const, message: 'Choose retain, calibrate, roll back or promote first.' } : null);
    if (missing || outcome === null) {
      this.decideError = { candidate, error: missing ?? { code: 'invalid_input', message: 'Choose an outcome first.' } };
      return false;
    }
    this.deciding = candidate;
    this.decideError = null;
    this.recorded = null;
    try {
      const event = await decide({ study_id: studyId, candidate, outcome, by: this.signer.trim(), rationale, override_gate: override });
      this.recorded = { candidate, seq: event.seq };
      this.drafts[candidate] = { outcome: null, rationale: '', override: false };
      await this.load();
      return true;
    } catch (reason) {
      const error = toAppError(reason);
      this.decideError = { candidate, error };
      if (error.code === 'conflict') await this.load();
      return false;
    } finally {
      this.deciding = null;
    }
  }

  // ---- recovery plan ----

  /** The plan JSON the form stands for. */
  get recoveryText(): string {
    return recoveryPlanJson(this.recoveryForm);
  }

  /** The backend's problems with the plan as it stands, once checked. */
  private get recoveryCheckedProblems(): PolicyProblem[] {
    return this.recoveryCheckedText === this.recoveryText ? this.recoveryBackendProblems : [];
  }

  /** The backend's problems for the text as it stands, and those of the last refusal to record. */
  get recoveryProblems(): PolicyProblem[] {
    return mergeProblems(this.recoveryCheckedProblems, this.recoveryRefusedProblems);
  }

  /** Why the plan cannot be recorded yet; null when it can. A check still running does not block:
   * recording waits for it. */
  get recoveryBlocked(): string | null {
    if (this.recoveryRecording) return 'recording…';
    const n = this.recoveryCheckedProblems.length;
    if (n > 0) return `fix the ${n === 1 ? 'problem' : `${n} problems`} first`;
    if (this.recoveryCheckState === 'failed') return 'the plan could not be checked';
    if (this.recoveryBy.trim() === '') return 'enter who records it';
    return null;
  }

  /** Opens the form, filled from `current` (a new version) or empty (a first plan). */
  openRecovery(current: RecoveryPlan | null, version: number | null): void {
    this.recoveryForm = current ? recoveryFormFromPlan(current) : emptyRecoveryForm();
    this.recoveryFrom = current ? version : null;
    this.recoveryBy = this.signer.trim();
    this.recoveryError = null;
    this.recoveryRefusedProblems = [];
    this.recoveryBackendProblems = [];
    this.recoveryCheckedText = null;
    this.recoveryCheckError = null;
    this.recoveryRecorded = null;
    this.recoveryOpen = true;
    this.scheduleRecoveryCheck();
  }

  closeRecovery(): void {
    clearTimeout(this.recoveryTimer);
    this.recoveryCheckSeq++;
    this.recoveryOpen = false;
    this.recoveryCheckState = 'idle';
    this.recoveryError = null;
    this.recoveryRefusedProblems = [];
  }

  /** Changes fields of the form; the backend checks the new text shortly after. */
  editRecovery(patch: Partial<RecoveryForm>): void {
    this.recoveryForm = { ...this.recoveryForm, ...patch };
    this.recoveryRefusedProblems = [];
    this.scheduleRecoveryCheck();
  }

  private scheduleRecoveryCheck(): void {
    clearTimeout(this.recoveryTimer);
    this.recoveryCheckState = 'checking';
    this.recoveryTimer = setTimeout(() => void this.checkRecovery(), CHECK_DELAY_MS);
  }

  /** Asks the backend for every problem of the plan as it stands. */
  async checkRecovery(): Promise<void> {
    clearTimeout(this.recoveryTimer);
    const seq = ++this.recoveryCheckSeq;
    const text = this.recoveryText;
    this.recoveryCheckState = 'checking';
    try {
      const found = await checkRecoveryPlan(text);
      if (seq !== this.recoveryCheckSeq) return;
      this.recoveryBackendProblems = found;
      this.recoveryCheckedText = text;
      this.recoveryCheckState = 'checked';
      this.recoveryCheckError = null;
    } catch (reason) {
      if (seq !== this.recoveryCheckSeq) return;
      this.recoveryCheckError = toAppError(reason);
      this.recoveryCheckState = 'failed';
    }
  }

  /** Records the plan as the study's next version, then reads the checklist again (the recovery
   * evidence and its digest change) and closes the form. A refusal stays on the form. */
  async recordRecovery(): Promise<boolean> {
    const studyId = this.studyId;
    if (studyId === null || this.recoveryRecording) return false;
    if (this.recoveryCheckedText !== this.recoveryText || this.recoveryCheckState !== 'checked') await this.checkRecovery();
    const blocked = this.recoveryBlocked;
    if (blocked) {
      this.recoveryError = { code: 'invalid_input', message: `The plan cannot be recorded yet: ${blocked}.` };
      return false;
    }
    this.recoveryRecording = true;
    this.recoveryError = null;
    try {
      const recorded = await recordRecoveryPlan({ study_id: studyId, plan_json: this.recoveryText, by: this.recoveryBy.trim() });
      if (studyId !== this.studyId) return false;
      this.closeRecovery();
      this.recoveryRecorded = recorded;
      await this.load();
      return true;
    } catch (reason) {
      const error = toAppError(reason);
      this.recoveryError = error;
      this.recoveryRefusedProblems = error.problems ?? [];
      return false;
    } finally {
      this.recoveryRecording = false;
    }
  }
}

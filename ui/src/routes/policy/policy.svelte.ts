import { checkPolicy, lockPolicy, planPairs, policyStatus, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { LockedPolicy } from '$lib/bindings/LockedPolicy';
import type { PairsPlan } from '$lib/bindings/PairsPlan';
import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import type { PolicyStatus } from '$lib/bindings/PolicyStatus';
import type { LoadState } from '$lib/workspace.svelte';
import {
  formToJson,
  missingNumbers,
  newClass,
  newSegment,
  parsePolicyText,
  templateForm,
  type PolicyForm,
} from './policy-form';

/** How long typing may pause before the text is checked, ms. */
const CHECK_DELAY_MS = 250;

/** The inputs of the pairs planner as typed; `null` when a field is empty. */
export type PlannerForm = {
  margin: number | null;
  discordanceRate: number | null;
  alpha: number | null;
  power: number | null;
};

/**
 * The Policy screen's state: the study's locked versions as the backend reports them, the policy
 * being edited (form and raw JSON text, kept in step) with the backend's problems, the lock, and
 * the pairs planner.
 */
export class PolicyModel {
  studyId = $state<number | null>(null);
  status = $state.raw<PolicyStatus | null>(null);
  statusState = $state<LoadState>('idle');
  statusError = $state<AppError | null>(null);

  /** The raw JSON being edited: what is checked and locked. */
  text = $state('');
  /** The form view of `text`; `null` while the text has something the form cannot show. */
  form = $state<PolicyForm | null>(null);
  /** Why the text cannot be shown in the form. */
  formError = $state<string | null>(null);
  /** Where the edit started: `v3` (a locked version) or `template`. */
  startedFrom = $state('template');
  /** The editor is open over a locked policy ("edit as new version"); with none locked it always is. */
  editing = $state(false);

  /** The backend's problems with `text`, and the form's own (required numbers left empty). */
  problems = $state.raw<PolicyProblem[]>([]);
  checkState = $state<'idle' | 'checking' | 'checked' | 'failed'>('idle');
  checkError = $state<AppError | null>(null);
  /** The text the problems belong to. */
  checkedText = $state('');

  lockedBy = $state('');
  locking = $state(false);
  lockError = $state<AppError | null>(null);
  /** The version this window just locked, shown with its sha256. */
  justLocked = $state.raw<LockedPolicy | null>(null);

  planner = $state<PlannerForm>({ margin: 0.02, discordanceRate: 0.1, alpha: 0.05, power: 0.8 });
  plan = $state.raw<PairsPlan | null>(null);
  planError = $state<AppError | null>(null);
  planning = $state(false);

  private checkSeq = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** What the screen calls when shown: another study starts afresh, the same one is read again. */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.status = null;
      this.statusState = 'idle';
      this.statusError = null;
      this.justLocked = null;
      this.lockError = null;
      this.editing = false;
      this.text = '';
      this.form = null;
      this.problems = [];
      this.checkState = 'idle';
    }
    if (studyId !== null) void this.loadStatus();
  }

  async loadStatus(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    if (this.statusState !== 'ready') this.statusState = 'loading';
    try {
      const status = await policyStatus(studyId);
      if (studyId !== this.studyId) return;
      const first = this.status === null;
      this.status = status;
      this.statusState = 'ready';
      this.statusError = null;
      // The editor starts from the version in force, or the template; later reads keep the edit.
      if (first && this.text === '') this.startFrom(status.current);
    } catch (reason) {
      if (studyId !== this.studyId) return;
      this.statusError = toAppError(reason);
      this.statusState = 'failed';
    }
  }

  /** Replaces the edit with a locked version's policy, or the template. */
  startFrom(version: LockedPolicy | null): void {
    if (version) {
      this.setText(`${JSON.stringify(version.policy, null, 2)}\n`);
      this.startedFrom = `v${version.version}`;
    } else {
      this.setForm(templateForm());
      this.startedFrom = 'template';
    }
  }

  /** Opens the editor on a locked version's policy: what is locked next is a new version. */
  editFrom(version: LockedPolicy | null): void {
    this.startFrom(version);
    this.justLocked = null;
    this.editing = true;
  }

  /** Closes the editor over the locked policy; the edit is kept for the next "edit as new version". */
  stopEditing(): void {
    this.editing = false;
  }

  /** The raw text was edited: the form follows when it can show the text. */
  setText(text: string): void {
    this.text = text;
    const parsed = parsePolicyText(text);
    if (parsed.form) {
      this.form = parsed.form;
      this.formError = null;
    } else {
      this.formError = parsed.error;
    }
    this.scheduleCheck();
  }

  /** Replaces the form and writes its text. */
  setForm(form: PolicyForm): void {
    this.form = form;
    this.formError = null;
    this.text = formToJson(form);
    this.scheduleCheck();
  }

  /** A form field was edited in place (bound inputs): the text follows. */
  formEdited(): void {
    if (!this.form) return;
    this.text = formToJson(this.form);
    this.scheduleCheck();
  }

  addClass(): void {
    this.form?.classes.push(newClass());
    this.formEdited();
  }

  removeClass(index: number): void {
    this.form?.classes.splice(index, 1);
    this.formEdited();
  }

  addSegment(): void {
    this.form?.segments.push(newSegment());
    this.formEdited();
  }

  removeSegment(index: number): void {
    this.form?.segments.splice(index, 1);
    this.formEdited();
  }

  private scheduleCheck(): void {
    clearTimeout(this.timer);
    this.checkState = 'checking';
    this.timer = setTimeout(() => void this.check(), CHECK_DELAY_MS);
  }

  /** Asks the backend for every problem of the current text. */
  async check(): Promise<void> {
    clearTimeout(this.timer);
    const seq = ++this.checkSeq;
    const text = this.text;
    this.checkState = 'checking';
    try {
      const found = await checkPolicy(text);
      if (seq !== this.checkSeq) return;
      const local = this.form && this.formError === null ? missingNumbers(this.form) : [];
      // A null the form left is reported by the backend without a path; the form's own says where.
      this.problems = local.length > 0 ? [...local, ...found.filter((p) => p.path !== '$')] : found;
      this.checkedText = text;
      this.checkState = 'checked';
      this.checkError = null;
    } catch (reason) {
      if (seq !== this.checkSeq) return;
      this.checkError = toAppError(reason);
      this.checkState = 'failed';
    }
  }

  /** Locks the current text; rejects with an AppError for the dialog to show. */
  async lock(): Promise<LockedPolicy> {
    const studyId = this.studyId;
    if (studyId === null) throw { code: 'invalid_input', message: 'no study is open' } satisfies AppError;
    this.locking = true;
    try {
      const locked = await lockPolicy({ study_id: studyId, policy_json: this.text, locked_by: this.lockedBy.trim() });
      if (studyId === this.studyId) {
        this.justLocked = locked;
        this.lockError = null;
        this.startedFrom = `v${locked.version}`;
        this.editing = false;
        await this.loadStatus();
      }
      return locked;
    } catch (reason) {
      const error = toAppError(reason);
      this.lockError = error;
      throw error;
    } finally {
      this.locking = false;
    }
  }

  async planPairs(): Promise<void> {
    const { margin, discordanceRate, alpha, power } = this.planner;
    if (margin === null || discordanceRate === null || alpha === null || power === null) {
      this.plan = null;
      this.planError = { code: 'invalid_input', message: 'every planner field needs a number' };
      return;
    }
    this.planning = true;
    try {
      this.plan = await planPairs(margin, discordanceRate, alpha, power);
      this.planError = null;
    } catch (reason) {
      this.plan = null;
      this.planError = toAppError(reason);
    } finally {
      this.planning = false;
    }
  }
}

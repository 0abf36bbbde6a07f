import { labelPair, reviewQueue, toAppError, verifyAudit } from '$lib/ipc';
import type { ReviewLabel } from '$lib/bindings/ReviewLabel';
import type { AppError } from '$lib/bindings/AppError';
import type { AuditReport } from '$lib/bindings/AuditReport';
import type { ReviewFilter } from '$lib/bindings/ReviewFilter';
import type { ReviewQueue } from '$lib/bindings/ReviewQueue';
import type { LoadState } from '$lib/workspace.svelte';
import { orderPairs, type ReviewOrder } from './review-order';
import type { Pair } from './review-view';

const REVIEWER_KEY = 'kvgate.reviewer';

function readReviewer(): string {
  try {
    return globalThis.localStorage?.getItem(REVIEWER_KEY) ?? '';
  } catch {
    return '';
  }
}

function emptyFilter(): ReviewFilter {
  return { candidate: null, strata: {}, reason: null, agreeing_sample: 0 };
}

/** A pair revealed after labelling: which side is the candidate. */
export type Reveal = { pairId: string; candidateIsA: boolean; candidate: string };

/**
 * The Review screen's state: the blind queue of the open study and the verification of its audit
 * chain, both replaced whole from the backend. A side is named only once its pair is labelled.
 */
export class ReviewModel {
  studyId = $state<number | null>(null);
  filter = $state.raw<ReviewFilter>(emptyFilter());
  queue = $state.raw<ReviewQueue | null>(null);
  state = $state<LoadState>('idle');
  error = $state<AppError | null>(null);
  audit = $state.raw<AuditReport | null>(null);
  auditError = $state<AppError | null>(null);
  /** How the list is ordered and narrowed (the queue itself stays as the backend gave it). */
  order = $state<ReviewOrder>('blind');
  search = $state('');
  /** The pairs listed: the queue in `order`, narrowed by `search`; keys move through this list. */
  pairs = $derived<readonly Pair[]>(orderPairs(this.queue?.pairs ?? [], this.order, this.search));
  /** Index of the current pair in `pairs`. */
  index = $state(0);
  /** Pairs whose sides were revealed in this session (after a label, or on request once labelled). */
  revealed = $state.raw<ReadonlySet<string>>(new Set());
  note = $state('');
  reviewer = $state(readReviewer());
  labelling = $state(false);
  labelError = $state<AppError | null>(null);

  private seq = 0;
  private auditSeq = 0;

  get current(): Pair | null {
    return this.pairs[this.index] ?? null;
  }

  /** What the screen calls when shown: reads the queue and verifies the audit chain (again). */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.queue = null;
      this.audit = null;
      this.auditError = null;
      this.error = null;
      this.state = 'idle';
      this.index = 0;
      this.revealed = new Set();
      this.note = '';
    }
    if (studyId !== null) {
      void this.load();
      void this.verify();
    }
  }

  /** Reorders the list; the current pair stays current. */
  setOrder(order: ReviewOrder): void {
    this.keepCurrent(() => (this.order = order));
  }

  /** Narrows the list; the current pair stays current while it is listed. */
  setSearch(search: string): void {
    this.keepCurrent(() => (this.search = search));
  }

  private keepCurrent(change: () => void): void {
    const keep = this.current?.pair_id;
    change();
    const at = keep === undefined ? -1 : this.pairs.findIndex((p) => p.pair_id === keep);
    if (at >= 0) this.index = at;
    else this.select(0, true);
  }

  setFilter(filter: ReviewFilter): void {
    this.filter = filter;
    void this.load();
  }

  async load(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    const seq = ++this.seq;
    const keep = this.current?.pair_id;
    this.state = 'loading';
    try {
      const queue = await reviewQueue(studyId, this.filter);
      if (seq !== this.seq) return;
      this.queue = queue;
      const at = keep === undefined ? -1 : this.pairs.findIndex((p) => p.pair_id === keep);
      if (at >= 0) this.index = at;
      else this.select(0, true);
      this.error = null;
      this.state = 'ready';
    } catch (reason) {
      if (seq !== this.seq) return;
      this.queue = null;
      this.error = toAppError(reason);
      this.state = 'failed';
    }
  }

  async verify(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    const seq = ++this.auditSeq;
    try {
      const audit = await verifyAudit(studyId);
      if (seq !== this.auditSeq) return;
      this.audit = audit;
      this.auditError = null;
    } catch (reason) {
      if (seq !== this.auditSeq) return;
      this.auditError = toAppError(reason);
    }
  }

  /** Makes pair `index` the current one (clamped); its note is loaded into the note field. */
  select(index: number, reload = false): void {
    const n = this.pairs.length;
    const i = n === 0 ? 0 : Math.min(Math.max(0, index), n - 1);
    const changed = reload || i !== this.index;
    this.index = i;
    if (changed || this.labelError) {
      this.note = this.pairs[i]?.note ?? '';
      this.labelError = null;
    }
  }

  next(): void {
    this.select(this.index + 1);
  }

  previous(): void {
    this.select(this.index - 1);
  }

  setReviewer(name: string): void {
    this.reviewer = name;
    try {
      globalThis.localStorage?.setItem(REVIEWER_KEY, name);
    } catch {
      // Not remembered; still used for this session.
    }
  }

  /** Whether the current pair's sides may be named: it is labelled and was revealed. */
  isRevealed(pair: Pair | null): boolean {
    return !!pair && pair.candidate_is_a !== null && this.revealed.has(pair.pair_id);
  }

  /** Reveals a labelled pair; does nothing for an unlabelled one. */
  reveal(pair: Pair | null = this.current): void {
    if (!pair || pair.label === null || pair.candidate_is_a === null) return;
    this.revealed = new Set([...this.revealed, pair.pair_id]);
  }

  /** Records a label for the current pair with the note and the reviewer's name; reveals it.
   * The backend maps a side label to its adjudication, and marks a relabel as unblinded. */
  async label(label: ReviewLabel): Promise<boolean> {
    const pair = this.current;
    if (!pair || this.labelling) return false;
    const by = this.reviewer.trim();
    if (!by) {
      this.labelError = { code: 'invalid_input', message: 'Enter your name as reviewer before labelling.' };
      return false;
    }
    this.labelling = true;
    this.labelError = null;
    const note = this.note;
    try {
      const outcome = await labelPair({ pair_id: pair.pair_id, label, note, by });
      // A queue read started before this write would land with the pair as it was: dropped.
      this.seq++;
      const queue = this.queue;
      if (queue) {
        const at = queue.pairs.findIndex((p) => p.pair_id === pair.pair_id);
        if (at >= 0) {
          const before = queue.pairs[at]!;
          const updated: Pair = {
            ...before,
            label: outcome.label,
            note,
            candidate_is_a: outcome.candidate_is_a,
            unblinded: outcome.unblinded,
          };
          const pairs = queue.pairs.slice();
          pairs[at] = updated;
          this.queue = {
            ...queue,
            pairs,
            labelled: queue.labelled + (before.label === null ? 1 : 0),
          };
        }
      }
      // In an order by label the pair may have moved: it stays the current one.
      const now = this.pairs.findIndex((p) => p.pair_id === pair.pair_id);
      if (now >= 0) this.index = now;
      this.revealed = new Set([...this.revealed, pair.pair_id]);
      void this.verify();
      return true;
    } catch (reason) {
      this.labelError = toAppError(reason);
      return false;
    } finally {
      this.labelling = false;
    }
  }
}

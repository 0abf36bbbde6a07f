import { labelPair, reviewIndex, reviewPair, toAppError, verifyAudit } from '$lib/ipc';
import type { ReviewLabel } from '$lib/bindings/ReviewLabel';
import type { AppError } from '$lib/bindings/AppError';
import type { AuditReport } from '$lib/bindings/AuditReport';
import type { ReviewFilter } from '$lib/bindings/ReviewFilter';
import type { ReviewIndex } from '$lib/bindings/ReviewIndex';
import type { ReviewRow } from '$lib/bindings/ReviewRow';
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

/** Pairs read whole and kept, so that moving back and forth (and the next pair) shows at once. */
const KEPT_PAIRS = 8;

/** After a label the chain is verified again within this long, once for labels given in quick
 * succession: verifying right away ran beside the next pair's drawing. */
export const VERIFY_AFTER_LABEL_MS = 500;

/**
 * The Review screen's state: the blind list of the open study's pairs (rows without answers), the
 * current pair read whole when it becomes current (the next one read ahead), and the verification
 * of the audit chain. A side is named only once its pair is labelled.
 */
export class ReviewModel {
  studyId = $state<number | null>(null);
  filter = $state.raw<ReviewFilter>(emptyFilter());
  queue = $state.raw<ReviewIndex | null>(null);
  /** The current pair, whole, once read (its label fields come from its row). */
  detail = $state.raw<Pair | null>(null);
  detailError = $state<AppError | null>(null);
  state = $state<LoadState>('idle');
  error = $state<AppError | null>(null);
  audit = $state.raw<AuditReport | null>(null);
  auditError = $state<AppError | null>(null);
  /** How the list is ordered and narrowed (the queue itself stays as the backend gave it). */
  order = $state<ReviewOrder>('blind');
  search = $state('');
  /** The pairs listed: the queue in `order`, narrowed by `search`; keys move through this list. */
  pairs = $derived<readonly ReviewRow[]>(orderPairs(this.queue?.rows ?? [], this.order, this.search));
  /** Bumped when a row of `pairs` (and of the queue) is replaced in place: what shows rows reads
   * it. A label in the blind, unsearched list changes one row, and copying 100,000 rows (twice:
   * the queue and the list) on every label is what made labelling wait. */
  rowsVersion = $state(0);
  /** The queue's count of labelled pairs, as labels in this window add to it. */
  labelled = $state(0);
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
  private detailSeq = 0;
  private verifyTimer: ReturnType<typeof setTimeout> | null = null;
  /** Pairs read whole, most recent last (not state: `detail` is what the screen shows). */
  private kept = new Map<string, Pair>();

  /** The current row of the list. */
  get currentRow(): ReviewRow | null {
    void this.rowsVersion;
    return this.pairs[this.index] ?? null;
  }

  /** The current pair as it was read: null until it is read. A label does not change it (its
   * label fields are stale; the row's are current), so what shows its prompt and answers is
   * built once per pair. */
  get currentDetail(): Pair | null {
    const row = this.currentRow;
    const detail = this.detail;
    return row && detail && detail.pair_id === row.pair_id ? detail : null;
  }

  /** The current pair, whole: null until it is read. Its label, note and reveal are its row's,
   * which a label updates at once. */
  get current(): Pair | null {
    const row = this.currentRow;
    const detail = this.currentDetail;
    if (!row || !detail) return null;
    return {
      ...detail,
      label: row.label,
      note: row.note,
      candidate_is_a: row.candidate_is_a,
      unblinded: row.unblinded,
    };
  }

  /** What the screen calls when shown: reads the queue and verifies the audit chain (again). */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.cancelVerify();
      this.studyId = studyId;
      this.queue = null;
      this.labelled = 0;
      this.detail = null;
      this.detailError = null;
      this.kept = new Map();
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
    const keep = this.currentRow?.pair_id;
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
    const keep = this.currentRow?.pair_id;
    this.state = 'loading';
    try {
      const queue = await reviewIndex(studyId, this.filter);
      if (seq !== this.seq) return;
      this.queue = queue;
      this.labelled = queue.labelled;
      // Read again: another process may have labelled or relabelled them.
      this.kept = new Map();
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

  /** Verifies the chain again within VERIFY_AFTER_LABEL_MS: once for several labels given meanwhile. */
  private verifySoon(): void {
    if (this.verifyTimer !== null) return;
    this.verifyTimer = setTimeout(() => {
      this.verifyTimer = null;
      void this.verify();
    }, VERIFY_AFTER_LABEL_MS);
  }

  private cancelVerify(): void {
    if (this.verifyTimer !== null) clearTimeout(this.verifyTimer);
    this.verifyTimer = null;
  }

  async verify(): Promise<void> {
    this.cancelVerify();
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
    void this.loadDetail(reload);
  }

  /** Reads the current pair whole (from the kept ones when it is there), then the next one ahead. */
  async loadDetail(again = false): Promise<void> {
    const row = this.currentRow;
    if (!row) {
      this.detail = null;
      this.detailError = null;
      return;
    }
    const id = row.pair_id;
    if (again) this.kept.delete(id);
    const seq = ++this.detailSeq;
    const kept = this.kept.get(id);
    if (kept) {
      this.detail = kept;
      this.detailError = null;
    } else {
      if (this.detail?.pair_id !== id) this.detail = null;
      this.detailError = null;
      try {
        const pair = await reviewPair(id);
        this.keep(pair);
        if (seq !== this.detailSeq) return;
        this.detail = pair;
      } catch (reason) {
        if (seq !== this.detailSeq) return;
        this.detail = null;
        this.detailError = toAppError(reason);
        return;
      }
    }
    // The next pair, read ahead: labelling moves to it.
    const next = this.pairs[this.index + 1];
    if (next && !this.kept.has(next.pair_id)) {
      reviewPair(next.pair_id).then(
        (pair) => this.keep(pair),
        () => {
          /* read again when it becomes current, and its error shown then */
        },
      );
    }
  }

  private keep(pair: Pair): void {
    this.kept.delete(pair.pair_id);
    this.kept.set(pair.pair_id, pair);
    while (this.kept.size > KEPT_PAIRS) {
      const oldest = this.kept.keys().next().value;
      if (oldest === undefined) break;
      this.kept.delete(oldest);
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
  isRevealed(pair: Pick<ReviewRow, 'pair_id' | 'candidate_is_a'> | null): boolean {
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
      // In the blind order without a search the list is the queue, row for row.
      const inPlace = this.order === 'blind' && !this.search.trim() && queue?.rows[this.index]?.pair_id === pair.pair_id;
      const at = !queue ? -1 : inPlace ? this.index : queue.rows.findIndex((p) => p.pair_id === pair.pair_id);
      if (queue && at >= 0) {
        const before = queue.rows[at]!;
        const updated: ReviewRow = {
          ...before,
          label: outcome.label,
          note,
          candidate_is_a: outcome.candidate_is_a,
          unblinded: outcome.unblinded,
        };
        if (before.label === null) this.labelled += 1;
        if (inPlace) {
          // Neither order nor search reads the label here: the row is replaced where it is.
          (queue.rows as ReviewRow[])[at] = updated;
          (this.pairs as ReviewRow[])[this.index] = updated;
          this.rowsVersion += 1;
        } else {
          const rows = queue.rows.slice();
          rows[at] = updated;
          this.queue = { ...queue, rows };
        }
      }
      // In an order by label the pair may have moved: it stays the current one.
      const now = this.pairs.findIndex((p) => p.pair_id === pair.pair_id);
      if (now >= 0) this.index = now;
      this.revealed = new Set([...this.revealed, pair.pair_id]);
      this.verifySoon();
      return true;
    } catch (reason) {
      this.labelError = toAppError(reason);
      return false;
    } finally {
      this.labelling = false;
    }
  }
}

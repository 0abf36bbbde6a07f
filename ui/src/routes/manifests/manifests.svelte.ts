import {
  deleteManifestDraft,
  deriveCandidate,
  freezeManifest,
  listManifests,
  manifestVocabulary,
  saveManifestDraft,
  toAppError,
} from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { ManifestVocabulary } from '$lib/bindings/ManifestVocabulary';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { LoadState } from '$lib/workspace.svelte';

/** Selection key of a manifest typed here and not saved yet (no cell is stored under it). */
export const NEW_MANIFEST = '\u0000new';

/** Cells to compare; `run` compares at once, else the panel only takes focus. */
export type CompareRequest = { reference: string | null; candidate: string | null; run: boolean; seq: number };

/** What "New B0" starts from: the backend lists everything else that is missing. */
export const B0_SKELETON = '{\n  "cell": "B0"\n}\n';

/**
 * The manifests of one study as the backend stores them, the selection, and the editor texts
 * not saved yet (kept per manifest, so switching between manifests loses nothing).
 * Stored manifests are replaced whole with what the backend answered, never edited here.
 */
export class ManifestsModel {
  readonly studyId: number;
  manifests = $state.raw<StoredManifest[]>([]);
  listState = $state<LoadState>('idle');
  listError = $state<AppError | null>(null);
  vocabulary = $state.raw<ManifestVocabulary | null>(null);
  vocabularyError = $state<AppError | null>(null);
  selected = $state<string | null>(null);
  edits = $state.raw<Record<string, string>>({});
  /** A comparison asked for from the top of the screen: the panel picks the cells and shows itself. */
  compareRequest = $state.raw<CompareRequest | null>(null);

  constructor(studyId: number) {
    this.studyId = studyId;
  }

  /** Reads the list (again); a list already shown stays while it is read, with its edits. */
  async load(): Promise<void> {
    if (this.listState !== 'ready') this.listState = 'loading';
    const [list, vocabulary] = await Promise.allSettled([listManifests(this.studyId), manifestVocabulary()]);
    if (list.status === 'fulfilled') {
      this.manifests = list.value;
      this.listState = 'ready';
      this.listError = null;
      if (this.selected === null) this.selected = list.value[0]?.cell ?? null;
    } else {
      this.listError = toAppError(list.reason);
      this.listState = 'failed';
    }
    if (vocabulary.status === 'fulfilled') this.vocabulary = vocabulary.value;
    else this.vocabularyError = toAppError(vocabulary.reason);
  }

  get stored(): StoredManifest | null {
    return this.manifests.find((m) => m.cell === this.selected) ?? null;
  }

  get isNew(): boolean {
    return this.selected === NEW_MANIFEST;
  }

  /** The editor's text: the unsaved edit if there is one, else the stored text. */
  get text(): string {
    if (this.selected === null) return '';
    return this.edits[this.selected] ?? this.stored?.text ?? '';
  }

  get dirty(): boolean {
    return this.selected !== null && this.isDirty(this.selected);
  }

  isDirty(key: string): boolean {
    const edit = this.edits[key];
    if (edit === undefined) return false;
    return key === NEW_MANIFEST || edit !== this.manifests.find((m) => m.cell === key)?.text;
  }

  select(key: string): void {
    this.selected = key;
  }

  /** Brings the comparison panel up, with these cells chosen when given, comparing them when `run`. */
  requestCompare(reference: string | null = null, candidate: string | null = null, run = false): void {
    this.compareRequest = { reference, candidate, run, seq: (this.compareRequest?.seq ?? 0) + 1 };
  }

  edit(text: string): void {
    if (this.selected === null || this.stored?.status === 'frozen') return;
    this.edits = { ...this.edits, [this.selected]: text };
  }

  newB0(): void {
    if (this.edits[NEW_MANIFEST] === undefined) this.edits = { ...this.edits, [NEW_MANIFEST]: B0_SKELETON };
    this.selected = NEW_MANIFEST;
  }

  /** Drops the unsaved edit of the selection; a discarded new manifest leaves nothing behind. */
  discard(): void {
    const key = this.selected;
    if (key === null) return;
    this.dropEdit(key);
    if (key === NEW_MANIFEST) this.selected = this.manifests[0]?.cell ?? null;
  }

  /** Saves the editor text as a draft; rejects with an AppError. */
  async save(): Promise<StoredManifest> {
    const key = this.selected;
    if (key === null) throw { code: 'invalid_input', message: 'no manifest selected' } satisfies AppError;
    const stored = await saveManifestDraft(this.studyId, this.text);
    this.accept(stored, key);
    return stored;
  }

  /** Stores an imported file's text as a draft; rejects with an AppError. */
  async importText(text: string): Promise<StoredManifest> {
    const stored = await saveManifestDraft(this.studyId, text);
    this.accept(stored);
    return stored;
  }

  async derive(fromCell: string, cell: string): Promise<StoredManifest> {
    const stored = await deriveCandidate(this.studyId, fromCell, cell);
    this.accept(stored);
    return stored;
  }

  async freeze(cell: string, expectedDigest: string): Promise<StoredManifest> {
    const stored = await freezeManifest(this.studyId, cell, expectedDigest);
    this.accept(stored);
    return stored;
  }

  async deleteDraft(cell: string): Promise<void> {
    await deleteManifestDraft(this.studyId, cell);
    this.manifests = this.manifests.filter((m) => m.cell !== cell);
    this.dropEdit(cell);
    if (this.selected === cell) this.selected = this.manifests[0]?.cell ?? null;
  }

  /** Takes the backend's answer as the stored manifest and selects it. */
  private accept(stored: StoredManifest, editedKey?: string): void {
    const exists = this.manifests.some((m) => m.cell === stored.cell);
    this.manifests = exists
      ? this.manifests.map((m) => (m.cell === stored.cell ? stored : m))
      : [...this.manifests, stored];
    if (editedKey !== undefined) this.dropEdit(editedKey);
    this.dropEdit(stored.cell);
    this.selected = stored.cell;
  }

  private dropEdit(key: string): void {
    if (this.edits[key] === undefined) return;
    const { [key]: _dropped, ...rest } = this.edits;
    void _dropped;
    this.edits = rest;
  }
}

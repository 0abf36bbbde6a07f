import {
  cancelImport,
  commitImport,
  listImports,
  onFileDrag,
  onImportProgress,
  previewImport,
  sniffImportFormat,
  toAppError,
} from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { ImportEvent } from '$lib/bindings/ImportEvent';
import type { ImportFormat } from '$lib/bindings/ImportFormat';
import type { ImportPreview } from '$lib/bindings/ImportPreview';
import type { ImportSummary } from '$lib/bindings/ImportSummary';
import type { LoadState } from '$lib/workspace.svelte';
import { emptyMapping, fileName, importInput, type MappingForm } from './import-view';

/** Where the import form stands: nothing yet, reading a file, a reading shown, storing it, stored. */
export type ImportStage = 'idle' | 'previewing' | 'previewed' | 'committing' | 'committed';

/**
 * The import form and the study's imports, as the backend reports them. Lives as long as the app
 * window, like the runs: a long import keeps reporting while other screens are shown. The file
 * is read, hashed and recognised by the backend; this only asks and shows.
 */
export class ImportsModel {
  studyId = $state<number | null>(null);

  imports = $state.raw<ImportSummary[]>([]);
  importsState = $state<LoadState>('idle');
  importsError = $state<AppError | null>(null);

  path = $state('');
  /** The format as chosen; a sniffed guess fills it until the user picks one. */
  format = $state<ImportFormat | ''>('');
  formatPicked = $state(false);
  /** The backend's guess for `path`: `null` when nothing matched. */
  sniffed = $state.raw<{ path: string; format: ImportFormat | null } | null>(null);
  sniffError = $state<AppError | null>(null);
  cell = $state('');
  mapping = $state<MappingForm>(emptyMapping());

  stage = $state<ImportStage>('idle');
  preview = $state.raw<ImportPreview | null>(null);
  result = $state.raw<ImportSummary | null>(null);
  error = $state<AppError | null>(null);
  /** Set when the user cancelled: what was cancelled; nothing was stored. */
  cancelled = $state<string | null>(null);
  cancelError = $state<AppError | null>(null);
  /** The latest progress report of the running preview or import. */
  progress = $state.raw<ImportEvent | null>(null);
  eventsError = $state<AppError | null>(null);

  /** A file is being dragged over the window. */
  dragging = $state(false);
  /** What happened to the last drop (more than one file, say). */
  dropNote = $state<string | null>(null);
  dropError = $state<AppError | null>(null);

  /** The job name of the running (or last) preview and its import. */
  job = $state<string | null>(null);
  private jobSeq = 0;

  /** Called with every import stored, e.g. to list its runs. */
  constructor(private readonly onImported: (summary: ImportSummary) => void = () => {}) {}

  get busy(): boolean {
    return this.stage === 'previewing' || this.stage === 'committing';
  }

  /** Subscribes to import progress; returns the function that stops listening. */
  start(): () => void {
    return subscribe(
      onImportProgress((event) => {
        if (event.job !== null && event.job === this.job && this.busy) this.progress = event;
      }),
      (reason) => (this.eventsError = toAppError(reason)),
    );
  }

  /** Takes files dropped on the window as the file to import; returns the function that stops. */
  listenForDrops(): () => void {
    return subscribe(
      onFileDrag((drag) => {
        if (drag.type === 'enter' || drag.type === 'over') this.dragging = true;
        else if (drag.type === 'leave') this.dragging = false;
        else this.drop(drag.paths);
      }),
      (reason) => (this.dropError = toAppError(reason)),
    );
  }

  drop(paths: readonly string[]): void {
    this.dragging = false;
    const [first] = paths;
    if (first === undefined) return;
    if (this.busy) {
      this.dropNote = `Dropped ${fileName(first)} while another file is being read or stored: finish or cancel that first.`;
      return;
    }
    this.dropNote =
      paths.length > 1
        ? `${paths.length} files dropped: taking ${fileName(first)}. Each file is its own import: drop the others one at a time.`
        : null;
    this.setPath(first);
    void this.sniff();
  }

  /** What the screen calls when shown: another study starts afresh, the same one is read again. */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.imports = [];
      this.importsState = 'idle';
      this.importsError = null;
      this.cell = '';
      if (!this.busy) this.clearOutcome();
    }
    if (studyId !== null) void this.loadImports();
  }

  async loadImports(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    if (this.importsState !== 'ready') this.importsState = 'loading';
    try {
      const imports = await listImports(studyId);
      if (studyId !== this.studyId) return;
      this.imports = imports;
      this.importsState = 'ready';
      this.importsError = null;
    } catch (reason) {
      if (studyId !== this.studyId) return;
      this.importsError = toAppError(reason);
      this.importsState = 'failed';
    }
  }

  /** A new path: what was previewed for another file no longer applies. */
  setPath(path: string): void {
    if (path === this.path) return;
    this.path = path;
    this.sniffError = null;
    if (!this.busy) this.clearOutcome();
  }

  pickFormat(format: ImportFormat | ''): void {
    this.format = format;
    this.formatPicked = format !== '';
    if (!this.busy) this.clearOutcome();
  }

  pickCell(cell: string): void {
    this.cell = cell;
    if (!this.busy) this.clearOutcome();
  }

  /** Asks the backend to guess the format of `path`; the guess fills the format unless one was picked. */
  async sniff(): Promise<ImportFormat | null> {
    const path = this.path.trim();
    if (!path) return null;
    if (this.sniffed?.path === path) return this.sniffed.format;
    try {
      const format = await sniffImportFormat(path);
      if (path !== this.path.trim()) return null;
      this.sniffed = { path, format };
      this.sniffError = null;
      if (format && !this.formatPicked) this.format = format;
      return format;
    } catch (reason) {
      if (path !== this.path.trim()) return null;
      this.sniffed = null;
      this.sniffError = toAppError(reason);
      return null;
    }
  }

  /** Reads the file and shows what was recognised; nothing is stored. */
  async previewFile(studyId: number, cell: string): Promise<void> {
    if (this.busy) return;
    if (!this.format && this.path.trim()) await this.sniff();
    const job = `import-${Date.now()}-${++this.jobSeq}`;
    const input = importInput({ studyId, cell, format: this.format, path: this.path, mapping: this.mapping, job });
    this.clearOutcome();
    if ('code' in input) {
      this.error = input;
      return;
    }
    this.job = job;
    this.stage = 'previewing';
    try {
      const preview = await previewImport(input);
      if (this.job !== job) return;
      this.preview = preview;
      this.stage = 'previewed';
    } catch (reason) {
      if (this.job !== job) return;
      this.fail(reason, `Reading ${fileName(input.path)}`);
    } finally {
      if (this.job === job) this.progress = null;
    }
  }

  /** Stores the previewed reading, atomically. The preview's token is spent either way. */
  async commit(): Promise<void> {
    const preview = this.preview;
    if (!preview || this.busy || preview.already_imported) return;
    const job = this.job;
    this.stage = 'committing';
    this.error = null;
    this.cancelled = null;
    try {
      const summary = await commitImport(preview.token);
      if (this.job !== job) return;
      this.result = summary;
      this.preview = null;
      this.stage = 'committed';
      this.onImported(summary);
      void this.loadImports();
    } catch (reason) {
      if (this.job !== job) return;
      this.preview = null;
      this.fail(reason, `Importing ${preview.source_name}`);
    } finally {
      if (this.job === job) this.progress = null;
    }
  }

  async cancel(): Promise<void> {
    const job = this.job;
    if (!job || !this.busy) return;
    try {
      await cancelImport(job);
      this.cancelError = null;
    } catch (reason) {
      this.cancelError = toAppError(reason);
    }
  }

  /** Forgets the preview or result shown (the file path, cell and format stay). */
  clearOutcome(): void {
    this.stage = 'idle';
    this.preview = null;
    this.result = null;
    this.error = null;
    this.cancelled = null;
    this.cancelError = null;
    this.progress = null;
    this.job = null;
  }

  private fail(reason: unknown, what: string): void {
    const error = toAppError(reason);
    this.stage = 'idle';
    if (error.code === 'cancelled') {
      this.cancelled = `${what} was cancelled: nothing was stored.`;
      this.error = null;
    } else {
      this.error = error;
    }
  }
}

/** Runs `subscribed` and returns a stop function that also works before the subscription settles. */
function subscribe(subscribed: Promise<() => void>, failed: (reason: unknown) => void): () => void {
  let stopped = false;
  let unlisten: (() => void) | null = null;
  subscribed.then(
    (stop) => {
      if (stopped) stop();
      else unlisten = stop;
    },
    failed,
  );
  return () => {
    stopped = true;
    unlisten?.();
  };
}

import {
  appInfo,
  createStudy,
  lastOpenedStudy,
  listStudies,
  openDemo,
  openStudy,
  studyProgress,
  toAppError,
} from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { AppInfo } from '$lib/bindings/AppInfo';
import type { NewStudy } from '$lib/bindings/NewStudy';
import type { Study } from '$lib/bindings/Study';
import type { StudyProgress } from '$lib/bindings/StudyProgress';

export type LoadState = 'idle' | 'loading' | 'ready' | 'failed';

/**
 * What the shell knows about the workspace: backend answers only, nothing derived here.
 * Backend values are replaced whole, never mutated, hence $state.raw.
 */
export class Workspace {
  info = $state.raw<AppInfo | null>(null);
  infoError = $state<AppError | null>(null);
  studies = $state.raw<Study[]>([]);
  studiesState = $state<LoadState>('idle');
  studiesError = $state<AppError | null>(null);
  current = $state.raw<Study | null>(null);
  currentError = $state<AppError | null>(null);
  /** Where the current study stands and its next step; read when the Studies screen shows it. */
  progress = $state.raw<StudyProgress | null>(null);
  progressError = $state<AppError | null>(null);

  private progressSeq = 0;

  /** Startup: app info, the study list and the last opened study, each failing on its own. */
  async load(): Promise<void> {
    this.studiesState = 'loading';
    const [info, studies, last] = await Promise.allSettled([appInfo(), listStudies(), lastOpenedStudy()]);

    if (info.status === 'fulfilled') this.info = info.value;
    else this.infoError = toAppError(info.reason);

    if (studies.status === 'fulfilled') {
      this.studies = studies.value;
      this.studiesState = 'ready';
    } else {
      this.studiesError = toAppError(studies.reason);
      this.studiesState = 'failed';
    }

    if (last.status === 'fulfilled') this.current = last.value;
    else this.currentError = toAppError(last.reason);
  }

  async refreshStudies(): Promise<void> {
    try {
      const studies = await listStudies();
      this.studies = studies;
      this.studiesState = 'ready';
      this.studiesError = null;
      // The open study as stored now (another process may have changed or removed it).
      const id = this.current?.id;
      if (id !== undefined) {
        const now = studies.find((s) => s.id === id) ?? null;
        if (now === null || JSON.stringify(now) !== JSON.stringify(this.current)) this.current = now;
      }
    } catch (reason) {
      this.studiesError = toAppError(reason);
      this.studiesState = 'failed';
    }
  }

  /** Creates a study and makes it the current one; rejects with an AppError, for the form to show inline. */
  async create(input: NewStudy): Promise<Study> {
    const study = await createStudy(input);
    await this.refreshStudies();
    try {
      await this.open(study.id);
    } catch (reason) {
      // Created but not opened: the list shows it; the error says why it is not current.
      this.currentError = toAppError(reason);
    }
    return study;
  }

  /** Rejects with an AppError; the current study stays as it was. */
  async open(id: number): Promise<Study> {
    const study = await openStudy(id);
    if (this.current?.id !== study.id) this.progress = null;
    this.current = study;
    this.currentError = null;
    void this.loadProgress();
    return study;
  }

  /** Adds the recorded demo to this database if it has none, and opens it; rejects with an AppError. */
  async openDemo(): Promise<Study> {
    const study = await openDemo();
    this.progress = null;
    this.current = study;
    this.currentError = null;
    await this.refreshStudies();
    void this.loadProgress();
    return study;
  }

  /** Reads the current study's progress again (nothing when no study is open). */
  async loadProgress(): Promise<void> {
    const id = this.current?.id;
    const seq = ++this.progressSeq;
    if (id === undefined) {
      this.progress = null;
      this.progressError = null;
      return;
    }
    try {
      const progress = await studyProgress(id);
      if (seq !== this.progressSeq) return;
      this.progress = progress;
      this.progressError = null;
    } catch (reason) {
      if (seq !== this.progressSeq) return;
      this.progress = null;
      this.progressError = toAppError(reason);
    }
  }
}

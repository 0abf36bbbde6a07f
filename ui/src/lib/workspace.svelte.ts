import { appInfo, createStudy, lastOpenedStudy, listStudies, openStudy, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { AppInfo } from '$lib/bindings/AppInfo';
import type { NewStudy } from '$lib/bindings/NewStudy';
import type { Study } from '$lib/bindings/Study';

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
      this.studies = await listStudies();
      this.studiesState = 'ready';
      this.studiesError = null;
    } catch (reason) {
      this.studiesError = toAppError(reason);
      this.studiesState = 'failed';
    }
  }

  /** Rejects with an AppError, for the form to show inline. */
  async create(input: NewStudy): Promise<Study> {
    const study = await createStudy(input);
    await this.refreshStudies();
    return study;
  }

  /** Rejects with an AppError; the current study stays as it was. */
  async open(id: number): Promise<Study> {
    const study = await openStudy(id);
    this.current = study;
    this.currentError = null;
    return study;
  }
}

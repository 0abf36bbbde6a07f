import { analyzeStudy, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { StudyAnalysis } from '$lib/bindings/StudyAnalysis';
import type { LoadState } from '$lib/workspace.svelte';

/**
 * The Results screen's state: the backend's analysis of the open study, replaced whole. When the
 * backend refuses (no locked policy, or anything else) no earlier analysis is kept on screen.
 */
export class ResultsModel {
  studyId = $state<number | null>(null);
  analysis = $state.raw<StudyAnalysis | null>(null);
  state = $state<LoadState>('idle');
  error = $state<AppError | null>(null);

  private seq = 0;

  /** What the screen calls when shown: reads the analysis of the study (again). */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.analysis = null;
      this.state = 'idle';
      this.error = null;
    }
    if (studyId !== null) void this.load();
  }

  async load(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    const seq = ++this.seq;
    this.state = 'loading';
    try {
      const analysis = await analyzeStudy(studyId);
      if (seq !== this.seq) return;
      this.analysis = analysis;
      this.error = null;
      this.state = 'ready';
    } catch (reason) {
      if (seq !== this.seq) return;
      // Never partial numbers: a refused analysis hides the previous one too.
      this.analysis = null;
      this.error = toAppError(reason);
      this.state = 'failed';
    }
  }

  /** True when results are hidden because the study has no locked policy. */
  get policyNotLocked(): boolean {
    return this.error?.code === 'policy_not_locked';
  }
}

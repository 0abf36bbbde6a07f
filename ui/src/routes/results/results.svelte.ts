import { studyResults, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { StudyAnalysis } from '$lib/bindings/StudyAnalysis';
import type { StudyCharts } from '$lib/bindings/StudyCharts';
import type { LoadState } from '$lib/workspace.svelte';

/**
 * The Results screen's state: the backend's analysis of the open study and the charts drawn from
 * it, replaced whole and together. When the backend refuses (no locked policy, or anything else)
 * no earlier analysis or chart is kept on screen.
 */
export class ResultsModel {
  studyId = $state<number | null>(null);
  analysis = $state.raw<StudyAnalysis | null>(null);
  charts = $state.raw<StudyCharts | null>(null);
  state = $state<LoadState>('idle');
  error = $state<AppError | null>(null);

  private seq = 0;

  /** What the screen calls when shown: reads the analysis of the study (again). */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.studyId = studyId;
      this.analysis = null;
      this.charts = null;
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
      const results = await studyResults(studyId);
      if (seq !== this.seq) return;
      this.analysis = results.analysis;
      this.charts = results.charts;
      this.error = null;
      this.state = 'ready';
    } catch (reason) {
      if (seq !== this.seq) return;
      // Never partial numbers: a refused analysis hides the previous one too.
      this.analysis = null;
      this.charts = null;
      this.error = toAppError(reason);
      this.state = 'failed';
    }
  }

  /** True when results are hidden because the study has no locked policy. */
  get policyNotLocked(): boolean {
    return this.error?.code === 'policy_not_locked';
  }
}

import {
  cancelRun,
  listManifests,
  listRuns,
  localServers,
  onRunProgress,
  runDetail,
  runQuality,
  runSweep,
  startLocalServer,
  stopLocalServer,
  toAppError,
} from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { LocalServer } from '$lib/bindings/LocalServer';
import type { QualityRunInput } from '$lib/bindings/QualityRunInput';
import type { RunDetail } from '$lib/bindings/RunDetail';
import type { RunEvent } from '$lib/bindings/RunEvent';
import type { RunSummary } from '$lib/bindings/RunSummary';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { SweepInput } from '$lib/bindings/SweepInput';
import type { LoadState } from '$lib/workspace.svelte';
import { applyRunEvent, type ProgressByRun } from './run-view';

/** The KV precisions of the local llama.cpp servers this screen starts. */
export const LOCAL_KV = ['f16', 'q8_0'] as const;
export type LocalKv = (typeof LOCAL_KV)[number];

/** A run started from this window whose `run_quality` call has not answered yet, or that failed. */
export type Launch = {
  key: number;
  studyId: number;
  cell: string;
  baseUrl: string;
  state: 'pending' | 'failed';
  error: AppError | null;
  /** A quality run of one cell, or a sweep of several. */
  kind?: 'quality' | 'sweep';
};

/** A copy of `record` without `key`. */
function without<T extends object>(record: T, key: keyof T): T {
  const copy = { ...record };
  delete copy[key];
  return copy;
}

/**
 * Runs and local servers as the backend reports them, with the latest progress of each running
 * run. Lives as long as the app window: runs keep running, and reporting, while other screens
 * are shown. Backend values are replaced whole, never edited here.
 */
export class RunsModel {
  studyId = $state<number | null>(null);

  servers = $state.raw<LocalServer[]>([]);
  serversError = $state<AppError | null>(null);
  /** KV type → when its start was asked (ms since the epoch). */
  starting = $state.raw<Partial<Record<LocalKv, number>>>({});
  startErrors = $state.raw<Partial<Record<LocalKv, AppError>>>({});
  stopping = $state.raw<readonly number[]>([]);
  stopError = $state<AppError | null>(null);

  manifests = $state.raw<StoredManifest[]>([]);
  manifestsState = $state<LoadState>('idle');
  manifestsError = $state<AppError | null>(null);

  runs = $state.raw<RunSummary[]>([]);
  runsState = $state<LoadState>('idle');
  runsError = $state<AppError | null>(null);
  progress = $state.raw<ProgressByRun>({});
  eventsError = $state<AppError | null>(null);
  launches = $state.raw<Launch[]>([]);
  cancelErrors = $state.raw<Record<number, AppError>>({});
  /** The last run that finished, for the screen's status line. */
  lastFinished = $state.raw<{ id: number; state: string } | null>(null);

  selectedRunId = $state<number | null>(null);
  detail = $state.raw<RunDetail | null>(null);
  detailState = $state<LoadState>('idle');
  detailError = $state<AppError | null>(null);

  private launchSeq = 0;
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  /** Run ids whose first report already asked for a list refresh. */
  private readonly seen = new Set<number>();

  /** Subscribes to run progress and reads the running servers; returns the function that stops listening. */
  start(): () => void {
    let stopped = false;
    let unlisten: (() => void) | null = null;
    onRunProgress((event) => this.receive(event)).then(
      (stop) => {
        if (stopped) stop();
        else unlisten = stop;
      },
      (reason: unknown) => {
        this.eventsError = toAppError(reason);
      },
    );
    void this.loadServers();
    return () => {
      stopped = true;
      unlisten?.();
    };
  }

  /** What the screen calls when shown: another study starts afresh, the same one is read again. */
  show(studyId: number | null): void {
    if (studyId !== this.studyId) {
      this.setStudy(studyId);
      return;
    }
    if (studyId === null) return;
    void this.refreshRuns();
    void this.loadManifests();
    void this.loadServers();
  }

  /** Shows the runs and manifests of another study (or none). */
  setStudy(studyId: number | null): void {
    if (studyId === this.studyId) return;
    this.studyId = studyId;
    this.runs = [];
    this.runsState = 'idle';
    this.runsError = null;
    this.manifests = [];
    this.manifestsState = 'idle';
    this.manifestsError = null;
    this.selectedRunId = null;
    this.detail = null;
    this.detailState = 'idle';
    this.detailError = null;
    if (studyId !== null) {
      void this.refreshRuns();
      void this.loadManifests();
    }
  }

  async loadServers(): Promise<void> {
    try {
      this.servers = await localServers();
      this.serversError = null;
    } catch (reason) {
      this.serversError = toAppError(reason);
    }
  }

  async loadManifests(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    if (this.manifestsState !== 'ready') this.manifestsState = 'loading';
    try {
      const manifests = await listManifests(studyId);
      if (studyId !== this.studyId) return;
      this.manifests = manifests;
      this.manifestsState = 'ready';
      this.manifestsError = null;
    } catch (reason) {
      if (studyId !== this.studyId) return;
      this.manifestsError = toAppError(reason);
      this.manifestsState = 'failed';
    }
  }

  /** Re-reads the study's runs; a call made while one is in flight reads again after it. */
  refreshRuns(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        await this.readRuns();
      } while (this.refreshAgain);
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async readRuns(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null) return;
    if (this.runsState !== 'ready') this.runsState = 'loading';
    try {
      const runs = await listRuns(studyId);
      if (studyId !== this.studyId) return;
      this.runs = runs;
      this.runsState = 'ready';
      this.runsError = null;
    } catch (reason) {
      if (studyId !== this.studyId) return;
      this.runsError = toAppError(reason);
      this.runsState = 'failed';
    }
  }

  receive(event: RunEvent): void {
    this.progress = applyRunEvent(this.progress, event);
    const firstReport = !this.seen.has(event.run_id);
    this.seen.add(event.run_id);
    // A run is listed once it is stored, which is before its first report.
    if (event.phase === 'finished' || (firstReport && !this.runs.some((r) => r.id === event.run_id))) {
      void this.refreshRuns();
    }
    if (event.phase === 'finished') {
      this.lastFinished = { id: event.run_id, state: event.state ?? 'finished' };
      if (this.selectedRunId === event.run_id) void this.loadDetail(event.run_id);
    }
  }

  /** Starts a quality run without waiting for it: the call answers only when the run is stored. */
  startQuality(input: QualityRunInput): Launch {
    const launch: Launch = {
      key: ++this.launchSeq,
      studyId: input.study_id,
      cell: input.cell,
      baseUrl: input.base_url,
      state: 'pending',
      error: null,
    };
    this.launches = [...this.launches, launch];
    void this.refreshRuns();
    runQuality(input).then(
      () => {
        this.launches = this.launches.filter((l) => l.key !== launch.key);
      },
      (reason: unknown) => {
        const error = toAppError(reason);
        this.launches = this.launches.map((l) => (l.key === launch.key ? { ...l, state: 'failed', error } : l));
      },
    ).finally(() => {
      if (launch.studyId === this.studyId) void this.refreshRuns();
    });
    return launch;
  }

  /** Starts a sweep; its runs appear in the runs table as they start. Listed as one launch. */
  startSweep(input: SweepInput): Launch {
    const launch: Launch = {
      key: ++this.launchSeq,
      studyId: input.study_id,
      cell: input.cells.map((c) => c.cell).join(', '),
      baseUrl: `${input.rates.length} rates × ${input.runs_per_point}`,
      state: 'pending',
      error: null,
      kind: 'sweep',
    };
    // A new sweep replaces the refusal of the one before it.
    this.launches = [...this.launches.filter((l) => !(l.kind === 'sweep' && l.state === 'failed')), launch];
    void this.refreshRuns();
    runSweep(input).then(
      () => {
        this.launches = this.launches.filter((l) => l.key !== launch.key);
      },
      (reason: unknown) => {
        const error = toAppError(reason);
        this.launches = this.launches.map((l) => (l.key === launch.key ? { ...l, state: 'failed', error } : l));
      },
    ).finally(() => {
      if (launch.studyId === this.studyId) void this.refreshRuns();
    });
    return launch;
  }

  dismissLaunch(key: number): void {
    this.launches = this.launches.filter((l) => l.key !== key);
  }

  async cancel(runId: number): Promise<void> {
    try {
      await cancelRun(runId);
      this.cancelErrors = without(this.cancelErrors, runId);
    } catch (reason) {
      this.cancelErrors = { ...this.cancelErrors, [runId]: toAppError(reason) };
    }
  }

  /** Shows one run of a study, as when another screen links to it (the Runs screen then shows its detail). */
  openRun(studyId: number, runId: number): void {
    this.setStudy(studyId);
    this.select(runId);
  }

  select(runId: number): void {
    this.selectedRunId = runId;
    void this.loadDetail(runId);
  }

  async loadDetail(runId: number): Promise<void> {
    if (this.detail?.run.id !== runId) this.detail = null;
    this.detailState = 'loading';
    try {
      const detail = await runDetail(runId);
      if (this.selectedRunId !== runId) return;
      this.detail = detail;
      this.detailState = 'ready';
      this.detailError = null;
    } catch (reason) {
      if (this.selectedRunId !== runId) return;
      this.detailError = toAppError(reason);
      this.detailState = 'failed';
    }
  }

  /** Starts a local llama.cpp server (seconds to a minute); errors are kept per KV type. */
  async startServer(kv: LocalKv): Promise<void> {
    if (this.starting[kv] !== undefined) return;
    this.starting = { ...this.starting, [kv]: Date.now() };
    this.startErrors = without(this.startErrors, kv);
    try {
      const server = await startLocalServer(kv);
      this.servers = [...this.servers.filter((s) => s.pid !== server.pid), server];
    } catch (reason) {
      this.startErrors = { ...this.startErrors, [kv]: toAppError(reason) };
    } finally {
      this.starting = without(this.starting, kv);
    }
  }

  async stopServer(pid: number): Promise<void> {
    if (this.stopping.includes(pid)) return;
    this.stopping = [...this.stopping, pid];
    try {
      await stopLocalServer(pid);
      this.servers = this.servers.filter((s) => s.pid !== pid);
      this.stopError = null;
    } catch (reason) {
      this.stopError = toAppError(reason);
      await this.loadServers();
    } finally {
      this.stopping = this.stopping.filter((p) => p !== pid);
    }
  }
}

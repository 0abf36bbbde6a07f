// Presentation of what the backend measured and stored for runs: progress, durations, evidence.
// Nothing here judges a run: verdicts, validity and counts are the backend's.

import { formatCount, formatDuration, formatMiB } from '$lib/format';
import type { AppError } from '$lib/bindings/AppError';
import type { CellOrder } from '$lib/bindings/CellOrder';
import type { QualityRunInput } from '$lib/bindings/QualityRunInput';
import type { RequestStatus } from '$lib/bindings/RequestStatus';
import type { RunEvent } from '$lib/bindings/RunEvent';
import type { RunPhase } from '$lib/bindings/RunPhase';
import type { RunProgress } from '$lib/bindings/RunProgress';
import type { StartupEvidence } from '$lib/bindings/StartupEvidence';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { SweepInput } from '$lib/bindings/SweepInput';
import type { WarmupPlan } from '$lib/bindings/WarmupPlan';

/** The latest progress report of each run, by run id. */
export type ProgressByRun = Readonly<Record<number, RunEvent>>;

const PHASE_ORDER: Record<RunPhase, number> = { warmup: 0, measured: 1, finished: 2 };

/**
 * Takes a progress report into the map. A report older than the one kept (an earlier phase, or
 * the same phase at an earlier time) is ignored, so a late event never moves a bar backwards.
 * Returns the same map when nothing changed.
 */
export function applyRunEvent(map: ProgressByRun, event: RunEvent): ProgressByRun {
  const kept = map[event.run_id];
  if (kept) {
    const byPhase = PHASE_ORDER[event.phase] - PHASE_ORDER[kept.phase];
    if (byPhase < 0) return map;
    if (byPhase === 0 && event.progress.elapsed_ms < kept.progress.elapsed_ms) return map;
  }
  return { ...map, [event.run_id]: event };
}

export const PHASE_LABEL: Record<RunPhase, string> = {
  warmup: 'warm-up',
  measured: 'measured',
  finished: 'finished',
};

/** `<progress>` attributes: finished of planned; `null` when the plan's size is not known (a bar without value). */
export function progressBar(progress: RunProgress): { value: number; max: number } | null {
  if (progress.planned === null || progress.planned <= 0) return null;
  return { value: Math.min(progress.finished, progress.planned), max: progress.planned };
}

/** "sent 3 / 6, finished 2, failed 0, elapsed 12.4 s" (planned unknown: "sent 3"). */
export function progressText(progress: RunProgress): string {
  const n = formatCount;
  const sent = progress.planned === null ? `sent ${n(progress.sent)}` : `sent ${n(progress.sent)} / ${n(progress.planned)}`;
  return `${sent}, finished ${n(progress.finished)}, failed ${n(progress.failed)}, elapsed ${formatDuration(progress.elapsed_ms)}`;
}

/** What the startup log says about the KV cache, as printed by llama.cpp; `null` when it says nothing. */
export function kvCache(
  startup: StartupEvidence | null | undefined,
): { size: string; mib: number; kType: string; vType: string; cells: number; line: number; text: string } | null {
  const found = startup?.llama_kv_cache;
  if (!found) return null;
  const kv = found.value;
  return {
    size: formatMiB(kv.size_mib),
    mib: kv.size_mib,
    kType: kv.k_type,
    vType: kv.v_type,
    cells: kv.cells,
    line: found.line,
    text: found.text,
  };
}

/** The cells a run can be started for: frozen manifests, in the order listed. */
export function runnableCells(manifests: readonly StoredManifest[]): string[] {
  return manifests.filter((m) => m.status === 'frozen').map((m) => m.cell);
}

/** Entries of a per-metric summary map, by metric name. */
export function metricRows<T>(map: Partial<Record<string, T>>): [string, T][] {
  return Object.entries(map)
    .filter((entry): entry is [string, T] => entry[1] !== undefined)
    .sort(([a], [b]) => a.localeCompare(b));
}

/** The form as typed: numbers are `null` when the field is empty. */
export type QualityForm = {
  studyId: number;
  cell: string;
  baseUrl: string;
  startupLog: string;
  corpusDir: string;
  limit: number | null;
  repeats: number | null;
  seed: number | null;
  warmup: number | null;
};

function invalid(message: string): AppError {
  return { code: 'invalid_input', message };
}

function wholeNumber(value: number | null, name: string, min: number): AppError | null {
  if (value === null || !Number.isSafeInteger(value) || value < min) {
    return invalid(`${name}: expected a whole number of at least ${min}, found ${value ?? 'nothing'}`);
  }
  return null;
}

/**
 * The request for `run_quality`, or the first problem with the form. Only what the request type
 * itself needs is checked here (present fields, whole numbers); the backend checks the rest.
 */
export function qualityRunInput(form: QualityForm): QualityRunInput | AppError {
  if (!form.cell) return invalid('cell: expected a frozen manifest to run, found none chosen');
  const baseUrl = form.baseUrl.trim();
  if (!baseUrl) return invalid('endpoint: expected a base URL (e.g. http://127.0.0.1:8080), found nothing');
  const corpusDir = form.corpusDir.trim();
  if (!corpusDir) return invalid('corpus folder: expected a folder with items.jsonl and corpus.json, found nothing');
  const problem =
    wholeNumber(form.limit, 'limit', 1) ??
    wholeNumber(form.repeats, 'repeats', 1) ??
    wholeNumber(form.seed, 'seed', 0) ??
    wholeNumber(form.warmup, 'warm-up requests', 0);
  if (problem) return problem;
  const startupLog = form.startupLog.trim();
  return {
    study_id: form.studyId,
    cell: form.cell,
    base_url: baseUrl,
    corpus_dir: corpusDir,
    limit: form.limit ?? undefined,
    repeats: form.repeats ?? undefined,
    seed: form.seed ?? undefined,
    warmup: form.warmup ?? undefined,
    ...(startupLog ? { startup_log: startupLog } : {}),
  };
}

/** One cell of the sweep form: whether it is swept, and its server. */
export type SweepCellForm = { cell: string; included: boolean; baseUrl: string; startupLog: string };

/** What the sweep form holds. */
export type SweepForm = {
  studyId: number;
  cells: SweepCellForm[];
  /** Offered rates as typed: numbers separated by commas or spaces. */
  rates: string;
  durationS: number | null;
  runsPerPoint: number | null;
  seed: number | null;
  corpusDir: string;
};

/**
 * The request for `run_sweep`, or the first problem with the form. The rates are read as typed
 * (every one a number); whether they are positive and distinct, and whether the duration covers
 * the policy's goodput interval and drain, is the backend's rule (`kvgate_core::sweep::plan`).
 */
export function sweepRunInput(form: SweepForm): SweepInput | AppError {
  const cells = form.cells.filter((c) => c.included);
  if (cells.length === 0) return invalid('cells: expected at least one frozen cell to sweep, found none chosen');
  for (const c of cells) {
    if (!c.baseUrl.trim()) return invalid(`endpoint of ${c.cell}: expected a base URL (e.g. http://127.0.0.1:8080), found nothing`);
  }
  const words = form.rates.split(/[\s,]+/).filter((w) => w !== '');
  if (words.length === 0) return invalid('rates: expected offered rates in requests per second (e.g. 0.05, 0.2), found nothing');
  const rates = words.map(Number);
  const bad = words.find((_, i) => !Number.isFinite(rates[i]));
  if (bad !== undefined) return invalid(`rates: expected numbers of requests per second, found "${bad}"`);
  if (form.durationS === null || !Number.isFinite(form.durationS)) {
    return invalid('duration: expected seconds (at least the policy\'s goodput interval plus its drain), found nothing');
  }
  const corpusDir = form.corpusDir.trim();
  if (!corpusDir) return invalid('corpus folder: expected a folder with items.jsonl and corpus.json, found nothing');
  const problem = wholeNumber(form.runsPerPoint, 'runs per point', 1) ?? wholeNumber(form.seed, 'seed', 0);
  if (problem) return problem;
  return {
    study_id: form.studyId,
    cells: cells.map((c) => ({
      cell: c.cell,
      base_url: c.baseUrl.trim(),
      startup_log: c.startupLog.trim() === '' ? null : c.startupLog.trim(),
    })),
    rates,
    duration_s: form.durationS,
    runs_per_point: form.runsPerPoint ?? 1,
    seed: form.seed ?? 1,
    model: null,
    corpus_dir: corpusDir,
    scrape_interval_ms: null,
    request_deadline_s: null,
    only: null,
  };
}

/** The base URL a run was sent to, as recorded in its config. */
export function configBaseUrl(config: Readonly<Record<string, unknown>>): string | null {
  const endpoint = config['endpoint'];
  if (typeof endpoint !== 'object' || endpoint === null) return null;
  const url = (endpoint as Record<string, unknown>)['base_url'];
  return typeof url === 'string' ? url : null;
}

/** The warm-up a quality run recorded (`warmup` in its config): items outside the measured set.
 * Null for runs that recorded only a count (before warm-up items were kept apart) or none. */
export function configWarmup(config: Readonly<Record<string, unknown>>): WarmupPlan | null {
  const w = config['warmup'];
  if (typeof w !== 'object' || w === null) return null;
  const plan = w as Record<string, unknown>;
  if (!Array.isArray(plan['items']) || typeof plan['requested'] !== 'number') return null;
  return w as WarmupPlan;
}

/** Where a run stood in a series of cells run one after another (`cell_order` in its config). */
export function configCellOrder(config: Readonly<Record<string, unknown>>): CellOrder | null {
  const c = config['cell_order'];
  if (typeof c !== 'object' || c === null) return null;
  const place = c as Record<string, unknown>;
  if (!Array.isArray(place['order']) || typeof place['position'] !== 'number') return null;
  return c as CellOrder;
}

/** The first characters of a digest, for a table cell; the full digest goes in its title. */
export function shortDigest(sha256: string): string {
  return sha256.slice(0, 12);
}

/**
 * A request's status in words. The stored status `rejected` is a refusal by the server (HTTP 429
 * and the like): it reads "refused", since "rejected" on a screen is the validator's verdict only.
 */
export function requestStatusLabel(status: RequestStatus): string {
  return status === 'rejected' ? 'refused' : status;
}

// Presentation of imports: the format choices, the request for `preview_import` and progress.
// Nothing here reads a file or judges one: recognising, hashing and counting are the backend's.

import { formatBytes, formatCount } from '$lib/format';
import type { AppError } from '$lib/bindings/AppError';
import type { ColumnMapping } from '$lib/bindings/ColumnMapping';
import type { ImportEvent } from '$lib/bindings/ImportEvent';
import type { ImportFormat } from '$lib/bindings/ImportFormat';
import type { ImportInput } from '$lib/bindings/ImportInput';
import type { TimeUnit } from '$lib/bindings/TimeUnit';

/** Every format the backend reads, in its order, with what produces it. */
export const IMPORT_FORMATS: readonly { value: ImportFormat; label: string }[] = [
  { value: 'vllm-bench', label: 'vllm-bench: vllm bench serve result' },
  { value: 'guidellm', label: 'guidellm: GuideLLM report (v2)' },
  { value: 'aiperf', label: 'aiperf: AIPerf profile_export.jsonl' },
  { value: 'inference-perf', label: 'inference-perf: lifecycle / prometheus metrics JSON' },
  { value: 'prometheus', label: 'prometheus: /metrics text exposition' },
  { value: 'vllm-log', label: 'vllm-log: vLLM startup log' },
  { value: 'llamacpp-log', label: 'llamacpp-log: llama.cpp server startup log' },
  { value: 'nvidia-smi', label: 'nvidia-smi: --query-gpu=index,memory.used --format=csv' },
  { value: 'jsonl', label: 'jsonl: KV Gate run file or request records' },
  { value: 'lm-eval-samples', label: 'lm-eval-samples: lm-evaluation-harness samples_<task>_<date>.jsonl' },
  { value: 'inspect', label: 'inspect: Inspect AI eval log (.json or .eval)' },
  { value: 'csv', label: 'csv: CSV with a column mapping' },
  { value: 'parquet', label: 'parquet: Parquet with a column mapping' },
];

export function isImportFormat(value: string): value is ImportFormat {
  return IMPORT_FORMATS.some((f) => f.value === value);
}

/** CSV and Parquet have no fixed shape: the user names the columns. */
export function needsMapping(format: ImportFormat | ''): boolean {
  return format === 'csv' || format === 'parquet';
}

/** The column fields of `ColumnMapping` (all but the time unit). */
export type MappingKey = Exclude<keyof ColumnMapping, 'time_unit'>;

/** The mapping form's fields, in the order shown, with what each column must hold. */
export const MAPPING_FIELDS: readonly { key: MappingKey; label: string; hint: string }[] = [
  { key: 'dispatch', label: 'dispatch (required)', hint: 'when the request was sent, absolute' },
  { key: 'planned_arrival', label: 'planned_arrival', hint: 'when the schedule wanted it sent, absolute' },
  { key: 'ttft', label: 'ttft', hint: 'time to first token, from dispatch (or give first_token)' },
  { key: 'first_token', label: 'first_token', hint: 'first token arrival, absolute (or give ttft)' },
  { key: 'e2e', label: 'e2e', hint: 'end-to-end latency, from dispatch (or give finish)' },
  { key: 'finish', label: 'finish', hint: 'end of the response, absolute (or give e2e)' },
  { key: 'status', label: 'status', hint: 'ok / error / timeout / rejected / unfinished' },
  { key: 'error', label: 'error', hint: 'error message; an empty cell is no error' },
  { key: 'output_text', label: 'output_text', hint: 'the generated text' },
  { key: 'prompt_tokens', label: 'prompt_tokens', hint: 'as the server reported them' },
  { key: 'completion_tokens', label: 'completion_tokens', hint: 'as the server reported them' },
  { key: 'item_id', label: 'item_id', hint: 'the fixture item of the request' },
  { key: 'http_status', label: 'http_status', hint: 'HTTP status code' },
];

export const TIME_UNITS: readonly TimeUnit[] = ['s', 'ms', 'us', 'ns'];

/** The mapping as typed: an empty field is a column the file does not have. */
export type MappingForm = Record<MappingKey, string> & { time_unit: TimeUnit };

export function emptyMapping(): MappingForm {
  const form = { time_unit: 's' } as MappingForm;
  for (const f of MAPPING_FIELDS) form[f.key] = '';
  return form;
}

/** The import form as typed. */
export type ImportForm = {
  studyId: number;
  cell: string;
  format: ImportFormat | '';
  path: string;
  mapping: MappingForm;
  job: string;
};

function invalid(message: string): AppError {
  return { code: 'invalid_input', message };
}

/**
 * The request for `preview_import`, or the first problem with the form. Only what the request
 * itself needs is checked (a path, a cell, a format, the dispatch column of a table); the backend
 * checks the rest, the mapping's conflicts included.
 */
export function importInput(form: ImportForm): ImportInput | AppError {
  const path = form.path.trim();
  if (!path) return invalid('file: expected the path of a file to import (type it, paste it or drop the file), found nothing');
  if (!form.cell) return invalid('cell: expected a frozen manifest the file measured, found none chosen');
  if (!form.format) {
    return invalid(`format: expected one of ${IMPORT_FORMATS.map((f) => f.value).join(', ')}, found none chosen`);
  }
  const input: ImportInput = { study_id: form.studyId, cell: form.cell, format: form.format, path, job: form.job };
  if (!needsMapping(form.format)) return input;
  const mapping = { time_unit: form.mapping.time_unit } as ColumnMapping;
  for (const f of MAPPING_FIELDS) {
    const column = form.mapping[f.key].trim();
    (mapping as Record<string, string | null>)[f.key] = column || null;
  }
  if (!mapping.dispatch) {
    return invalid(`column mapping: a ${form.format} import needs the dispatch column (when each request was sent), found nothing`);
  }
  return { ...input, mapping };
}

/** The last part of a path, as the backend names the source (`/` or `\` separated). */
export function fileName(path: string): string {
  const trimmed = path.trim().replace(/[/\\]+$/, '');
  const parts = trimmed.split(/[/\\]/);
  return parts[parts.length - 1] ?? trimmed;
}

/** How much of a run the file carried, for a badge; `warn` when there are no per-request rows. */
export function granularityBadge(granularity: string): { label: string; title: string; warn: boolean } {
  switch (granularity) {
    case 'per_request':
      return { label: 'per-request rows', title: 'One stored row per request, as the tool recorded it', warn: false };
    case 'aggregate':
      return {
        label: 'aggregates only: no per-request rows',
        title:
          "The tool published only its own aggregates (counts, percentiles). No request rows exist: nothing per request can be paired, validated or recomputed; the figures are the tool's, verbatim.",
        warn: true,
      };
    case 'evidence':
      return {
        label: 'evidence only: no requests',
        title: 'A startup log or metric scrapes: compatibility evidence, no requests',
        warn: true,
      };
    default:
      return { label: granularity, title: 'Granularity as stored', warn: true };
  }
}

/** `<progress>` attributes of an import, `null` when the total is not known (a bar without value). */
export function importBar(event: ImportEvent): { value: number; max: number } | null {
  if (event.phase === 'storing' || event.phase === 'checking') {
    if (event.total_rows <= 0) return null;
    return { value: Math.min(event.rows_stored, event.total_rows), max: event.total_rows };
  }
  if (event.phase === 'done') return { value: 1, max: 1 };
  if (event.total_bytes <= 0) return null;
  return { value: Math.min(event.bytes_read, event.total_bytes), max: event.total_bytes };
}

/** "reading 1.00 KiB of 3.41 KiB", "checking 500 of 1,000 request rows", "storing 500 of 1,000 request
 * rows", "stored". */
export function importProgressText(event: ImportEvent): string {
  switch (event.phase) {
    case 'reading':
      return `reading ${formatBytes(event.bytes_read)} of ${formatBytes(event.total_bytes)}`;
    case 'checking':
      return `checking ${formatCount(event.rows_stored)} of ${formatCount(event.total_rows)} request rows`;
    case 'storing':
      return `storing ${formatCount(event.rows_stored)} of ${formatCount(event.total_rows)} request rows`;
    case 'done':
      return 'stored';
  }
}

/** Where an imported run came from, as recorded in its config (`config.import`). */
export type ImportOrigin = {
  format: string | null;
  parserVersion: string | null;
  tool: string | null;
  sourceName: string | null;
  sourceSha256: string | null;
};

export function importOrigin(config: Readonly<Record<string, unknown>>): ImportOrigin | null {
  const origin = config['import'];
  if (typeof origin !== 'object' || origin === null) return null;
  const o = origin as Record<string, unknown>;
  const text = (key: string) => (typeof o[key] === 'string' ? (o[key] as string) : null);
  return {
    format: text('format'),
    parserVersion: text('parser_version'),
    tool: text('tool'),
    sourceName: text('source_name'),
    sourceSha256: text('source_sha256'),
  };
}

import { describe, expect, it } from 'vitest';
import type { ImportEvent } from '$lib/bindings/ImportEvent';
import { ABSENT, formatBytes, formatExactBytes, formatFigure } from '$lib/format';
import {
  IMPORT_FORMATS,
  emptyMapping,
  fileName,
  granularityBadge,
  importBar,
  importInput,
  importOrigin,
  importProgressText,
  isImportFormat,
  needsMapping,
  type ImportForm,
} from './import-view';

function form(patch: Partial<ImportForm> = {}): ImportForm {
  return {
    studyId: 3,
    cell: 'B0',
    format: 'inference-perf',
    path: '  /data/stage_0_lifecycle_metrics.json ',
    mapping: emptyMapping(),
    job: 'import-1',
    ...patch,
  };
}

function event(patch: Partial<ImportEvent>): ImportEvent {
  return { job: 'j', phase: 'reading', bytes_read: 0, total_bytes: 0, rows_stored: 0, total_rows: 0, ...patch };
}

describe('formats', () => {
  it('lists all thirteen formats the backend reads, by their wire names', () => {
    expect(IMPORT_FORMATS.map((f) => f.value)).toEqual([
      'vllm-bench',
      'guidellm',
      'aiperf',
      'inference-perf',
      'prometheus',
      'vllm-log',
      'llamacpp-log',
      'nvidia-smi',
      'jsonl',
      'lm-eval-samples',
      'inspect',
      'csv',
      'parquet',
    ]);
    expect(isImportFormat('aiperf')).toBe(true);
    expect(isImportFormat('AIPerf')).toBe(false);
  });

  it('asks for a column mapping for csv and parquet only', () => {
    expect(needsMapping('csv')).toBe(true);
    expect(needsMapping('parquet')).toBe(true);
    expect(needsMapping('jsonl')).toBe(false);
    expect(needsMapping('')).toBe(false);
  });
});

describe('importInput', () => {
  it('builds the request with the trimmed path and the job, no mapping for a JSON format', () => {
    expect(importInput(form())).toEqual({
      study_id: 3,
      cell: 'B0',
      format: 'inference-perf',
      path: '/data/stage_0_lifecycle_metrics.json',
      job: 'import-1',
    });
  });

  it('names the missing field: path, cell, format', () => {
    expect(importInput(form({ path: '  ' }))).toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/^file: /) });
    expect(importInput(form({ cell: '' }))).toMatchObject({ message: expect.stringMatching(/^cell: /) });
    const noFormat = importInput(form({ format: '' }));
    expect(noFormat).toMatchObject({ message: expect.stringContaining('format: expected one of vllm-bench, guidellm') });
  });

  it('needs the dispatch column of a table, and sends empty columns as null', () => {
    const missing = importInput(form({ format: 'csv' }));
    expect(missing).toMatchObject({ code: 'invalid_input', message: expect.stringContaining('dispatch column') });

    const mapping = { ...emptyMapping(), dispatch: ' start_s ', ttft: 'ttft_s', e2e: 'latency_s', time_unit: 'ms' as const };
    const input = importInput(form({ format: 'parquet', mapping }));
    expect(input).toMatchObject({ format: 'parquet' });
    if ('code' in input) throw new Error(input.message);
    expect(input.mapping).toEqual({
      dispatch: 'start_s',
      planned_arrival: null,
      first_token: null,
      finish: null,
      ttft: 'ttft_s',
      e2e: 'latency_s',
      status: null,
      error: null,
      output_text: null,
      prompt_tokens: null,
      completion_tokens: null,
      item_id: null,
      http_status: null,
      time_unit: 'ms',
    });
  });
});

describe('fileName', () => {
  it('takes the last part of a POSIX or Windows path', () => {
    expect(fileName('/a/b/stage_0.json')).toBe('stage_0.json');
    expect(fileName('C:\\runs\\report.json')).toBe('report.json');
    expect(fileName('plain.csv')).toBe('plain.csv');
    expect(fileName('/a/b/')).toBe('b');
  });
});

describe('formatFigure', () => {
  it('shows integers and short values as stored', () => {
    expect(formatFigure(60)).toEqual({ text: '60', exact: '60', rounded: false });
    expect(formatFigure(1.0254)).toEqual({ text: '1.0254', exact: '1.0254', rounded: false });
    expect(formatFigure(0)).toEqual({ text: '0', exact: '0', rounded: false });
  });

  it('keeps 6 significant digits for reading and the exact value for the title', () => {
    expect(formatFigure(0.48048226445680486)).toEqual({
      text: '0.480482',
      exact: '0.48048226445680486',
      rounded: true,
    });
    expect(formatFigure(-0.0006079088198021054)).toEqual({
      text: '-0.000607909',
      exact: '-0.0006079088198021054',
      rounded: true,
    });
  });

  it('never drops integer digits of a large value', () => {
    expect(formatFigure(1234567.891).text).toBe('1234568');
    expect(formatFigure(1234567.891).exact).toBe('1234567.891');
  });

  it('says when a figure was not a finite number (JSON null)', () => {
    expect(formatFigure(null)).toEqual({ text: ABSENT, exact: 'not a finite number', rounded: false });
  });
});

describe('granularityBadge', () => {
  it('marks aggregates-only and evidence-only runs as warnings', () => {
    expect(granularityBadge('aggregate')).toMatchObject({ label: 'aggregates only: no per-request rows', warn: true });
    expect(granularityBadge('evidence')).toMatchObject({ label: 'evidence only: no requests', warn: true });
    expect(granularityBadge('per_request')).toMatchObject({ label: 'per-request rows', warn: false });
    expect(granularityBadge('mystery')).toMatchObject({ label: 'mystery', warn: true });
  });
});

describe('import progress', () => {
  it('reads bytes, then stores rows', () => {
    const reading = event({ bytes_read: 1024, total_bytes: 3487 });
    expect(importBar(reading)).toEqual({ value: 1024, max: 3487 });
    expect(importProgressText(reading)).toBe('reading 1.00 KiB of 3.41 KiB');
    const storing = event({ phase: 'storing', bytes_read: 3487, total_bytes: 3487, rows_stored: 500, total_rows: 1000 });
    expect(importBar(storing)).toEqual({ value: 500, max: 1000 });
    expect(importProgressText(storing)).toBe('storing 500 of 1,000 request rows');
    // A vLLM result's preview checks its rows (keeping none) before anything is stored.
    const checking = event({ phase: 'checking', bytes_read: 3487, total_bytes: 3487, rows_stored: 250, total_rows: 1000 });
    expect(importBar(checking)).toEqual({ value: 250, max: 1000 });
    expect(importProgressText(checking)).toBe('checking 250 of 1,000 request rows');
    expect(importProgressText(event({ phase: 'done' }))).toBe('stored');
  });

  it('has no bar value while the total is unknown', () => {
    expect(importBar(event({ bytes_read: 10 }))).toBeNull();
    expect(importBar(event({ phase: 'storing', total_rows: 0 }))).toBeNull();
  });

  it('formats byte counts in binary units, every byte for a title', () => {
    expect(formatBytes(3487)).toBe('3.41 KiB');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatExactBytes(3487)).toBe('3,487 bytes');
    expect(formatExactBytes(1)).toBe('1 byte');
  });
});

describe('importOrigin', () => {
  it('reads the import block of an imported run config', () => {
    expect(
      importOrigin({
        import: {
          format: 'inference-perf',
          parser_version: 'kvgate-formats 1 inference-perf',
          tool: 'inference-perf',
          source_name: 'stage_0_lifecycle_metrics.json',
          source_sha256: 'ab'.repeat(32),
          run: 0,
        },
      }),
    ).toEqual({
      format: 'inference-perf',
      parserVersion: 'kvgate-formats 1 inference-perf',
      tool: 'inference-perf',
      sourceName: 'stage_0_lifecycle_metrics.json',
      sourceSha256: 'ab'.repeat(32),
    });
  });

  it('is null for runs KV Gate executed', () => {
    expect(importOrigin({ endpoint: { base_url: 'http://x' } })).toBeNull();
  });
});

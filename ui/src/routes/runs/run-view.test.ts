import { describe, expect, it } from 'vitest';
import { ABSENT, formatDuration, formatNumber } from '$lib/format';
import type { RunEvent } from '$lib/bindings/RunEvent';
import type { StartupEvidence } from '$lib/bindings/StartupEvidence';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import {
  applyRunEvent,
  configBaseUrl,
  kvCache,
  metricRows,
  progressBar,
  progressText,
  qualityRunInput,
  requestStatusLabel,
  runnableCells,
  type QualityForm,
} from './run-view';

function event(runId: number, phase: RunEvent['phase'], finished: number, elapsed: number, planned: number | null = 6): RunEvent {
  return {
    run_id: runId,
    phase,
    progress: { planned, sent: finished + 1, finished, failed: 0, elapsed_ms: elapsed },
    state: phase === 'finished' ? 'completed' : null,
  };
}

describe('applyRunEvent', () => {
  it('keeps the latest report of each run', () => {
    let map = applyRunEvent({}, event(1, 'warmup', 0, 100, 1));
    map = applyRunEvent(map, event(2, 'measured', 1, 50));
    map = applyRunEvent(map, event(1, 'measured', 2, 900));
    expect(map[1]?.phase).toBe('measured');
    expect(map[1]?.progress.finished).toBe(2);
    expect(map[2]?.progress.finished).toBe(1);
  });

  it('ignores a report from an earlier phase or an earlier time, returning the same map', () => {
    const map = applyRunEvent({}, event(1, 'measured', 3, 2000));
    expect(applyRunEvent(map, event(1, 'warmup', 1, 2500))).toBe(map);
    expect(applyRunEvent(map, event(1, 'measured', 2, 1500))).toBe(map);
    const finished = applyRunEvent(map, event(1, 'finished', 6, 1800));
    expect(finished[1]?.phase).toBe('finished');
    expect(applyRunEvent(finished, event(1, 'measured', 5, 3000))).toBe(finished);
  });

  it('does not change the map it was given', () => {
    const map = applyRunEvent({}, event(1, 'measured', 1, 10));
    applyRunEvent(map, event(1, 'measured', 2, 20));
    expect(map[1]?.progress.finished).toBe(1);
  });
});

describe('progress', () => {
  it('fills the bar with finished requests of those planned', () => {
    expect(progressBar(event(1, 'measured', 2, 10).progress)).toEqual({ value: 2, max: 6 });
    expect(progressBar({ planned: 3, sent: 3, finished: 5, failed: 0, elapsed_ms: 1 })).toEqual({ value: 3, max: 3 });
  });

  it('has no value when the plan size is unknown', () => {
    expect(progressBar(event(1, 'measured', 2, 10, null).progress)).toBeNull();
    expect(progressBar(event(1, 'measured', 0, 10, 0).progress)).toBeNull();
  });

  it('says what was sent, finished and failed, and for how long', () => {
    expect(progressText({ planned: 6, sent: 3, finished: 2, failed: 1, elapsed_ms: 12_400 })).toBe(
      'sent 3 / 6, finished 2, failed 1, elapsed 12.4 s',
    );
    expect(progressText({ planned: null, sent: 40, finished: 38, failed: 0, elapsed_ms: 61_000 })).toBe(
      'sent 40, finished 38, failed 0, elapsed 1 min 01 s',
    );
  });
});

describe('durations', () => {
  it('reads in ms, seconds or minutes', () => {
    expect(formatDuration(849.6)).toBe('849.6 ms');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_345)).toBe('12.3 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
  });

  it('shows a missing measurement as absent, never 0', () => {
    expect(formatDuration(null)).toBe(ABSENT);
    expect(formatDuration(undefined)).toBe(ABSENT);
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatDuration(412.34)).toBe('412.3 ms');
  });
});

describe('kvCache', () => {
  it('reads the llama.cpp KV cache line with two decimals, as printed', () => {
    const startup: StartupEvidence = {
      attention_backend: { value: 'flash_attn', line: 80, text: 'llama_context: flash_attn = enabled' },
      llama_kv_cache: {
        value: { size_mib: 45, cells: 2048, layers: 30, seqs: '1/1', k_type: 'f16', k_mib: 22.5, v_type: 'f16', v_mib: 22.5 },
        line: 91,
        text: 'llama_kv_cache: size =   45.00 MiB (  2048 cells,  30 layers,  1/1 seqs), K (f16):   22.50 MiB, V (f16):   22.50 MiB',
      },
      more_llama_kv_caches: [],
      starts: [],
      default_scale_lines: [],
    };
    expect(kvCache(startup)).toMatchObject({ size: '45.00 MiB', mib: 45, kType: 'f16', vType: 'f16', cells: 2048, line: 91 });
    const q8 = {
      ...startup,
      llama_kv_cache: { ...startup.llama_kv_cache!, value: { ...startup.llama_kv_cache!.value, size_mib: 23.91, k_type: 'q8_0', v_type: 'q8_0' } },
    };
    expect(kvCache(q8)?.size).toBe('23.91 MiB');
  });

  it('is null when the log says nothing about it', () => {
    expect(kvCache(null)).toBeNull();
    expect(kvCache({ more_llama_kv_caches: [], starts: [], default_scale_lines: [] })).toBeNull();
  });
});

describe('runnableCells', () => {
  const manifest = (cell: string, status: StoredManifest['status']): StoredManifest => ({
    id: 1,
    study_id: 1,
    cell,
    status,
    text: '{}',
    created_at: '',
    updated_at: '',
    problems: [],
  });

  it('offers frozen manifests only, in the order listed', () => {
    expect(runnableCells([manifest('B0', 'frozen'), manifest('C1', 'draft'), manifest('Q8', 'frozen')])).toEqual(['B0', 'Q8']);
  });
});

describe('formatNumber', () => {
  it('keeps up to three decimals and separates thousands; absent is absent', () => {
    expect(formatNumber(0.12345)).toBe('0.123');
    expect(formatNumber(12345)).toBe('12,345');
    expect(formatNumber(0)).toBe('0');
    expect(formatNumber(null)).toBe(ABSENT);
  });
});

describe('metricRows', () => {
  it('lists the metrics present, by name', () => {
    expect(metricRows({ requests_running: { max: 1 }, kv_cache_usage: { max: 0.2 }, requests_waiting: undefined })).toEqual([
      ['kv_cache_usage', { max: 0.2 }],
      ['requests_running', { max: 1 }],
    ]);
  });
});

describe('configBaseUrl', () => {
  it('reads the endpoint recorded in a run config', () => {
    expect(configBaseUrl({ endpoint: { base_url: 'http://127.0.0.1:4100', api: 'chat' } })).toBe('http://127.0.0.1:4100');
    expect(configBaseUrl({})).toBeNull();
    expect(configBaseUrl({ endpoint: 'x' })).toBeNull();
  });
});

describe('qualityRunInput', () => {
  const form: QualityForm = {
    studyId: 3,
    cell: 'B0',
    baseUrl: ' http://127.0.0.1:4100 ',
    startupLog: '/tmp/logs/f16.log',
    corpusDir: ' /tmp/corpus ',
    limit: 6,
    repeats: 1,
    seed: 1,
    warmup: 1,
  };

  it('builds the request the backend takes, trimmed', () => {
    expect(qualityRunInput(form)).toEqual({
      study_id: 3,
      cell: 'B0',
      base_url: 'http://127.0.0.1:4100',
      corpus_dir: '/tmp/corpus',
      limit: 6,
      repeats: 1,
      seed: 1,
      warmup: 1,
      startup_log: '/tmp/logs/f16.log',
    });
  });

  it('leaves an empty startup log out (the backend then finds the cell invalid)', () => {
    expect(qualityRunInput({ ...form, startupLog: '  ' })).not.toHaveProperty('startup_log');
  });

  it('names the field of the first problem', () => {
    expect(qualityRunInput({ ...form, cell: '' })).toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/^cell:/) });
    expect(qualityRunInput({ ...form, baseUrl: ' ' })).toMatchObject({ message: expect.stringMatching(/^endpoint:/) });
    expect(qualityRunInput({ ...form, corpusDir: '' })).toMatchObject({ message: expect.stringMatching(/^corpus folder:/) });
    expect(qualityRunInput({ ...form, limit: 0 })).toMatchObject({
      message: 'limit: expected a whole number of at least 1, found 0',
    });
    expect(qualityRunInput({ ...form, repeats: null })).toMatchObject({
      message: 'repeats: expected a whole number of at least 1, found nothing',
    });
    expect(qualityRunInput({ ...form, seed: 1.5 })).toMatchObject({ message: expect.stringMatching(/^seed:/) });
    expect(qualityRunInput({ ...form, warmup: 0 })).not.toHaveProperty('code');
    expect(qualityRunInput({ ...form, warmup: -1 })).toMatchObject({ message: expect.stringMatching(/^warm-up requests:/) });
  });
});

describe('requestStatusLabel', () => {
  it('calls a server refusal "refused": "rejected" is the validator\'s verdict only', () => {
    expect(requestStatusLabel('rejected')).toBe('refused');
    expect(requestStatusLabel('ok')).toBe('ok');
    expect(requestStatusLabel('timeout')).toBe('timeout');
  });
});

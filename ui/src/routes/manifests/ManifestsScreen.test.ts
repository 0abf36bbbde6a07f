import { fireEvent, render, screen, within } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import b0Fixture from '../../../../fixtures/manifests/llama31-8b-h100-b0.json?raw';
import c1Fixture from '../../../../fixtures/manifests/llama31-8b-h100-c1.json?raw';
import { ABSENT, formatTimestamp } from '$lib/format';
import type { DecisionTableRow } from '$lib/bindings/DecisionTableRow';
import type { ManifestCapacity } from '$lib/bindings/ManifestCapacity';
import type { ManifestDiff } from '$lib/bindings/ManifestDiff';
import type { ManifestVocabulary } from '$lib/bindings/ManifestVocabulary';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  appInfo: vi.fn(),
  listStudies: vi.fn(),
  createStudy: vi.fn(),
  openStudy: vi.fn(),
  lastOpenedStudy: vi.fn(),
  manifestVocabulary: vi.fn(),
  validateManifest: vi.fn(),
  listManifests: vi.fn(),
  saveManifestDraft: vi.fn(),
  deriveCandidate: vi.fn(),
  freezeManifest: vi.fn(),
  deleteManifestDraft: vi.fn(),
  diffManifests: vi.fn(),
  manifestCapacity: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { manifestSchema } from './manifest-form';
import ManifestsScreen from './ManifestsScreen.svelte';

const ipcMock = vi.mocked(ipc);

const study: Study = {
  id: 7,
  name: 'FP8 KV, Llama 8B',
  description: '',
  provenance: 'user',
  created_at: '2026-03-03T08:00:00Z',
};

const B0_ROW: DecisionTableRow = {
  test_cell: 'B0 approved precision',
  held_constant: 'Full production manifest',
  evidence_required: 'Per-class quality and SLO baseline',
  decision: 'Retain as rollback target',
};
const C1_ROW: DecisionTableRow = {
  test_cell: 'C1 supported FP8 default scales',
  held_constant: 'Weights, requests and scheduler',
  evidence_required: 'Effective scales; long-context and numeric failures',
  decision: 'Reject on any protected-segment gate breach',
};

const CAVEAT =
  'Simplified model of a homogeneous full-attention decoder (sliding-window layers allowed). It does not apply ' +
  'unchanged to latent-attention (MLA) or hybrid (state-space / linear-attention) models, and it excludes ' +
  'allocator overhead, temporary activations and replicated state.';
const COUPLING =
  'Do not silently switch kernels between C1 and C2 and attribute everything to calibration. Where coupling ' +
  'cannot be avoided, name the complete intervention and compare the deployment bundles rather than claiming a ' +
  'causal cache-only effect.';

const vocabulary: ManifestVocabulary = {
  engines: [
    { engine: 'vllm', kv_dtypes: ['auto', 'float16', 'bfloat16', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc'] },
    { engine: 'llama.cpp', kv_dtypes: ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'iq4_nl'] },
    { engine: 'other', kv_dtypes: [] },
  ],
  decision_table: [B0_ROW, C1_ROW],
  kv_capacity_caveat: CAVEAT,
  scale_tensor_patterns: [{ pattern: '*.k_scale', kind: 'k', origin: 'vLLM, llm-compressor, ModelOpt' }],
  coupling_warning: COUPLING,
};

const B0_DIGEST = '1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a';
const C1_DIGEST = 'c1'.repeat(32);

// A frozen manifest is stored as its canonical JSON.
const b0Frozen: StoredManifest = {
  id: 1,
  study_id: 7,
  cell: 'B0',
  status: 'frozen',
  digest: B0_DIGEST,
  text: JSON.stringify(JSON.parse(b0Fixture)),
  created_at: '2026-03-04T09:00:00Z',
  updated_at: '2026-03-04T09:30:00Z',
  frozen_at: '2026-03-04T09:30:00Z',
  problems: [],
  decision_row: B0_ROW,
};

const c1Problem = { path: 'effective_args.kv_cache_dtype', expected: 'the value of kv_dtype (`fp8_e4m3`)', found: '`auto`' };
const c1Draft: StoredManifest = {
  id: 2,
  study_id: 7,
  cell: 'C1',
  status: 'draft',
  text: c1Fixture,
  created_at: '2026-03-04T10:00:00Z',
  updated_at: '2026-03-04T10:00:00Z',
  problems: [c1Problem],
  decision_row: C1_ROW,
};

const capacity: ManifestCapacity = {
  cell: 'C1',
  per_token: {
    retained_positions: 1,
    reduced_layers: 32,
    skipped_layers: 0,
    sliding_window_layers: 0,
    payload_bytes: 65536,
    skipped_layers_bytes: 0,
    block_rounding_bytes: 0,
    per_block_scale_bytes: 0,
    per_head_scale_bytes: 0,
    per_tensor_scale_bytes: 256,
    total_bytes: 65792,
    caveat: CAVEAT,
  },
  full_context_sequence: {
    retained_positions: 16384,
    reduced_layers: 32,
    skipped_layers: 0,
    sliding_window_layers: 0,
    payload_bytes: 1073741824,
    skipped_layers_bytes: 0,
    block_rounding_bytes: 0,
    per_block_scale_bytes: 0,
    per_head_scale_bytes: 0,
    per_tensor_scale_bytes: 256,
    total_bytes: 1073742080,
    caveat: CAVEAT,
  },
  capacity: {
    budget_bytes: 17179869184,
    fixed_bytes: 256,
    bytes_per_position: 65536,
    positions: 262128,
    blocks: 16383,
    caveat: CAVEAT,
  },
  caveat: CAVEAT,
};

function setup(manifests: StoredManifest[] = [b0Frozen, c1Draft], current: Study | null = study): Workspace {
  ipcMock.listManifests.mockResolvedValue(manifests);
  const workspace = new Workspace();
  workspace.current = current;
  workspace.studiesState = 'ready';
  render(ManifestsScreen, { workspace });
  return workspace;
}

async function selectCell(cell: string) {
  const row = (await screen.findAllByTestId('manifest-row')).find(
    (r) => within(r).getByTestId('manifest-row-cell').textContent?.trim() === cell,
  );
  if (!row) throw new Error(`no row for ${cell}`);
  await fireEvent.click(within(row).getByTestId('manifest-row-select'));
  await screen.findByText(`Cell ${cell}`);
}

function json(): HTMLTextAreaElement {
  return screen.getByTestId('manifest-json') as HTMLTextAreaElement;
}

function field<T extends HTMLElement = HTMLInputElement>(path: string): T {
  return screen.getByTestId(`field-${path}`) as unknown as T;
}

function editorDoc(): Record<string, unknown> {
  return JSON.parse(json().value) as Record<string, unknown>;
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.manifestVocabulary.mockResolvedValue(vocabulary);
  ipcMock.validateManifest.mockResolvedValue({ problems: [c1Problem], cell: 'C1', decision_row: C1_ROW });
  ipcMock.manifestCapacity.mockResolvedValue(capacity);
});

afterEach(() => {
  vi.useRealTimers();
});

describe('Manifests screen', () => {
  it('asks for a study first when none is open', () => {
    setup([], null);
    const message = screen.getByTestId('manifests-no-study');
    expect(message.textContent).toContain('Open a study first');
    expect(within(message).getByRole('link', { name: 'Go to Studies' }).getAttribute('href')).toBe('#/studies');
    expect(ipcMock.listManifests).not.toHaveBeenCalled();
  });

  it('lists the study manifests with status, short digest and the decision-table row', async () => {
    setup();
    const rows = await screen.findAllByTestId('manifest-row');
    expect(ipcMock.listManifests).toHaveBeenCalledWith(7);
    expect(rows.map((r) => within(r).getByTestId('manifest-row-cell').textContent?.trim())).toEqual(['B0', 'C1']);
    expect(rows.map((r) => within(r).getByTestId('manifest-row-status').textContent)).toEqual(['frozen', 'draft']);

    const digest = within(rows[0]!).getByTestId('manifest-row-digest');
    expect(digest.textContent).toBe(B0_DIGEST.slice(0, 12));
    expect(digest.getAttribute('title')).toBe(B0_DIGEST);
    expect(within(rows[1]!).getByTestId('manifest-row-digest').textContent).toBe(ABSENT);
    expect(within(rows[1]!).getByTestId('manifest-row-digest').getAttribute('title')).toMatch(/^absent: a draft has no digest/);

    expect(within(rows[1]!).getByTestId('manifest-row-problems').textContent?.trim()).toBe('1');
    expect(within(rows[0]!).getByTestId('manifest-row-problems').textContent?.trim()).toBe('');
    expect(within(rows[0]!).getByText('Retain as rollback target')).toBeTruthy();
    expect(within(rows[1]!).getByText('Weights, requests and scheduler')).toBeTruthy();
    expect(within(rows[1]!).getByText('Effective scales; long-context and numeric failures')).toBeTruthy();
  });

  it('says so when the study has no manifests', async () => {
    setup([]);
    expect((await screen.findByTestId('manifests-empty')).textContent).toContain('No manifests yet');
  });

  it('shows a failed list load instead of an empty list', async () => {
    ipcMock.listManifests.mockRejectedValue({ code: 'storage', message: 'database is locked' });
    const workspace = new Workspace();
    workspace.current = study;
    workspace.studiesState = 'ready';
    render(ManifestsScreen, { workspace });
    expect((await screen.findByTestId('manifests-error')).textContent).toContain('database is locked');
    expect(screen.queryByTestId('manifests-empty')).toBeNull();
  });

  it('renders a form field for every property of the manifest schema, in sections', async () => {
    // A draft is edited in the form (a frozen manifest is read in its compact view).
    const { digest: _digest, frozen_at: _frozenAt, ...rest } = b0Frozen;
    void _digest;
    void _frozenAt;
    setup([{ ...rest, status: 'draft', text: b0Fixture }, c1Draft]);
    await screen.findByText('Cell B0');
    for (const name of Object.keys(manifestSchema.properties ?? {})) {
      const found = screen.queryByTestId(`field-${name}`) ?? screen.queryByTestId(`fieldset-${name}`);
      expect(found, name).not.toBeNull();
    }
    const sections = screen.getAllByRole('heading', { level: 3 }).map((h) => h.textContent);
    expect(sections).toEqual(
      expect.arrayContaining([
        'Identity & cell',
        'Engine & image',
        'Model & weights',
        'Attention & KV',
        'Serving parameters',
        'Decoding & stopping',
        'Corpora & evaluator',
      ]),
    );
    // Widgets follow the schema types.
    expect(field('kv_dtype').value).toBe('auto');
    expect(field('decoding.temperature').type).toBe('number');
    expect(field('decoding.temperature').value).toBe('0');
    expect(field('decoding.top_p').value).toBe('1');
    expect(field('decoding.min_p').value).toBe('');
    expect(field('gpu_inventory[0].memory_bytes').value).toBe('85520809984');
    expect(field<HTMLSelectElement>('engine').value).toBe('vllm');
    expect([...field<HTMLSelectElement>('scale_source').options].map((o) => o.value)).toEqual([
      '',
      'default',
      'checkpoint',
      'runtime',
    ]);
    expect([...field<HTMLSelectElement>('scales_observed_loaded').options].map((o) => o.textContent)).toEqual([
      'unknown (absent)',
      'true',
      'false',
    ]);
    expect(field('skipped_layers').value).toBe('');
    expect(field('effective_args.kv_cache_dtype').value).toBe('auto');
    expect(screen.getByTestId('fieldset-model_geometry')).toBeTruthy();
    // kv_dtype suggests the selected engine's values.
    const list = screen.getByTestId('values-kv_dtype');
    expect(field('kv_dtype').getAttribute('list')).toBe(list.id);
    expect([...list.querySelectorAll('option')].map((o) => o.value)).toEqual(vocabulary.engines[0]!.kv_dtypes);
  });

  it('keeps the form and the JSON text in sync; an emptied optional field is omitted, never 0', async () => {
    setup();
    await selectCell('C1');
    await fireEvent.input(field('decoding.top_p'), { target: { value: '' } });
    let doc = editorDoc();
    expect(doc.decoding).toEqual({ temperature: 0, seed: 1234 });

    await fireEvent.input(field('decoding.min_p'), { target: { value: '0.05' } });
    await fireEvent.input(field('kv_dtype'), { target: { value: 'fp8' } });
    await fireEvent.change(field<HTMLSelectElement>('scales_observed_loaded'), { target: { value: 'true' } });
    await fireEvent.input(field('skipped_layers'), { target: { value: '0, 31, sliding_window' } });
    await fireEvent.input(field('effective_args.kv_cache_dtype'), { target: { value: 'fp8' } });
    doc = editorDoc();
    expect(doc.decoding).toEqual({ temperature: 0, seed: 1234, min_p: 0.05 });
    expect(doc.kv_dtype).toBe('fp8');
    expect(doc.scales_observed_loaded).toBe(true);
    expect(doc.skipped_layers).toEqual([0, 31, 'sliding_window']);
    expect((doc.effective_args as Record<string, string>).kv_cache_dtype).toBe('fp8');

    await fireEvent.change(field<HTMLSelectElement>('scales_observed_loaded'), { target: { value: '' } });
    await fireEvent.input(field('label'), { target: { value: '' } });
    doc = editorDoc();
    expect('scales_observed_loaded' in doc).toBe(false);
    expect('label' in doc).toBe(false);

    // Typing JSON updates the form.
    const pasted = { ...JSON.parse(c1Fixture), kv_dtype: 'fp8_e5m2', label: 'pasted' };
    await fireEvent.input(json(), { target: { value: JSON.stringify(pasted, null, 2) } });
    expect(field('kv_dtype').value).toBe('fp8_e5m2');
    expect(field('label').value).toBe('pasted');
    const unsaved = screen.getAllByTestId('manifest-row-unsaved');
    expect(unsaved.map((u) => u.closest('tr')?.dataset.cell)).toEqual(['C1']);

    await fireEvent.input(json(), { target: { value: '{"cell": "C1",' } });
    expect(screen.getByTestId('form-unavailable').textContent).toContain('does not parse');
  });

  it('shows each problem the backend reports beside its field and in the summary', async () => {
    ipcMock.validateManifest.mockResolvedValue({
      problems: [
        { path: 'decoding.top_p', expected: 'a number in (0, 1]', found: '0' },
        { path: 'skipped_layers[2]', expected: 'a layer index below model_geometry.num_layers (32)', found: '32' },
        c1Problem,
        { path: '$', expected: 'a JSON object', found: 'nothing' },
      ],
      cell: 'C1',
      decision_row: C1_ROW,
    });
    setup();
    await selectCell('C1');
    await fireEvent.input(field('decoding.top_p'), { target: { value: '0' } });

    await vi.waitFor(() => expect(screen.getAllByTestId('manifest-problem')).toHaveLength(4));
    expect(ipcMock.validateManifest).toHaveBeenLastCalledWith(json().value);
    expect(screen.getAllByTestId('manifest-problem').map((p) => p.dataset.path)).toEqual([
      'decoding.top_p',
      'skipped_layers[2]',
      'effective_args.kv_cache_dtype',
      '$',
    ]);

    const besideTopP = within(field('decoding.top_p').closest('.field') as HTMLElement).getByTestId('field-problem');
    expect(besideTopP.dataset.path).toBe('decoding.top_p');
    expect(besideTopP.textContent).toContain('expected a number in (0, 1], found 0');
    expect(field('decoding.top_p').getAttribute('aria-invalid')).toBe('true');
    expect(field('decoding.top_p').getAttribute('aria-describedby')).toContain(besideTopP.parentElement!.id);

    const besideLayers = within(field('skipped_layers').closest('.field') as HTMLElement).getByTestId('field-problem');
    expect(besideLayers.dataset.path).toBe('skipped_layers[2]');

    const argRow = field('effective_args.kv_cache_dtype');
    expect(argRow.getAttribute('aria-invalid')).toBe('true');
    expect(
      screen.getAllByTestId('field-problem').map((p) => p.dataset.path).sort(),
    ).toEqual(['decoding.top_p', 'effective_args.kv_cache_dtype', 'skipped_layers[2]']);
    // The freeze button waits until the backend reports no problem.
    const freeze = screen.getByTestId('manifest-freeze') as HTMLButtonElement;
    expect(freeze.disabled).toBe(true);
  });

  it('validates once per pause in typing, not per keystroke', async () => {
    setup();
    await selectCell('C1');
    await vi.waitFor(() => expect(ipcMock.validateManifest).toHaveBeenCalledTimes(1));
    vi.useFakeTimers();
    for (const value of ['f', 'fp', 'fp8']) {
      await fireEvent.input(field('kv_dtype'), { target: { value } });
      vi.advanceTimersByTime(100);
    }
    expect(ipcMock.validateManifest).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(250);
    expect(ipcMock.validateManifest).toHaveBeenCalledTimes(2);
    expect(JSON.parse(ipcMock.validateManifest.mock.calls[1]![0]).kv_dtype).toBe('fp8');
  });

  it('freezes a draft without problems after a confirmation that shows the full digest', async () => {
    ipcMock.validateManifest.mockResolvedValue({ problems: [], digest: C1_DIGEST, cell: 'C1', decision_row: C1_ROW });
    const frozenC1: StoredManifest = {
      ...c1Draft,
      status: 'frozen',
      digest: C1_DIGEST,
      frozen_at: '2026-03-04T11:00:00Z',
      problems: [],
    };
    ipcMock.freezeManifest.mockResolvedValue(frozenC1);
    setup();
    await selectCell('C1');
    const freeze = screen.getByTestId('manifest-freeze') as HTMLButtonElement;
    await vi.waitFor(() => expect(freeze.disabled).toBe(false));
    expect(screen.getByTestId('manifest-valid').textContent).toContain(C1_DIGEST);

    // Esc cancels.
    await fireEvent.click(freeze);
    let dialog = screen.getByTestId('freeze-dialog');
    expect(within(dialog).getByTestId('freeze-digest').textContent).toBe(C1_DIGEST);
    expect(dialog.textContent).toContain('can never change');
    expect(document.activeElement).toBe(within(dialog).getByTestId('freeze-cancel'));
    // Tab stays inside the dialog.
    const confirm = within(dialog).getByTestId('freeze-confirm');
    confirm.focus();
    await fireEvent.keyDown(dialog, { key: 'Tab' });
    expect(document.activeElement).toBe(within(dialog).getByTestId('freeze-cancel'));
    await fireEvent.keyDown(dialog, { key: 'Tab', shiftKey: true });
    expect(document.activeElement).toBe(confirm);
    await fireEvent.keyDown(dialog, { key: 'Escape' });
    expect(screen.queryByTestId('freeze-dialog')).toBeNull();
    expect(document.activeElement).toBe(freeze);
    expect(ipcMock.freezeManifest).not.toHaveBeenCalled();

    await fireEvent.click(freeze);
    dialog = screen.getByTestId('freeze-dialog');
    await fireEvent.click(within(dialog).getByTestId('freeze-confirm'));
    expect(ipcMock.freezeManifest).toHaveBeenCalledWith(7, 'C1', C1_DIGEST);
    await vi.waitFor(() => expect(screen.queryByTestId('freeze-dialog')).toBeNull());
    const rows = screen.getAllByTestId('manifest-row');
    expect(within(rows[1]!).getByTestId('manifest-row-status').textContent).toBe('frozen');
    expect(within(rows[1]!).getByTestId('manifest-row-digest').textContent).toBe('c1c1c1c1c1c1');
    expect(screen.getByTestId('frozen-banner').textContent).toContain(C1_DIGEST);
  });

  it('keeps the dialog open with the reason when the backend refuses to freeze', async () => {
    ipcMock.validateManifest.mockResolvedValue({ problems: [], digest: C1_DIGEST, cell: 'C1' });
    ipcMock.freezeManifest.mockRejectedValue({
      code: 'conflict',
      message: 'manifest C1: expected digest c1c1… (the one confirmed), found 0d0d…',
    });
    setup();
    await selectCell('C1');
    const freeze = screen.getByTestId('manifest-freeze') as HTMLButtonElement;
    await vi.waitFor(() => expect(freeze.disabled).toBe(false));
    await fireEvent.click(freeze);
    await fireEvent.click(screen.getByTestId('freeze-confirm'));
    expect((await screen.findByTestId('freeze-error')).textContent).toContain('the one confirmed');
    expect(screen.getByTestId('freeze-dialog')).toBeTruthy();
  });

  it('does not offer freezing while the editor holds unsaved changes', async () => {
    ipcMock.validateManifest.mockResolvedValue({ problems: [], digest: C1_DIGEST, cell: 'C1' });
    setup();
    await selectCell('C1');
    await fireEvent.input(field('label'), { target: { value: 'changed' } });
    await vi.waitFor(() => expect(screen.queryByTestId('manifest-valid')).not.toBeNull());
    expect((screen.getByTestId('manifest-freeze') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('freeze-blocker').textContent).toContain('Save the draft');
  });

  it('shows a frozen manifest read-only with its digest and time', async () => {
    setup();
    await screen.findByText('Cell B0');
    const banner = screen.getByTestId('frozen-banner');
    expect(banner.textContent).toContain(`Frozen ${formatTimestamp('2026-03-04T09:30:00Z')}`);
    expect(banner.querySelector('time')?.getAttribute('datetime')).toBe('2026-03-04T09:30:00Z');
    expect(banner.querySelector('time')?.getAttribute('title')).toBe('2026-03-04T09:30:00Z');
    expect(banner.textContent).toContain(`sha256 ${B0_DIGEST}`);
    // A compact read-only view of what is set, not a greyed form of every field.
    expect(screen.queryByTestId('manifest-form')).toBeNull();
    expect(screen.queryByTestId('field-kv_dtype')).toBeNull();
    const view = screen.getByTestId('manifest-frozen-view');
    expect(view.querySelectorAll('input, select, textarea')).toHaveLength(0);
    const shown = (name: string) => view.querySelector(`[data-field="${name}"]`)?.textContent?.trim();
    const b0 = JSON.parse(b0Fixture) as Record<string, unknown>;
    expect(shown('kv_dtype')).toBe(b0['kv_dtype']);
    expect(shown('cell')).toBe('B0');
    expect(shown('candidate_id')).toBeUndefined();
    expect(screen.getByTestId('frozen-unset').textContent).toContain('candidate_id');
    const setKeys = Object.keys(b0).filter((k) => b0[k] !== null);
    expect(within(view).getAllByTestId('frozen-field').map((f) => f.dataset['field']).sort()).toEqual(setKeys.sort());
    expect(json().readOnly).toBe(true);
    expect(JSON.parse(json().value)).toEqual(JSON.parse(b0Fixture));
    expect(screen.queryByTestId('manifest-save')).toBeNull();
    expect(screen.queryByTestId('manifest-freeze')).toBeNull();
    expect(screen.queryByTestId('manifest-delete')).toBeNull();
    await fireEvent.keyDown(window, { key: 's', ctrlKey: true });
    await fireEvent.input(json(), { target: { value: '{}' } });
    expect(ipcMock.saveManifestDraft).not.toHaveBeenCalled();
    expect(screen.queryByTestId('manifest-row-unsaved')).toBeNull();
    expect(ipcMock.validateManifest).not.toHaveBeenCalled();
  });

  it('saves the draft with Ctrl+S and takes the stored answer', async () => {
    setup();
    await selectCell('C1');
    await fireEvent.input(field('kv_dtype'), { target: { value: 'fp8' } });
    const text = json().value;
    ipcMock.saveManifestDraft.mockResolvedValue({ ...c1Draft, text, updated_at: '2026-03-04T10:05:00Z', problems: [] });
    await fireEvent.keyDown(window, { key: 's', ctrlKey: true });
    expect(ipcMock.saveManifestDraft).toHaveBeenCalledWith(7, text);
    await vi.waitFor(() => expect(screen.queryByTestId('manifest-row-unsaved')).toBeNull());
    expect(within(screen.getAllByTestId('manifest-row')[1]!).getByTestId('manifest-row-problems').textContent?.trim()).toBe('0');
  });

  it('shows a rejected save inline and keeps the edit', async () => {
    ipcMock.saveManifestDraft.mockRejectedValue({ code: 'invalid_input', message: 'cell: expected a cell name such as "B0" or "C1", found nothing' });
    setup();
    await selectCell('C1');
    await fireEvent.input(json(), { target: { value: '{"baseline_id": "x"}' } });
    await fireEvent.click(screen.getByTestId('manifest-save'));
    expect((await screen.findByTestId('manifest-action-error')).textContent).toContain('found nothing');
    expect(json().value).toBe('{"baseline_id": "x"}');
  });

  it('starts a new B0 from a skeleton and saves it', async () => {
    setup([]);
    await screen.findByTestId('manifests-empty');
    await fireEvent.click(screen.getByTestId('manifest-new-b0'));
    expect(JSON.parse(json().value)).toEqual({ cell: 'B0' });
    expect(screen.getByText('New manifest (not saved)')).toBeTruthy();
    expect(field('cell').value).toBe('B0');
    // Nothing typed yet: no list of what is missing (though the backend found some), only how to go on.
    await vi.waitFor(() => expect(ipcMock.validateManifest).toHaveBeenCalledWith(json().value));
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.getByTestId('manifest-new-hint')).toBeTruthy();
    expect(screen.queryAllByTestId('manifest-problem')).toHaveLength(0);
    expect(screen.queryAllByTestId('field-problem')).toHaveLength(0);
    await fireEvent.input(field('baseline_id'), { target: { value: 'llama31-8b-h100-b0' } });
    expect(screen.queryByTestId('manifest-new-hint')).toBeNull();
    const text = json().value;
    ipcMock.saveManifestDraft.mockResolvedValue({ ...c1Draft, id: 3, cell: 'B0', text, decision_row: B0_ROW });
    await fireEvent.click(screen.getByTestId('manifest-save'));
    expect(ipcMock.saveManifestDraft).toHaveBeenCalledWith(7, text);
    expect(await screen.findByText('Cell B0')).toBeTruthy();
    expect(screen.getAllByTestId('manifest-row')).toHaveLength(1);
  });

  it('imports a JSON file as a draft, and shows a refused file inline', async () => {
    setup([b0Frozen]);
    await screen.findAllByTestId('manifest-row');
    const input = screen.getByTestId('manifest-import') as HTMLInputElement;
    expect(input.type).toBe('file');
    expect(input.accept).toBe('.json,application/json');

    ipcMock.saveManifestDraft.mockRejectedValueOnce({
      code: 'invalid_input',
      message: 'manifest JSON, line 1 column 2: expected valid JSON, found an error: EOF',
    });
    await fireEvent.change(input, { target: { files: [new File(['{'], 'broken.json', { type: 'application/json' })] } });
    const error = await screen.findByTestId('import-error');
    expect(error.textContent).toContain('broken.json: manifest JSON, line 1 column 2');

    ipcMock.saveManifestDraft.mockResolvedValueOnce(c1Draft);
    await fireEvent.change(input, { target: { files: [new File([c1Fixture], 'c1.json', { type: 'application/json' })] } });
    await vi.waitFor(() => expect(ipcMock.saveManifestDraft).toHaveBeenLastCalledWith(7, c1Fixture));
    expect(await screen.findByText('Cell C1')).toBeTruthy();
    expect(screen.queryByTestId('import-error')).toBeNull();
  });

  it('derives a candidate under the name given in the dialog', async () => {
    const derived: StoredManifest = { ...c1Draft, id: 4, cell: 'C2', text: b0Fixture.replace('"B0"', '"C2"'), decision_row: undefined };
    ipcMock.deriveCandidate.mockRejectedValueOnce({ code: 'conflict', message: 'a manifest for cell "C1" exists' });
    ipcMock.deriveCandidate.mockResolvedValueOnce(derived);
    setup();
    await screen.findAllByTestId('manifest-row');
    await fireEvent.click(screen.getByTestId('manifest-derive'));
    const dialog = screen.getByTestId('derive-dialog');
    const name = within(dialog).getByTestId('derive-cell') as HTMLInputElement;
    expect(name.value).toBe('C1');
    expect((within(dialog).getByTestId('derive-from') as HTMLSelectElement).value).toBe('B0');
    expect(document.activeElement).toBe(name);

    await fireEvent.click(within(dialog).getByTestId('derive-confirm'));
    expect(ipcMock.deriveCandidate).toHaveBeenCalledWith(7, 'B0', 'C1');
    expect((await within(dialog).findByTestId('derive-error')).textContent).toContain('exists');

    await fireEvent.input(name, { target: { value: 'C2' } });
    await fireEvent.click(within(dialog).getByTestId('derive-confirm'));
    expect(ipcMock.deriveCandidate).toHaveBeenLastCalledWith(7, 'B0', 'C2');
    expect(await screen.findByText('Cell C2')).toBeTruthy();
    expect(screen.queryByTestId('derive-dialog')).toBeNull();
    expect(screen.getAllByTestId('manifest-row')).toHaveLength(3);
  });

  it('reaches the comparison from the top: the toolbar, and "vs B0" on a row compares at once', async () => {
    ipcMock.diffManifests.mockResolvedValue({
      reference_cell: 'B0',
      candidate_cell: 'C1',
      reference_digest: B0_DIGEST,
      findings: [],
      red: 0,
      amber: 0,
      info: 0,
    });
    setup();
    await screen.findAllByTestId('manifest-row');
    await fireEvent.click(screen.getByTestId('manifest-compare-open'));
    expect(document.activeElement).toBe(screen.getByTestId('diff-reference'));
    expect(ipcMock.diffManifests).not.toHaveBeenCalled();

    const c1Row = screen.getAllByTestId('manifest-row').find((r) => r.dataset['cell'] === 'C1')!;
    await fireEvent.click(within(c1Row).getByTestId('manifest-row-compare'));
    expect(ipcMock.diffManifests).toHaveBeenCalledWith(7, 'B0', 'C1');
    expect(await screen.findByTestId('diff-identical')).toBeTruthy();
    // B0 is the reference: its own row offers no comparison with itself.
    const b0Row = screen.getAllByTestId('manifest-row').find((r) => r.dataset['cell'] === 'B0')!;
    expect(within(b0Row).queryByTestId('manifest-row-compare')).toBeNull();
  });

  it('compares two manifests and styles each finding by severity', async () => {
    const diff: ManifestDiff = {
      reference_cell: 'B0',
      candidate_cell: 'C1',
      reference_digest: B0_DIGEST,
      findings: [
        {
          path: 'weights_digest',
          kind: 'hidden_weight_change',
          severity: 'red',
          reference_value: '"cf6f"',
          candidate_value: '"0000"',
          message: "hidden weight change: the weight tensors differ from B0's; the experiment must change the KV representation only",
        },
        {
          path: 'decoding.temperature',
          kind: 'held_constant_violation',
          severity: 'red',
          reference_value: '0',
          candidate_value: '0.7',
          message: '`decoding.temperature` must be held constant but differs from B0',
        },
        {
          path: 'query_attention_precision',
          kind: 'coupled_intervention',
          severity: 'amber',
          reference_value: '"bfloat16"',
          candidate_value: '"fp8_e4m3"',
          message: 'coupled intervention: `query_attention_precision` changes together with the KV representation',
        },
        {
          path: 'kv_dtype',
          kind: 'intervention',
          severity: 'info',
          reference_value: '"auto"',
          candidate_value: '"fp8"',
          message: '`kv_dtype` is part of the KV intervention; expected to differ',
        },
        {
          path: 'candidate_id',
          kind: 'identity',
          severity: 'info',
          candidate_value: '"llama31-8b-h100-c1"',
          message: '`candidate_id` names the bundle; expected to differ',
        },
      ],
      red: 2,
      amber: 1,
      info: 2,
      coupling_warning: COUPLING,
    };
    ipcMock.diffManifests.mockResolvedValue(diff);
    setup();
    await screen.findAllByTestId('manifest-row');
    expect((screen.getByTestId('diff-reference') as HTMLSelectElement).value).toBe('B0');
    expect((screen.getByTestId('diff-candidate') as HTMLSelectElement).value).toBe('C1');
    await fireEvent.click(screen.getByTestId('diff-run'));
    expect(ipcMock.diffManifests).toHaveBeenCalledWith(7, 'B0', 'C1');

    const rows = await screen.findAllByTestId('diff-row');
    expect(rows.map((r) => [r.dataset.path, r.dataset.severity, r.dataset.kind])).toEqual([
      ['weights_digest', 'red', 'hidden_weight_change'],
      ['decoding.temperature', 'red', 'held_constant_violation'],
      ['query_attention_precision', 'amber', 'coupled_intervention'],
      ['kv_dtype', 'info', 'intervention'],
      ['candidate_id', 'info', 'identity'],
    ]);
    expect(rows[0]!.classList.contains('severity-red')).toBe(true);
    expect(rows[1]!.classList.contains('severity-red')).toBe(true);
    expect(rows[2]!.classList.contains('severity-amber')).toBe(true);
    expect(rows[3]!.classList.contains('severity-info')).toBe(true);
    expect(within(rows[3]!).getByText('"auto"')).toBeTruthy();
    expect(within(rows[3]!).getByText('"fp8"')).toBeTruthy();
    expect(within(rows[4]!).getByText('absent')).toBeTruthy();

    expect(screen.getByTestId('diff-red-count').textContent).toBe('2');
    expect(screen.getByTestId('diff-amber-count').textContent).toBe('1');
    expect(screen.getByTestId('diff-info-count').textContent).toBe('2');
    const alarm = screen.getByTestId('diff-hidden-weight-change');
    expect(alarm.getAttribute('role')).toBe('alert');
    expect(alarm.textContent).toContain("the weight tensors differ from B0's");
    expect(screen.getByTestId('diff-coupling-warning').textContent).toBe(COUPLING);
  });

  it('shows the KV capacity of the selected manifest with the caveat verbatim', async () => {
    setup();
    await selectCell('C1');
    const panel = await screen.findByTestId('capacity-panel');
    await vi.waitFor(() => expect(within(panel).getByTestId('capacity-total-bytes')).toBeTruthy());
    expect(ipcMock.manifestCapacity).toHaveBeenLastCalledWith(7, 'C1');
    const total = within(panel).getByTestId('capacity-total-bytes');
    expect(total.textContent).toBe('64.25 KiB');
    expect(total.getAttribute('title')).toBe('65,792 bytes');
    expect(total.dataset.bytes).toBe('65792');
    expect(within(panel).getByTestId('capacity-payload-bytes').textContent).toBe('64.00 KiB');
    expect(within(panel).getByTestId('capacity-payload-bytes').getAttribute('title')).toBe('65,536 bytes');
    const full = within(panel).getByTestId('capacity-full-context-bytes');
    expect(full.dataset.bytes).toBe('1073742080');
    expect(full.textContent?.trim()).toBe('1.00 GiB');
    expect(full.getAttribute('title')).toBe('1,073,742,080 bytes');
    expect(within(panel).getByTestId('capacity-positions').textContent).toBe('262,128');
    expect(within(panel).getByTitle('17,179,869,184 bytes').textContent).toBe('16.00 GiB');
    const caveats = within(panel).getAllByTestId('capacity-caveat');
    expect(caveats.map((c) => c.textContent)).toEqual([CAVEAT]);
  });

  it('shows whether B0 still fits the candidate admission limit', async () => {
    ipcMock.manifestCapacity.mockResolvedValue({
      ...capacity,
      rollback_fit: {
        required_bytes: 137438953472,
        budget_bytes: 17179869184,
        fits: false,
        shortfall_bytes: 120259084288,
        max_sequences_that_fit: 8,
        caveat: CAVEAT,
      },
    });
    setup();
    await selectCell('C1');
    const fit = await screen.findByTestId('rollback-fit');
    expect(fit.dataset.fits).toBe('false');
    expect(fit.textContent).toContain('Reduce admission to');
    expect(fit.textContent).toContain('8 sequences');
  });

  it('says why the rollback fit is missing', async () => {
    ipcMock.manifestCapacity.mockResolvedValue({
      ...capacity,
      rollback_fit_missing: 'rollback fit needs the KV budget of C1',
    });
    setup();
    await selectCell('C1');
    const missing = await screen.findByTestId('rollback-fit-missing');
    expect(missing.textContent).toBe('rollback fit needs the KV budget of C1');
  });

  it('shows the backend error when the capacity cannot be computed', async () => {
    ipcMock.manifestCapacity.mockRejectedValue({
      code: 'invalid_input',
      message: 'manifest C1: model_geometry is missing',
    });
    setup();
    await selectCell('C1');
    const error = await screen.findByTestId('capacity-error');
    expect(error.textContent).toContain('model_geometry is missing');
  });

  it('exports the stored text as <cell>.manifest.json', async () => {
    const created: Blob[] = [];
    const createObjectURL = vi.fn((blob: Blob) => {
      created.push(blob);
      return 'blob:manifest';
    });
    const revokeObjectURL = vi.fn();
    Object.assign(URL, { createObjectURL, revokeObjectURL });
    const clicked: HTMLAnchorElement[] = [];
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push(this);
    });
    setup();
    await selectCell('C1');
    await fireEvent.click(screen.getByTestId('manifest-export'));
    expect(clicked).toHaveLength(1);
    expect(clicked[0]!.download).toBe('C1.manifest.json');
    expect(clicked[0]!.href).toBe('blob:manifest');
    expect(await created[0]!.text()).toBe(c1Fixture);
    click.mockRestore();
  });
});

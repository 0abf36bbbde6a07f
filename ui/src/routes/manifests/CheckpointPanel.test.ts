import { fireEvent, render, screen } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { CheckpointDigest } from '$lib/bindings/CheckpointDigest';

const ipcMock = vi.hoisted(() => ({
  digestWeights: vi.fn(),
  cancelWeightsDigest: vi.fn(),
  onWeightsProgress: vi.fn(),
  choosePath: vi.fn(),
  toAppError: (reason: unknown) => reason,
}));
vi.mock('$lib/ipc', () => ipcMock);

import CheckpointPanel from './CheckpointPanel.svelte';

const digest: CheckpointDigest = {
  format: 'safetensors',
  files: ['model.safetensors'],
  digest_scheme: 'kvgate-weights-v1',
  weights_digest: 'a'.repeat(64),
  weight_tensor_count: 3,
  weight_bytes: 24,
  scale_tensor_count: 1,
  scale_bytes: 4,
  scales_digest: 'b'.repeat(64),
  scale_granularity: 'per_tensor',
  tensors: [],
  scale_tensors: [
    {
      name: 'model.layers.0.self_attn.k_scale',
      dtype: 'F32',
      shape: [],
      bytes: 4,
      sha256: 'c'.repeat(64),
      pattern: '*.k_scale',
      kind: 'k',
      layer: 0,
      granularity: 'per_tensor',
      min: 0.5,
      max: 0.5,
      non_finite: 0,
    },
  ],
  notes: [],
};

describe('CheckpointPanel', () => {
  beforeEach(() => {
    vi.clearAllMocks();
    ipcMock.onWeightsProgress.mockResolvedValue(() => {});
  });

  it('computes the digests and applies them to the draft', async () => {
    ipcMock.digestWeights.mockResolvedValue(digest);
    const onapply = vi.fn();
    render(CheckpointPanel, {
      onapply,
      disabled: false,
      patterns: [{ pattern: '*.k_scale', kind: 'k', origin: 'vLLM' }],
    });
    expect(screen.getByTestId('checkpoint-patterns').textContent).toContain('*.k_scale');
    await fireEvent.input(screen.getByTestId('checkpoint-path'), { target: { value: '/models/c2' } });
    await fireEvent.click(screen.getByTestId('checkpoint-compute'));
    expect((await screen.findByTestId('checkpoint-weights-digest')).textContent).toBe('a'.repeat(64));
    expect(ipcMock.digestWeights).toHaveBeenCalledWith('/models/c2');
    expect(screen.getByTestId('checkpoint-scale-count').textContent).toBe('1');
    expect(screen.getByText('model.layers.0.self_attn.k_scale')).toBeTruthy();
    await fireEvent.click(screen.getByTestId('checkpoint-apply'));
    expect(onapply).toHaveBeenCalledWith({
      weights_digest: 'a'.repeat(64),
      scale_artifact_sha256: 'b'.repeat(64),
      scale_granularity: 'per_tensor',
    });
  });

  it('shows the backend error, naming the file', async () => {
    ipcMock.digestWeights.mockRejectedValue({ code: 'storage', message: 'file `/nope`: No such file' });
    render(CheckpointPanel, { onapply: vi.fn(), disabled: false, patterns: [] });
    await fireEvent.input(screen.getByTestId('checkpoint-path'), { target: { value: '/nope' } });
    await fireEvent.click(screen.getByTestId('checkpoint-compute'));
    expect((await screen.findByTestId('checkpoint-error')).textContent).toContain('/nope');
  });

  it('takes the checkpoint from the open dialog, as a file or a folder', async () => {
    ipcMock.choosePath.mockImplementation(async (kind: string) => (kind === 'checkpoint_file' ? '/models/c2/model.gguf' : '/models/c2'));
    render(CheckpointPanel, { onapply: vi.fn(), disabled: false, patterns: [] });
    const field = screen.getByTestId('checkpoint-path') as HTMLInputElement;
    await fireEvent.click(screen.getByTestId('checkpoint-path-file'));
    await vi.waitFor(() => expect(field.value).toBe('/models/c2/model.gguf'));
    await fireEvent.click(screen.getByTestId('checkpoint-path-folder'));
    await vi.waitFor(() => expect(field.value).toBe('/models/c2'));
    expect(ipcMock.choosePath.mock.calls).toEqual([['checkpoint_file'], ['checkpoint_folder']]);
    expect(ipcMock.digestWeights).not.toHaveBeenCalled();
  });

  it('says why the dialog could not give a path, and keeps the typed one', async () => {
    ipcMock.choosePath.mockRejectedValue({ code: 'invalid_input', message: 'the path is not valid UTF-8; rename it or type another' });
    render(CheckpointPanel, { onapply: vi.fn(), disabled: false, patterns: [] });
    await fireEvent.input(screen.getByTestId('checkpoint-path'), { target: { value: '/typed' } });
    await fireEvent.click(screen.getByTestId('checkpoint-path-folder'));
    expect((await screen.findByTestId('checkpoint-path-folder-error')).textContent).toContain('not valid UTF-8');
    expect((screen.getByTestId('checkpoint-path') as HTMLInputElement).value).toBe('/typed');
  });
});

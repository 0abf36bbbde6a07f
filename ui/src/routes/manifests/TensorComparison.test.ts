import { fireEvent, render, screen } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const ipcMock = vi.hoisted(() => ({
  compareWeights: vi.fn(),
  cancelWeightsDigest: vi.fn(),
  onWeightsProgress: vi.fn(),
  choosePath: vi.fn(),
  toAppError: (reason: unknown) => reason,
}));
vi.mock('$lib/ipc', () => ipcMock);

import TensorComparison from './TensorComparison.svelte';

describe('TensorComparison', () => {
  beforeEach(() => {
    vi.clearAllMocks();
    ipcMock.onWeightsProgress.mockResolvedValue(() => {});
  });

  it('lists each differing tensor with what differs', async () => {
    ipcMock.compareWeights.mockResolvedValue({
      base: {},
      candidate: {},
      comparison: {
        verdict: {
          kind: 'weights_differ',
          differences: [
            { name: 'model.layers.3.mlp.down_proj.weight', what: 'bytes', base: 'aa', candidate: 'bb' },
            { name: 'lm_head.weight', what: 'missing', base: 'cc' },
          ],
        },
      },
    });
    render(TensorComparison);
    await fireEvent.input(screen.getByTestId('tensor-base'), { target: { value: '/m/b0' } });
    await fireEvent.input(screen.getByTestId('tensor-candidate'), { target: { value: '/m/c2' } });
    await fireEvent.click(screen.getByTestId('tensor-compare'));
    expect((await screen.findByTestId('tensor-verdict')).textContent).toBe('weights differ (2 tensors)');
    expect(ipcMock.compareWeights).toHaveBeenCalledWith('/m/b0', '/m/c2');
    const rows = screen.getAllByTestId('tensor-difference');
    expect(rows.map((r) => r.textContent)).toEqual([
      'model.layers.3.mlp.down_proj.weightbytesaabb',
      'lm_head.weightmissingccabsent',
    ]);
  });

  it('takes each checkpoint from the open dialog', async () => {
    ipcMock.choosePath.mockResolvedValueOnce('/models/b0').mockResolvedValueOnce('/models/c2/model.safetensors');
    render(TensorComparison);
    await fireEvent.click(screen.getByTestId('tensor-base-folder'));
    await vi.waitFor(() => expect((screen.getByTestId('tensor-base') as HTMLInputElement).value).toBe('/models/b0'));
    await fireEvent.click(screen.getByTestId('tensor-candidate-file'));
    await vi.waitFor(() => expect((screen.getByTestId('tensor-candidate') as HTMLInputElement).value).toBe('/models/c2/model.safetensors'));
    expect(ipcMock.choosePath.mock.calls).toEqual([['checkpoint_folder'], ['checkpoint_file']]);
  });
});

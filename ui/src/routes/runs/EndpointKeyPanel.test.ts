import { fireEvent, render, screen } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EndpointKeyStatus } from '$lib/bindings/EndpointKeyStatus';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  endpointKeyStatus: vi.fn(),
  setEndpointKey: vi.fn(),
  forgetEndpointKey: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import EndpointKeyPanel from './EndpointKeyPanel.svelte';

const ipcMock = vi.mocked(ipc);

const URL_V1 = 'http://10.0.0.5:8000/v1';
const ORIGIN = 'http://10.0.0.5:8000';
const WARNING = `The key for ${ORIGIN} is held in this process's memory only (no OS keyring answered): it is lost when the process ends, and it was not written anywhere`;
const KEY = 'sk-live-7f3a9c';

function keyStatus(stored_in: EndpointKeyStatus['stored_in'], patch: Partial<EndpointKeyStatus> = {}): EndpointKeyStatus {
  return {
    origin: ORIGIN,
    stored_in,
    keyring: { available: true, detail: null },
    warning: stored_in === 'session' ? WARNING : null,
    ...patch,
  };
}

const NO_KEYRING = { available: false, detail: 'no secret service provider answered on D-Bus' };

function setup(url = URL_V1, delayMs = 0) {
  return render(EndpointKeyPanel, { url, delayMs });
}

async function statusText(expected: string): Promise<void> {
  await vi.waitFor(() => expect(screen.getByTestId('endpoint-key-status').textContent?.trim()).toBe(expected));
}

async function openForm(): Promise<HTMLInputElement> {
  await fireEvent.click(screen.getByTestId('endpoint-key-toggle'));
  return screen.getByTestId('endpoint-key-input') as HTMLInputElement;
}

beforeEach(() => {
  vi.resetAllMocks();
  ipcMock.endpointKeyStatus.mockResolvedValue(keyStatus(null));
});

afterEach(() => {
  vi.useRealTimers();
});

describe('Endpoint API key panel', () => {
  it('says when no key is kept, and that requests then carry none', async () => {
    setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    expect(ipcMock.endpointKeyStatus).toHaveBeenCalledWith(URL_V1);
    expect(screen.queryByTestId('endpoint-key-warning')).toBeNull();
    expect(screen.queryByTestId('endpoint-key-forget')).toBeNull();
    expect(screen.queryByTestId('endpoint-key-keyring')).toBeNull();
  });

  it('says when the key is in the OS keyring, and offers to forget it', async () => {
    ipcMock.endpointKeyStatus.mockResolvedValue(keyStatus('os_keyring'));
    setup();
    await statusText(`API key kept in the OS keyring for ${ORIGIN}.`);
    expect(screen.queryByTestId('endpoint-key-warning')).toBeNull();
    expect(screen.getByTestId('endpoint-key-forget').textContent).toBe('Forget key');
  });

  it('shows the warning prominently when the key is only in memory, and why no keyring answers', async () => {
    ipcMock.endpointKeyStatus.mockResolvedValue(keyStatus('session', { keyring: NO_KEYRING }));
    setup();
    await statusText(`API key held in this app's memory only, for ${ORIGIN}.`);
    const warning = screen.getByTestId('endpoint-key-warning');
    expect(warning.getAttribute('role')).toBe('alert');
    expect(warning.textContent).toBe(WARNING);
    expect(screen.getByTestId('endpoint-key-keyring').textContent?.trim()).toBe(
      'No OS keyring answers: no secret service provider answered on D-Bus',
    );
    expect(screen.getByTestId('endpoint-key-forget')).toBeTruthy();
  });

  it('shows nothing and asks nothing without a URL', async () => {
    setup('  ');
    await Promise.resolve();
    expect(screen.queryByTestId('endpoint-key-panel')).toBeNull();
    expect(ipcMock.endpointKeyStatus).not.toHaveBeenCalled();
  });

  it('asks once typing pauses, and drops an answer for a URL typed over since', async () => {
    vi.useFakeTimers();
    let answerOld: (s: EndpointKeyStatus) => void = () => {};
    ipcMock.endpointKeyStatus
      .mockReturnValueOnce(new Promise((r) => (answerOld = r)))
      .mockResolvedValueOnce(keyStatus('os_keyring', { origin: 'http://10.0.0.5:8001' }));
    const { rerender } = setup('http://10.0.0.5:8', 300);
    await rerender({ url: 'http://10.0.0.5:80', delayMs: 300 });
    vi.advanceTimersByTime(200);
    await rerender({ url: 'http://10.0.0.5:8000', delayMs: 300 });
    vi.advanceTimersByTime(299);
    expect(ipcMock.endpointKeyStatus).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(ipcMock.endpointKeyStatus.mock.calls).toEqual([['http://10.0.0.5:8000']]);

    await rerender({ url: 'http://10.0.0.5:8001', delayMs: 300 });
    vi.advanceTimersByTime(300);
    expect(ipcMock.endpointKeyStatus).toHaveBeenCalledTimes(2);
    vi.useRealTimers();
    await statusText('API key kept in the OS keyring for http://10.0.0.5:8001.');
    answerOld(keyStatus(null, { origin: ORIGIN }));
    await new Promise((r) => setTimeout(r, 0));
    expect(screen.getByTestId('endpoint-key-status').textContent?.trim()).toBe(
      'API key kept in the OS keyring for http://10.0.0.5:8001.',
    );
  });

  it('saves the key with the fallback asked for, clears the field and shows the returned status', async () => {
    ipcMock.setEndpointKey.mockResolvedValue(keyStatus('session', { keyring: NO_KEYRING }));
    const { container } = setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    const toggle = screen.getByTestId('endpoint-key-toggle');
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    const input = await openForm();
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(document.activeElement).toBe(input);
    expect(input.type).toBe('password');
    expect(input.getAttribute('autocomplete')).toBe('off');
    expect(input.getAttribute('spellcheck')).toBe('false');
    expect(screen.getByLabelText('API key')).toBe(input);
    const fallback = screen.getByLabelText(
      'If no OS keyring answers, keep the key in memory until the app closes (never written anywhere)',
    ) as HTMLInputElement;
    expect(fallback).toBe(screen.getByTestId('endpoint-key-fallback'));
    expect(fallback.checked).toBe(false);

    await fireEvent.input(input, { target: { value: KEY } });
    await fireEvent.click(fallback);
    await fireEvent.click(screen.getByTestId('endpoint-key-save'));
    expect(ipcMock.setEndpointKey).toHaveBeenCalledWith({ url: URL_V1, key: KEY, session_fallback: true });

    await vi.waitFor(() => expect(screen.queryByTestId('endpoint-key-input')).toBeNull());
    expect(screen.getByTestId('endpoint-key-warning').textContent).toBe(WARNING);
    await statusText(`API key held in this app's memory only, for ${ORIGIN}.`);
    expect(container.innerHTML).not.toContain(KEY);
    expect(document.activeElement).toBe(toggle);
    // Opened again, the form starts empty: the key was not kept in the component.
    const again = await openForm();
    expect(again.value).toBe('');
    expect((screen.getByTestId('endpoint-key-fallback') as HTMLInputElement).checked).toBe(false);
  });

  it('saves on Enter and cancels on Escape, clearing the field', async () => {
    ipcMock.setEndpointKey.mockResolvedValue(keyStatus('os_keyring'));
    setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    let input = await openForm();
    await fireEvent.input(input, { target: { value: KEY } });
    await fireEvent.keyDown(input, { key: 'Escape' });
    expect(screen.queryByTestId('endpoint-key-input')).toBeNull();
    expect(ipcMock.setEndpointKey).not.toHaveBeenCalled();

    input = await openForm();
    expect(input.value).toBe('');
    await fireEvent.input(input, { target: { value: KEY } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(ipcMock.setEndpointKey).toHaveBeenCalledWith({ url: URL_V1, key: KEY, session_fallback: false });
    await statusText(`API key kept in the OS keyring for ${ORIGIN}.`);
    expect(screen.queryByTestId('endpoint-key-input')).toBeNull();
  });

  it('shows why a key was not kept and keeps the form, so the fallback can be ticked', async () => {
    const message = `no OS keyring answered (no secret service provider): the key for ${ORIGIN} was not kept`;
    ipcMock.setEndpointKey
      .mockRejectedValueOnce({ code: 'storage', message })
      .mockResolvedValueOnce(keyStatus('session', { keyring: NO_KEYRING }));
    setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    const input = await openForm();
    await fireEvent.input(input, { target: { value: KEY } });
    await fireEvent.click(screen.getByTestId('endpoint-key-save'));

    const error = await screen.findByTestId('endpoint-key-error');
    expect(error.textContent).toContain('Storage error:');
    expect(error.getAttribute('data-code')).toBe('storage');
    expect(error.textContent).toContain(message);
    expect(screen.getByTestId('endpoint-key-input')).toBe(input);
    expect(input.value).toBe(KEY);
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);

    await fireEvent.click(screen.getByTestId('endpoint-key-fallback'));
    await fireEvent.click(screen.getByTestId('endpoint-key-save'));
    expect(ipcMock.setEndpointKey).toHaveBeenLastCalledWith({ url: URL_V1, key: KEY, session_fallback: true });
    await vi.waitFor(() => expect(screen.queryByTestId('endpoint-key-error')).toBeNull());
    expect(screen.queryByTestId('endpoint-key-input')).toBeNull();
    expect(screen.getByTestId('endpoint-key-warning').textContent).toBe(WARNING);
  });

  it('shows a refused key as the backend words it', async () => {
    ipcMock.setEndpointKey.mockRejectedValue({ code: 'invalid_input', message: 'key: expected the endpoint\'s API key, found nothing' });
    setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    await openForm();
    await fireEvent.click(screen.getByTestId('endpoint-key-save'));
    expect((await screen.findByTestId('endpoint-key-error')).textContent).toContain("key: expected the endpoint's API key, found nothing");
    expect(screen.getByTestId('endpoint-key-input')).toBeTruthy();
  });

  it('forgets the key of the endpoint', async () => {
    ipcMock.endpointKeyStatus.mockResolvedValue(keyStatus('os_keyring'));
    ipcMock.forgetEndpointKey.mockResolvedValue(keyStatus(null));
    setup();
    await statusText(`API key kept in the OS keyring for ${ORIGIN}.`);
    await fireEvent.click(screen.getByTestId('endpoint-key-forget'));
    expect(ipcMock.forgetEndpointKey).toHaveBeenCalledWith(URL_V1);
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    expect(screen.queryByTestId('endpoint-key-forget')).toBeNull();
  });

  it('shows why a key could not be forgotten', async () => {
    ipcMock.endpointKeyStatus.mockResolvedValue(keyStatus('os_keyring'));
    ipcMock.forgetEndpointKey.mockRejectedValue({
      code: 'storage',
      message: `no OS keyring answered (locked): a key for ${ORIGIN} kept there could not be removed`,
    });
    setup();
    await statusText(`API key kept in the OS keyring for ${ORIGIN}.`);
    await fireEvent.click(screen.getByTestId('endpoint-key-forget'));
    expect((await screen.findByTestId('endpoint-key-error')).textContent).toContain('could not be removed');
    await statusText(`API key kept in the OS keyring for ${ORIGIN}.`);
  });

  it('says a typed URL cannot hold a key without raising an alert', async () => {
    ipcMock.endpointKeyStatus.mockRejectedValue({ code: 'invalid_input', message: 'base_url: expected http or https, found ftp' });
    setup('ftp://h');
    await statusText('No key can be kept for this URL: base_url: expected http or https, found ftp');
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('closes the form and drops the typed key when the endpoint changes', async () => {
    const { rerender } = setup();
    await statusText(`No API key kept for ${ORIGIN} (requests carry none).`);
    const input = await openForm();
    await fireEvent.input(input, { target: { value: KEY } });
    await rerender({ url: 'http://10.0.0.6:8000', delayMs: 0 });
    expect(screen.queryByTestId('endpoint-key-input')).toBeNull();
    const again = await openForm();
    expect(again.value).toBe('');
    expect(ipcMock.setEndpointKey).not.toHaveBeenCalled();
  });
});

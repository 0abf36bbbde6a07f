import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Study } from '$lib/bindings/Study';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  exportPacket: vi.fn(),
  verifyPacket: vi.fn(),
  openPacket: vi.fn(),
  choosePacketOut: vi.fn(),
  choosePath: vi.fn(),
  showInFolder: vi.fn(),
  openPacketReport: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import { INDEX_SHA, REPORT_HTML, exported, view } from './packet-fixture';
import PacketScreen from './PacketScreen.svelte';
import { PacketModel } from './packet.svelte';

const ipcMock = vi.mocked(ipc);
const study: Study = { id: 7, name: 'FP8 KV demo', description: '', provenance: 'synthetic_demo', created_at: '2026-03-03T08:00:00Z' };

function setup(current: Study | null = study) {
  const workspace = new Workspace();
  workspace.current = current;
  workspace.studiesState = 'ready';
  const packet = new PacketModel();
  const onopenpolicy = vi.fn();
  render(PacketScreen, { workspace, packet, onopenpolicy });
  return { packet, onopenpolicy };
}

const exportButton = () => screen.getByTestId('packet-export') as HTMLButtonElement;

async function typeOut(value: string) {
  await fireEvent.input(screen.getByTestId('packet-out'), { target: { value } });
}

beforeEach(() => {
  vi.resetAllMocks();
});

describe('Packet screen', () => {
  it('ties every field to its label and keeps export disabled until a path is given', async () => {
    setup();
    expect(screen.getByLabelText('Output path')).toBe(screen.getByTestId('packet-out'));
    expect(screen.getByLabelText('one .zip file')).toBe(screen.getByTestId('packet-zip'));
    expect(screen.getByLabelText(/Representative items/)).toBe(screen.getByTestId('packet-items'));
    expect(screen.getByLabelText('Packet folder or .zip file')).toBe(screen.getByTestId('packet-target'));
    expect(screen.getByTestId('packet-export-form').tagName).toBe('FORM');
    expect((screen.getByTestId('packet-out') as HTMLInputElement).value).toBe('');
    expect(screen.getByTestId('packet-out').getAttribute('placeholder')).toBe('/path/to/new-folder');
    expect(exportButton().disabled).toBe(true);
    await typeOut('   ');
    expect(exportButton().disabled).toBe(true);
    await typeOut('/tmp/p');
    expect(exportButton().disabled).toBe(false);
    expect((screen.getByTestId('packet-verify') as HTMLButtonElement).disabled).toBe(true);
  });

  it('exports on submit (Enter) and shows the files, sizes, full digests, totals and warnings', async () => {
    let resolve!: (v: ReturnType<typeof exported>) => void;
    ipcMock.exportPacket.mockReturnValue(new Promise((r) => (resolve = r)));
    setup();
    await typeOut(' /tmp/packets/fp8-review ');
    await fireEvent.click(screen.getByTestId('packet-zip'));
    await fireEvent.input(screen.getByTestId('packet-items'), { target: { value: 'en-short-001\n de-long-004, en-short-001,\n' } });
    expect(screen.getByTestId('packet-items-hint').textContent).toContain('2 item ids');
    await fireEvent.submit(screen.getByTestId('packet-export-form'));

    expect(ipcMock.exportPacket).toHaveBeenCalledWith({
      study_id: 7,
      out: '/tmp/packets/fp8-review',
      zip: true,
      representative: ['en-short-001', 'de-long-004'],
    });
    expect(exportButton().textContent).toContain('exporting…');
    expect(exportButton().disabled).toBe(true);
    expect(screen.getByTestId('packet-progress').textContent).toBe('exporting…');

    resolve(exported());
    const result = await screen.findByTestId('packet-result');
    expect(screen.getByTestId('packet-index-sha').textContent).toBe(INDEX_SHA);
    expect(within(result).getByTestId('packet-result-out').textContent).toBe('/tmp/packets/fp8-review');
    expect(screen.getByTestId('packet-totals').textContent).toBe('3 files listed in index.json, 57.05 KiB');
    expect(screen.getByTestId('packet-totals').getAttribute('title')).toBe('58,417 bytes');
    expect(screen.getByTestId('packet-representative').textContent).toBe('2');
    expect(screen.getAllByTestId('packet-warning').map((w) => w.textContent)).toEqual([
      'run 12 trace absent: its items are not among the representative requests',
    ]);
    const rows = screen.getAllByTestId('packet-file');
    expect(rows.map((r) => r.dataset['path'])).toEqual(['report.html', 'policy/policy.json', 'requests/representative.jsonl']);
    expect(rows[0]!.textContent).toContain('b2'.repeat(32));
    expect(rows[0]!.textContent).toContain('47.08 KiB');
    expect(within(rows[0]!).getByTitle('48,213 bytes').textContent).toBe('47.08 KiB');
    // The verify field now points at what was written.
    expect((screen.getByTestId('packet-target') as HTMLInputElement).value).toBe('/tmp/packets/fp8-review');
    expect(exportButton().textContent).toContain('Export packet');
  });

  it('sends no representative ids when the box is empty (the default sample)', async () => {
    ipcMock.exportPacket.mockResolvedValue(exported());
    setup();
    expect(screen.getByTestId('packet-items-hint').textContent).toContain('balanced sample of 12');
    await typeOut('/tmp/p');
    await fireEvent.click(exportButton());
    expect(ipcMock.exportPacket).toHaveBeenCalledWith({ study_id: 7, out: '/tmp/p', zip: false });
  });

  it('shows a refusal because the target exists, its message kept line by line', async () => {
    const message = 'output exists: /tmp/p is a non-empty folder\nchoose a new folder or an empty one';
    ipcMock.exportPacket.mockRejectedValue({ code: 'conflict', message });
    setup();
    await typeOut('/tmp/p');
    await fireEvent.click(exportButton());
    const error = await screen.findByTestId('packet-error');
    expect(error.textContent).toContain(message);
    expect(error.getAttribute('role')).toBe('alert');
    expect(screen.queryByTestId('packet-result')).toBeNull();
    expect(exportButton().disabled).toBe(false);
  });

  it('explains a missing locked policy and leads to the Policy screen', async () => {
    ipcMock.exportPacket.mockRejectedValue({ code: 'policy_not_locked', message: 'study `FP8 KV demo` has no locked acceptance policy' });
    const { onopenpolicy } = setup();
    await typeOut('/tmp/p');
    await fireEvent.click(exportButton());
    const notice = await screen.findByTestId('packet-policy-not-locked');
    expect(notice.textContent).toContain('has no locked acceptance policy');
    expect(screen.queryByTestId('packet-error')).toBeNull();
    await fireEvent.click(screen.getByTestId('packet-go-policy'));
    expect(onopenpolicy).toHaveBeenCalledTimes(1);
  });

  it('asks for a study before exporting, but still verifies a packet', async () => {
    ipcMock.openPacket.mockResolvedValue(view());
    setup(null);
    expect(screen.getByTestId('packet-no-study')).toBeTruthy();
    expect(screen.queryByTestId('packet-export-form')).toBeNull();
    await fireEvent.input(screen.getByTestId('packet-target'), { target: { value: '/tmp/packets/fp8-review' } });
    await fireEvent.submit(screen.getByTestId('packet-open-form'));
    expect(ipcMock.openPacket).toHaveBeenCalledWith('/tmp/packets/fp8-review');
    expect((await screen.findByTestId('packet-verification')).dataset['verified']).toBe('true');
  });

  it('shows a verified packet and its report in a sandbox without scripts', async () => {
    ipcMock.openPacket.mockResolvedValue(view({ files_checked: 14 }));
    setup();
    await fireEvent.input(screen.getByTestId('packet-target'), { target: { value: '/tmp/packets/fp8-review' } });
    await fireEvent.click(screen.getByTestId('packet-verify'));

    const v = await screen.findByTestId('packet-verification');
    expect(v.dataset['verified']).toBe('true');
    expect(screen.getByTestId('packet-verification-summary').textContent).toBe('verified: 14 files listed in index.json match their sha256 and size');
    expect(screen.queryByTestId('packet-modified')).toBeNull();
    expect(screen.queryByTestId('packet-report-unverified')).toBeNull();

    const frame = screen.getByTestId('packet-report') as HTMLIFrameElement;
    expect(frame.tagName).toBe('IFRAME');
    expect(frame.getAttribute('sandbox')).toBe('');
    expect(frame.getAttribute('sandbox')).not.toContain('allow-scripts');
    expect(frame.getAttribute('srcdoc')).toBe(REPORT_HTML);
    expect(frame.getAttribute('title')).toBe('report.html');
    expect(screen.getByTestId('packet-report-caption').textContent).toContain('verified against its index.json');
    // The report never becomes part of the app's own document.
    expect(document.querySelector('script')).toBeNull();
  });

  it('lists what does not match when verification fails, and warns above the report', async () => {
    const modified = 'report.html: expected sha256 ' + 'b2'.repeat(32) + ' (48213 bytes), found ' + 'ee'.repeat(32) + ' (48214 bytes)';
    ipcMock.openPacket.mockResolvedValue(
      view({ verified: false, modified: [modified], missing: ['policy/policy.json'], unexpected: ['notes.txt'] }),
    );
    setup();
    await fireEvent.input(screen.getByTestId('packet-target'), { target: { value: '/tmp/packets/fp8-review' } });
    await fireEvent.click(screen.getByTestId('packet-verify'));

    const v = await screen.findByTestId('packet-verification');
    expect(v.dataset['verified']).toBe('false');
    expect(screen.getByTestId('packet-verification-summary').textContent).toBe(
      'not verified: 1 modified, 1 missing, 1 unexpected (3 files checked)',
    );
    expect(screen.getAllByTestId('packet-modified').map((li) => li.textContent)).toEqual([modified]);
    expect(screen.getByTestId('packet-modified').tagName).toBe('LI');
    expect(screen.getAllByTestId('packet-missing').map((li) => li.textContent)).toEqual(['policy/policy.json']);
    expect(screen.getAllByTestId('packet-unexpected').map((li) => li.textContent)).toEqual(['notes.txt']);
    expect(screen.getByTestId('packet-report-unverified').textContent).toMatch(/comes from a packet that does not match its index/i);
    expect(screen.getByTestId('packet-report-caption').textContent).toContain('did not verify');
    expect(screen.getByTestId('packet-report').getAttribute('sandbox')).toBe('');
  });

  it('shows why an unreadable target is no packet, with no report', async () => {
    ipcMock.openPacket.mockResolvedValue(view({ verified: false, files_checked: 0, problem: 'index.json: not found in /tmp/nothing' }, null));
    setup();
    await fireEvent.input(screen.getByTestId('packet-target'), { target: { value: '/tmp/nothing' } });
    await fireEvent.click(screen.getByTestId('packet-verify'));
    expect((await screen.findByTestId('packet-problem')).textContent).toBe('index.json: not found in /tmp/nothing');
    expect(screen.getByTestId('packet-verification').dataset['verified']).toBe('false');
    expect(screen.queryByTestId('packet-report')).toBeNull();
    expect(screen.getByTestId('packet-no-report')).toBeTruthy();
  });

  it('verifies the packet just exported from the prefilled target', async () => {
    ipcMock.exportPacket.mockResolvedValue(exported());
    ipcMock.openPacket.mockResolvedValue(view());
    setup();
    await typeOut('/tmp/packets/fp8-review');
    await fireEvent.click(exportButton());
    await screen.findByTestId('packet-result');
    await fireEvent.click(screen.getByTestId('packet-verify'));
    await waitFor(() => expect(ipcMock.openPacket).toHaveBeenCalledWith('/tmp/packets/fp8-review'));
    expect(await screen.findByTestId('packet-report')).toBeTruthy();
  });
});

describe('Packet files through the system dialogs', () => {
  it('asks the save dialog where the packet goes, a folder or a .zip, and fills the output path', async () => {
    ipcMock.choosePacketOut.mockResolvedValueOnce('/home/owner/fp8-kv-demo-packet');
    setup();
    await fireEvent.click(screen.getByTestId('packet-out-choose'));
    expect(ipcMock.choosePacketOut).toHaveBeenCalledWith(7, false);
    await waitFor(() => expect((screen.getByTestId('packet-out') as HTMLInputElement).value).toBe('/home/owner/fp8-kv-demo-packet'));
    // Nothing is exported until the Export button.
    expect(ipcMock.exportPacket).not.toHaveBeenCalled();
    expect(exportButton().disabled).toBe(false);

    await fireEvent.click(screen.getByTestId('packet-zip'));
    ipcMock.choosePacketOut.mockResolvedValueOnce(null);
    await fireEvent.click(screen.getByTestId('packet-out-choose'));
    expect(ipcMock.choosePacketOut).toHaveBeenLastCalledWith(7, true);
    // Cancelled: the path stays as it was.
    await waitFor(() => expect((screen.getByTestId('packet-out-choose') as HTMLButtonElement).disabled).toBe(false));
    expect((screen.getByTestId('packet-out') as HTMLInputElement).value).toBe('/home/owner/fp8-kv-demo-packet');
  });

  it('says the policy must be locked before any dialog opens', async () => {
    ipcMock.choosePacketOut.mockRejectedValue({ code: 'policy_not_locked', message: 'study `FP8 KV demo` has no locked acceptance policy' });
    const { onopenpolicy } = setup();
    await fireEvent.click(screen.getByTestId('packet-out-choose'));
    expect(await screen.findByTestId('packet-policy-not-locked')).toBeTruthy();
    await fireEvent.click(screen.getByTestId('packet-go-policy'));
    expect(onopenpolicy).toHaveBeenCalledTimes(1);
  });

  it('shows an exported packet in its folder', async () => {
    ipcMock.exportPacket.mockResolvedValue(exported());
    ipcMock.showInFolder.mockResolvedValue(null);
    setup();
    await typeOut('/tmp/packets/fp8-review');
    await fireEvent.click(exportButton());
    await screen.findByTestId('packet-result');
    await fireEvent.click(screen.getByTestId('packet-result-show'));
    expect(ipcMock.showInFolder).toHaveBeenCalledWith('/tmp/packets/fp8-review');
  });

  it('says when the file manager could not be opened', async () => {
    ipcMock.exportPacket.mockResolvedValue(exported());
    ipcMock.showInFolder.mockRejectedValue({ code: 'internal', message: 'the file manager could not show /tmp/packets/fp8-review' });
    setup();
    await typeOut('/tmp/packets/fp8-review');
    await fireEvent.click(exportButton());
    await fireEvent.click(await screen.findByTestId('packet-result-show'));
    expect((await screen.findByTestId('packet-result-show-error')).textContent).toContain('could not show');
  });

  it('chooses the packet to verify with Browse, as a folder or a zip', async () => {
    ipcMock.choosePath.mockImplementation(async (kind) => (kind === 'packet_zip' ? '/tmp/p.zip' : '/tmp/p'));
    setup();
    await fireEvent.click(screen.getByTestId('packet-target-zip'));
    await waitFor(() => expect((screen.getByTestId('packet-target') as HTMLInputElement).value).toBe('/tmp/p.zip'));
    await fireEvent.click(screen.getByTestId('packet-target-folder'));
    await waitFor(() => expect((screen.getByTestId('packet-target') as HTMLInputElement).value).toBe('/tmp/p'));
    expect(ipcMock.choosePath.mock.calls).toEqual([['packet_zip'], ['packet_folder']]);
  });

  it('opens a verified report in the system browser, and offers it only for a verified packet', async () => {
    ipcMock.openPacket.mockResolvedValue(view({ files_checked: 14 }));
    ipcMock.openPacketReport.mockResolvedValue('/tmp/packets/fp8-review/report.html');
    setup();
    await fireEvent.input(screen.getByTestId('packet-target'), { target: { value: '/tmp/packets/fp8-review' } });
    await fireEvent.click(screen.getByTestId('packet-verify'));
    await fireEvent.click(await screen.findByTestId('packet-report-browser'));
    expect(ipcMock.openPacketReport).toHaveBeenCalledWith(view().verification.target);
    expect((await screen.findByTestId('packet-report-opened')).textContent).toBe('Opened /tmp/packets/fp8-review/report.html');

    ipcMock.openPacket.mockResolvedValue(view({ verified: false, modified: ['report.html: expected sha256 …'] }));
    await fireEvent.click(screen.getByTestId('packet-verify'));
    await waitFor(() => expect(screen.getByTestId('packet-verification').dataset['verified']).toBe('false'));
    expect(screen.queryByTestId('packet-report-browser')).toBeNull();
    expect(screen.queryByTestId('packet-report-opened')).toBeNull();
  });
});

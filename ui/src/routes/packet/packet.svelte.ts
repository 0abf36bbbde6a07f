import { choosePacketOut, exportPacket, openPacket, openPacketReport, toAppError } from '$lib/ipc';
import type { AppError } from '$lib/bindings/AppError';
import type { PacketExport } from '$lib/bindings/PacketExport';
import type { PacketView } from '$lib/bindings/PacketView';
import { parseItemIds } from './packet-view';

/**
 * The Packet screen's state: the export form of the open study and its last result, and a packet
 * opened for reading (its verification and report as the backend read them, replaced whole).
 */
export class PacketModel {
  studyId = $state<number | null>(null);

  out = $state('');
  zip = $state(false);
  itemsText = $state('');
  exporting = $state(false);
  exportError = $state<AppError | null>(null);
  exported = $state.raw<PacketExport | null>(null);

  target = $state('');
  opening = $state(false);
  openError = $state<AppError | null>(null);
  opened = $state.raw<PacketView | null>(null);

  choosingOut = $state(false);
  /** The report file the system browser was asked to open, or why it could not be. */
  reportOpened = $state<string | null>(null);
  reportError = $state<AppError | null>(null);

  private openSeq = 0;

  /** What the screen calls when shown; another study clears the export form's outcome. */
  show(studyId: number | null): void {
    if (studyId === this.studyId) return;
    this.studyId = studyId;
    this.exportError = null;
    this.exported = null;
    this.itemsText = '';
  }

  get representative(): string[] {
    return parseItemIds(this.itemsText);
  }

  get canExport(): boolean {
    return this.studyId !== null && !this.exporting && this.out.trim() !== '';
  }

  /** True when the export was refused because the study has no locked policy. */
  get policyNotLocked(): boolean {
    return this.exportError?.code === 'policy_not_locked';
  }

  /** Asks in the native save dialog where the packet goes (a folder, or the .zip file when `zip`)
   * and fills the output path; refusals (no locked policy) arrive here, before any export. */
  async chooseOut(): Promise<void> {
    const studyId = this.studyId;
    if (studyId === null || this.choosingOut) return;
    this.choosingOut = true;
    this.exportError = null;
    try {
      const path = await choosePacketOut(studyId, this.zip);
      if (path !== null && studyId === this.studyId) this.out = path;
    } catch (reason) {
      if (studyId === this.studyId) this.exportError = toAppError(reason);
    } finally {
      this.choosingOut = false;
    }
  }

  /** Opens the opened packet's report in the system browser (refused unless it verified). */
  async openReportInBrowser(): Promise<void> {
    const target = this.opened?.verification.target;
    if (!target) return;
    this.reportOpened = null;
    this.reportError = null;
    try {
      this.reportOpened = await openPacketReport(target);
    } catch (reason) {
      this.reportError = toAppError(reason);
    }
  }

  /** Exports the packet; on success the verify field points at what was written. */
  async export(): Promise<boolean> {
    const studyId = this.studyId;
    if (studyId === null || !this.canExport) return false;
    const ids = this.representative;
    this.exporting = true;
    this.exportError = null;
    this.exported = null;
    try {
      const result = await exportPacket({
        study_id: studyId,
        out: this.out.trim(),
        zip: this.zip,
        ...(ids.length > 0 ? { representative: ids } : {}),
      });
      if (studyId !== this.studyId) return false;
      this.exported = result;
      this.target = result.out;
      return true;
    } catch (reason) {
      if (studyId !== this.studyId) return false;
      this.exportError = toAppError(reason);
      return false;
    } finally {
      this.exporting = false;
    }
  }

  /** Verifies the packet at `target` and reads its report; the previous reading is dropped first,
   * so a report is never shown under another packet's verification. */
  async open(): Promise<boolean> {
    const target = this.target.trim();
    if (target === '') return false;
    const seq = ++this.openSeq;
    this.opening = true;
    this.openError = null;
    this.opened = null;
    this.reportOpened = null;
    this.reportError = null;
    try {
      const view = await openPacket(target);
      if (seq !== this.openSeq) return false;
      this.opened = view;
      return true;
    } catch (reason) {
      if (seq !== this.openSeq) return false;
      this.openError = toAppError(reason);
      return false;
    } finally {
      if (seq === this.openSeq) this.opening = false;
    }
  }
}

// Presentation of what the backend wrote or found about a packet: nothing here hashes or judges a file.
import { formatBytes, formatCount } from '$lib/format';
import type { PacketFile } from '$lib/bindings/PacketFile';
import type { PacketVerification } from '$lib/bindings/PacketVerification';

/** How many representative items the backend samples when none are given (DEFAULT_REPRESENTATIVE). */
export const DEFAULT_REPRESENTATIVE = 12;

/**
 * The item ids typed in the representative-items box: split on commas and line breaks, trimmed,
 * empties dropped, duplicates dropped keeping the first. Empty means "the default sample".
 */
export function parseItemIds(text: string): string[] {
  const seen = new Set<string>();
  const ids: string[] = [];
  for (const part of text.split(/[,\r\n]+/)) {
    const id = part.trim();
    if (id === '' || seen.has(id)) continue;
    seen.add(id);
    ids.push(id);
  }
  return ids;
}

/** What the box asks for, in words, before exporting. */
export function itemsHint(ids: readonly string[]): string {
  if (ids.length === 0) return `none given: a balanced sample of ${DEFAULT_REPRESENTATIVE} judged items`;
  return ids.length === 1 ? '1 item id' : `${ids.length} item ids`;
}

export type PacketTotals = { files: number; bytes: number };

export function packetTotals(files: readonly PacketFile[]): PacketTotals {
  return { files: files.length, bytes: files.reduce((sum, f) => sum + f.size, 0) };
}

/**
 * "33 files listed in index.json": how an export and a verification count a packet's files, in
 * the words of `kvgate packet export` and `verify` (index.json names the rest, not itself).
 */
export function listedFiles(n: number): string {
  return `${formatCount(n)} ${n === 1 ? 'file' : 'files'} listed in index.json`;
}

/** "3 files listed in index.json, 57.05 KiB". */
export function totalsText(t: PacketTotals): string {
  return `${listedFiles(t.files)}, ${formatBytes(t.bytes)}`;
}

function count(n: number, what: string): string {
  return `${n} ${what}`;
}

/** One line saying whether the packet matches its index.json, and if not, how. */
export function verificationSummary(v: PacketVerification): string {
  if (v.verified) {
    const match = v.files_checked === 1 ? 'matches its' : 'match their';
    return `verified: ${listedFiles(v.files_checked)} ${match} sha256 and size`;
  }
  if (v.problem !== null && v.modified.length + v.missing.length + v.unexpected.length === 0) {
    return 'not verified: the index could not be read';
  }
  const parts = [
    v.modified.length > 0 ? count(v.modified.length, 'modified') : null,
    v.missing.length > 0 ? count(v.missing.length, 'missing') : null,
    v.unexpected.length > 0 ? count(v.unexpected.length, 'unexpected') : null,
  ].filter((p): p is string => p !== null);
  const found = parts.length > 0 ? parts.join(', ') : 'the backend reported no file difference';
  return `not verified: ${found} (${v.files_checked} ${v.files_checked === 1 ? 'file' : 'files'} checked)`;
}

/** The signature line of a verification, in the CLI's words: unsigned, an untrusted key id (the
 * window gives no public key, so the signature is not checked), verified, or what is wrong. */
export function signatureSummary(v: PacketVerification): string {
  const s = v.signature;
  const id = s.key_id ?? '?';
  switch (s.state) {
    case 'unsigned':
      return 'unsigned: the packet carries no index.json.minisig';
    case 'untrusted_key':
      return `signed by untrusted key id ${id}: the signature is checked with kvgate packet verify --pubkey KEY`;
    case 'verified':
      return `signature verified: index.json is signed by key id ${id}`;
    default:
      return `signature not verified: ${s.problem ?? s.state}`;
  }
}

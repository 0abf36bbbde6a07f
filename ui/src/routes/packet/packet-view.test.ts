import { describe, expect, it } from 'vitest';
import { exported, verification } from './packet-fixture';
import { formatBytes, formatExactBytes } from '$lib/format';
import { itemsHint, listedFiles, packetTotals, parseItemIds, totalsText, signatureSummary, verificationSummary } from './packet-view';

describe('parseItemIds', () => {
  it('splits on commas and line breaks, trims and drops empties', () => {
    expect(parseItemIds(' en-001 , de-002\n\n  fr-003\r\nja-004,, \n')).toEqual(['en-001', 'de-002', 'fr-003', 'ja-004']);
  });

  it('drops duplicates, keeping the first place of each id', () => {
    expect(parseItemIds('b, a\nb\na, c')).toEqual(['b', 'a', 'c']);
  });

  it('is empty for an empty or blank box (the default sample)', () => {
    expect(parseItemIds('')).toEqual([]);
    expect(parseItemIds(' \n , \n')).toEqual([]);
  });

  it('keeps spaces inside an id: only commas and line breaks separate', () => {
    expect(parseItemIds('item one, item two')).toEqual(['item one', 'item two']);
  });
});

describe('itemsHint', () => {
  it('names the default sample when no id is given, else the count', () => {
    expect(itemsHint([])).toContain('balanced sample of 12');
    expect(itemsHint(['a'])).toBe('1 item id');
    expect(itemsHint(['a', 'b'])).toBe('2 item ids');
  });
});

describe('packetTotals', () => {
  it('counts the files and sums their sizes', () => {
    expect(packetTotals(exported().files)).toEqual({ files: 3, bytes: 48_213 + 1_204 + 9_000 });
    expect(packetTotals([])).toEqual({ files: 0, bytes: 0 });
  });

  it('reads in binary units, every byte kept for a title', () => {
    expect(totalsText({ files: 3, bytes: 58_417 })).toBe('3 files listed in index.json, 57.05 KiB');
    expect(totalsText({ files: 1, bytes: 12 })).toBe('1 file listed in index.json, 12 B');
    expect(formatBytes(1_048_576)).toBe('1.00 MiB');
    expect(formatExactBytes(58_417)).toBe('58,417 bytes');
  });
});

describe('verificationSummary', () => {
  it('says how many files match the index when verified, in the words the export counts them', () => {
    expect(verificationSummary(verification({ files_checked: 14 }))).toBe(
      'verified: 14 files listed in index.json match their sha256 and size',
    );
    expect(verificationSummary(verification({ files_checked: 1 }))).toBe(
      'verified: 1 file listed in index.json matches its sha256 and size',
    );
    expect(totalsText({ files: 14, bytes: 1 })).toContain(listedFiles(14));
    expect(verificationSummary(verification({ files_checked: 14 }))).toContain(listedFiles(14));
  });

  it('counts what differs when not verified', () => {
    const v = verification({
      verified: false,
      modified: ['report.html: expected sha256 aa (10 bytes), found bb (11 bytes)'],
      missing: ['policy/policy.json', 'audit/chain.jsonl'],
      unexpected: [],
    });
    expect(verificationSummary(v)).toBe('not verified: 1 modified, 2 missing (3 files checked)');
  });

  it('says the index could not be read when that is the only problem', () => {
    const v = verification({ verified: false, files_checked: 0, problem: 'index.json: not found' });
    expect(verificationSummary(v)).toBe('not verified: the index could not be read');
  });

  it('never calls an unverified packet verified, even with no difference listed', () => {
    expect(verificationSummary(verification({ verified: false }))).toMatch(/^not verified: /);
  });
});

describe('signatureSummary', () => {
  it('says unsigned, names an untrusted key id, and names what is wrong', () => {
    expect(signatureSummary(verification())).toBe('unsigned: the packet carries no index.json.minisig');
    const untrusted = verification({ signature: { state: 'untrusted_key', key_id: 'ABCDEF0123456789', trusted_comment: null, problem: null } });
    expect(signatureSummary(untrusted)).toContain('untrusted key id ABCDEF0123456789');
    const bad = verification({
      verified: false,
      signature: { state: 'bad', key_id: 'ABCDEF0123456789', trusted_comment: null, problem: 'index.json.minisig does not hold over index.json' },
    });
    expect(signatureSummary(bad)).toBe('signature not verified: index.json.minisig does not hold over index.json');
  });
});

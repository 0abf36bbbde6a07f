import type { PacketExport } from '$lib/bindings/PacketExport';
import type { PacketVerification } from '$lib/bindings/PacketVerification';
import type { PacketView } from '$lib/bindings/PacketView';

export const INDEX_SHA = 'a1'.repeat(32);

export function exported(patch: Partial<PacketExport> = {}): PacketExport {
  return {
    out: '/tmp/packets/fp8-review',
    zip: false,
    index_sha256: INDEX_SHA,
    files: [
      { path: 'report.html', sha256: 'b2'.repeat(32), size: 48_213 },
      { path: 'policy/policy.json', sha256: 'c3'.repeat(32), size: 1_204 },
      { path: 'requests/representative.jsonl', sha256: 'd4'.repeat(32), size: 9_000 },
    ],
    representative: ['en-short-001', 'de-long-004'],
    warnings: ['run 12 trace absent: its items are not among the representative requests'],
    signed_by: null,
    ...patch,
  };
}

export function verification(patch: Partial<PacketVerification> = {}): PacketVerification {
  return {
    target: '/tmp/packets/fp8-review',
    verified: true,
    files_checked: 3,
    modified: [],
    missing: [],
    unexpected: [],
    problem: null,
    signature: { state: 'unsigned', key_id: null, trusted_comment: null, problem: null },
    ...patch,
  };
}

export const REPORT_HTML = '<!doctype html><html><head><title>KV Gate packet</title></head><body><h1>Review</h1><script>alert(1)</script></body></html>';

export function view(patch: Partial<PacketVerification> = {}, report: string | null = REPORT_HTML): PacketView {
  return { verification: verification(patch), report_html: report };
}

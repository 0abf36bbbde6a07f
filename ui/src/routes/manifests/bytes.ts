// Presentation of byte counts the backend computed: exact integers, and MiB for reading.

const MIB = 1024 * 1024;

export function formatBytes(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} B`;
}

export function formatMiB(bytes: number): string {
  return `${(bytes / MIB).toFixed(2)} MiB`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

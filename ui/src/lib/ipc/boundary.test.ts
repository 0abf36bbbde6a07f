// @vitest-environment node
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../', import.meta.url));
const IPC_DIR = join('lib', 'ipc') + sep;

// Static, side-effect, dynamic and CommonJS forms of a module reference to @tauri-apps/*.
const TAURI_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"`]@tauri-apps\//;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(svelte|[cm]?[jt]s)$/.test(entry.name) ? [path] : [];
  });
}

describe('IPC boundary', () => {
  it('recognises every form of a @tauri-apps import', () => {
    expect(TAURI_IMPORT.test(`import { invoke } from '@tauri-apps/api/core';`)).toBe(true);
    expect(TAURI_IMPORT.test(`export * from "@tauri-apps/api/event";`)).toBe(true);
    expect(TAURI_IMPORT.test(`import '@tauri-apps/plugin-dialog';`)).toBe(true);
    expect(TAURI_IMPORT.test(`const m = await import('@tauri-apps/api/window');`)).toBe(true);
    expect(TAURI_IMPORT.test(`import { appInfo } from '$lib/ipc';`)).toBe(false);
  });

  it('the ipc module is where the Tauri import lives', () => {
    const ipc = readFileSync(join(SRC, 'lib', 'ipc', 'index.ts'), 'utf8');
    expect(TAURI_IMPORT.test(ipc)).toBe(true);
  });

  it('no file outside src/lib/ipc imports @tauri-apps/*', () => {
    const files = sourceFiles(SRC).map((path) => relative(SRC, path));
    expect(files).toContain('App.svelte');
    expect(files).toContain(join('routes', 'studies', 'StudiesScreen.svelte'));

    const offenders = files
      .filter((file) => !file.startsWith(IPC_DIR))
      .filter((file) => TAURI_IMPORT.test(readFileSync(join(SRC, file), 'utf8')));
    expect(offenders).toEqual([]);
  });
});

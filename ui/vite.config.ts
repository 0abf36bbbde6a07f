/// <reference types="vitest/config" />
import { fileURLToPath } from 'node:url';
import { defineConfig, searchForWorkspaceRoot } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

const schemasDir = fileURLToPath(new URL('../schemas', import.meta.url));

export default defineConfig({
  plugins: [svelte(), svelteTesting()],
  // Relative asset URLs: the Tauri shell serves dist/ from its own protocol, not from a web root.
  base: './',
  resolve: {
    alias: {
      $lib: fileURLToPath(new URL('./src/lib', import.meta.url)),
      // JSON Schemas generated from the Rust types (`make contract`), bundled at build time.
      $schemas: schemasDir,
    },
  },
  clearScreen: false,
  server: {
    port: 5173,
    strictPort: true,
    fs: { allow: [searchForWorkspaceRoot(process.cwd()), schemasDir] },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // WebKitGTK (Linux) and WKWebView (macOS) are the oldest engines Tauri 2 ships on.
    target: 'safari15',
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.ts'],
  },
});

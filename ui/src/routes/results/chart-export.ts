// Showing and saving a chart the backend drew (`kvgate-app` charts): the SVG text as an image
// source. Saving goes through the backend (the native save dialog; the PNG is drawn there too).
// Nothing here draws.

import { formatBytes } from '$lib/format';
import type { ChartFormat } from '$lib/bindings/ChartFormat';
import type { SavedFile } from '$lib/bindings/SavedFile';

/** The SVG as an image source: shown through `<img>`, never inlined, so it runs nothing. */
export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/** "SVG" or "PNG": what the saved notice calls the file. */
export function formatName(format: ChartFormat): string {
  return format.toUpperCase();
}

/** The saved notice's detail: the file's size. */
export function savedDetail(file: SavedFile): string {
  return formatBytes(file.size);
}

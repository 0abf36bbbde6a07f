import { describe, expect, it } from 'vitest';
import { formatName, savedDetail, svgDataUrl } from './chart-export';

describe('chart export', () => {
  it('shows the SVG text as an image source that decodes back to the same text', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><title>a & "b" #1</title></svg>\n';
    const url = svgDataUrl(svg);
    expect(url.startsWith('data:image/svg+xml;charset=utf-8,')).toBe(true);
    expect(url).not.toContain('#');
    expect(decodeURIComponent(url.slice(url.indexOf(',') + 1))).toBe(svg);
  });

  it('names the saved file by its format and size', () => {
    expect(formatName('png')).toBe('PNG');
    expect(savedDetail({ path: '/tmp/a.svg', size: 58_417, sha256: 'a'.repeat(64) })).toBe('57.05 KiB');
  });
});

import { describe, expect, it } from 'vitest';
import { exportFileName, svgDataUrl } from './chart-export';

describe('chart export', () => {
  it('names exported files after the study and the chart', () => {
    expect(exportFileName('FP8 KV, Llama 8B', 'forest-C1', 'svg')).toBe('fp8-kv-llama-8b_forest-c1.svg');
    expect(exportFileName('', 'goodput', 'png')).toBe('study_goodput.png');
    expect(exportFileName('demo', 'latency-cdf-(unclassified)-ttft', 'svg')).toBe('demo_latency-cdf-unclassified-ttft.svg');
  });

  it('shows the SVG text as an image source that decodes back to the same text', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><title>a & "b" #1</title></svg>\n';
    const url = svgDataUrl(svg);
    expect(url.startsWith('data:image/svg+xml;charset=utf-8,')).toBe(true);
    expect(url).not.toContain('#');
    expect(decodeURIComponent(url.slice(url.indexOf(',') + 1))).toBe(svg);
  });
});

import { render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import ProvenanceBadge from './ProvenanceBadge.svelte';

describe('ProvenanceBadge', () => {
  it('labels the recorded demo as recorded, naming the stand-in', () => {
    render(ProvenanceBadge, { props: { provenance: 'recorded_demo' } });
    const badge = screen.getByTestId('provenance-badge');
    expect(badge.textContent).toBe('recorded demo');
    expect(badge.getAttribute('title')).toContain('q8_0 KV as an 8-bit stand-in (not FP8');
  });

  it('keeps synthetic and user studies apart', () => {
    render(ProvenanceBadge, { props: { provenance: 'synthetic_demo', testid: 'a' } });
    render(ProvenanceBadge, { props: { provenance: 'user', testid: 'b' } });
    expect(screen.getByTestId('a').textContent).toBe('synthetic demo');
    expect(screen.getByTestId('b').textContent).toBe('user');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ROUTE, ROUTES, Router, hrefFor, parseHash, routeAt } from '$lib/router.svelte';

describe('parseHash', () => {
  it('maps each task hash to its route', () => {
    for (const { id } of ROUTES) expect(parseHash(`#/${id}`)).toBe(id);
  });

  it('tolerates a missing slash and a trailing slash', () => {
    expect(parseHash('#runs')).toBe('runs');
    expect(parseHash('#/review/')).toBe('review');
  });

  it('falls back to studies for an empty or unknown hash', () => {
    expect(DEFAULT_ROUTE).toBe('studies');
    for (const hash of ['', '#', '#/', '#/nope', '#/Studies', '#/runs/42']) {
      expect(parseHash(hash)).toBe('studies');
    }
  });

  it('round-trips with hrefFor', () => {
    for (const { id } of ROUTES) expect(parseHash(hrefFor(id))).toBe(id);
  });
});

describe('task order', () => {
  it('follows the user tasks, numbered for Alt+1..9', () => {
    expect(ROUTES.map((route) => route.label)).toEqual([
      'Studies',
      'Manifests',
      'Policy',
      'Fixtures',
      'Runs',
      'Results',
      'Review',
      'Sign-off',
      'Packet',
    ]);
    expect(routeAt(1)).toBe('studies');
    expect(routeAt(8)).toBe('signoff');
    expect(routeAt(9)).toBe('packet');
    expect(routeAt(0)).toBeUndefined();
    expect(routeAt(10)).toBeUndefined();
  });
});

describe('Router', () => {
  let stop: (() => void) | undefined;

  afterEach(() => {
    stop?.();
    window.location.hash = '';
  });

  it('starts on the route in the hash and follows hash changes', () => {
    window.location.hash = '#/policy';
    const router = new Router();
    stop = router.start();
    expect(router.current).toBe('policy');

    window.location.hash = '#/packet';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    expect(router.current).toBe('packet');

    window.location.hash = '#/unknown';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    expect(router.current).toBe('studies');
  });

  it('navigate updates both the hash and the current route', () => {
    const router = new Router();
    stop = router.start();
    router.navigate('results');
    expect(router.current).toBe('results');
    expect(window.location.hash).toBe('#/results');
  });

  it('stops following the hash once stopped', () => {
    window.location.hash = '#/runs';
    const router = new Router();
    router.start()();
    window.location.hash = '#/review';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    expect(router.current).toBe('runs');
  });
});

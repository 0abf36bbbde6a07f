/** The user tasks, in the order the navigation shows them; Alt+1..9 follow this order. */
export const ROUTES = [
  { id: 'studies', label: 'Studies' },
  { id: 'manifests', label: 'Manifests' },
  { id: 'policy', label: 'Policy' },
  { id: 'fixtures', label: 'Fixtures' },
  { id: 'runs', label: 'Runs' },
  { id: 'results', label: 'Results' },
  { id: 'review', label: 'Review' },
  { id: 'signoff', label: 'Sign-off' },
  { id: 'packet', label: 'Packet' },
] as const;

export type RouteId = (typeof ROUTES)[number]['id'];

export const DEFAULT_ROUTE: RouteId = 'studies';

export function isRouteId(value: string): value is RouteId {
  return ROUTES.some((route) => route.id === value);
}

/** `#/runs` → `runs`; an empty or unknown hash falls back to the default route. */
export function parseHash(hash: string): RouteId {
  const id = hash.replace(/^#\/?/, '').replace(/\/+$/, '');
  return isRouteId(id) ? id : DEFAULT_ROUTE;
}

export function hrefFor(id: RouteId): string {
  return `#/${id}`;
}

/** The route for the n-th task (1-based), as used by the Alt+digit shortcuts. */
export function routeAt(position: number): RouteId | undefined {
  return ROUTES[position - 1]?.id;
}

export class Router {
  current = $state<RouteId>(DEFAULT_ROUTE);

  /** Follows the window's hash; returns the function that stops following it. */
  start(): () => void {
    const sync = () => {
      this.current = parseHash(window.location.hash);
    };
    sync();
    window.addEventListener('hashchange', sync);
    return () => window.removeEventListener('hashchange', sync);
  }

  navigate(id: RouteId): void {
    this.current = id;
    window.location.hash = hrefFor(id);
  }
}

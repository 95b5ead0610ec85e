import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** Where the server mounts the app; every route is a path under it, so links can be shared. */
export const BASE = '/ui';
const NAVIGATED = 'strongroom:navigate';

/** The app's own path: `/ui/secrets/kv` gives `/secrets/kv`. */
export function currentPath(): string {
  const { pathname } = window.location;
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  return rest === '' ? '/' : rest;
}

export function href(path: string): string {
  return `${BASE}${path.startsWith('/') ? path : `/${path}`}`;
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const url = href(path);
  if (url === window.location.pathname + window.location.search) return;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  window.dispatchEvent(new Event(NAVIGATED));
}

/** The current app path, re-rendering on back/forward and on `navigate`. */
export function useLocation(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const update = () => setPath(currentPath());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return path;
}

/**
 * Matches `/secrets/:mount/*` style patterns: `:name` takes one segment, a final `*` the rest
 * (as `params['*']`). Segments are URI-decoded.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    if (w === '*') {
      params['*'] = got.slice(i).map(decodeURIComponent).join('/');
      return params;
    }
    const g = got[i];
    if (g === undefined) return null;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(g);
    else if (w !== g) return null;
  }
  return got.length === want.length ? params : null;
}

export function Link(props: { to: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page' | undefined }): JSX.Element {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.to);
  };
  return <a href={href(props.to)} class={props.class} aria-current={props['aria-current']} onClick={onClick}>{props.children}</a>;
}

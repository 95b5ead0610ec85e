import type { FunctionComponent } from 'preact';
import type { Need } from './api/capabilities';

export interface PageProps {
  /** From the route pattern: `:name` segments, and `*` for the rest of the path. */
  params: Record<string, string>;
}

/**
 * One page of the app. Each page file exports its routes; `routes.ts` lists them. The layout
 * shows `nav` entries, in `order`, only when the token passes every `needs` check, and the
 * route itself refuses to render otherwise.
 */
export interface PageRoute {
  pattern: string;
  component: FunctionComponent<PageProps>;
  nav?: { label: string; to: string; order: number };
  needs?: Need[];
  title: string;
}

import type { JSX } from 'preact';
import { Link } from '../router';

export function NotFound({ reason }: { reason?: string }): JSX.Element {
  return (
    <section class="page">
      <h1>{reason ? 'Not allowed' : 'Not found'}</h1>
      <p class="muted">{reason ?? 'There is no page at this address.'}</p>
      <p><Link to="/">Go to the start page</Link></p>
    </section>
  );
}

import type { ComponentChildren, JSX } from 'preact';
import type { Section } from './load';

/**
 * A dashboard card around one section's answer. Before the first answer it says so; after a
 * failed refresh it shows the API's words (and keeps nothing stale, so what shows is true now).
 */
export function SectionCard<T>({ title, name, section, wide, children }: {
  title: string;
  /** For tests and links: `data-card` on the card. */
  name: string;
  section: Section<T> | undefined;
  wide?: boolean;
  children: (data: T) => ComponentChildren;
}): JSX.Element {
  return (
    <section class={`card dashboard-card${wide ? ' dashboard-card-wide' : ''}`} data-card={name} aria-label={title}>
      <h2>{title}</h2>
      {section === undefined && <p class="muted">Loading…</p>}
      {section && !section.ok && <p class="error" role="alert">{section.error}</p>}
      {section && section.ok && children(section.data)}
    </section>
  );
}

/** A label and its value, as rows of a definition list. */
export function Facts({ items }: { items: Array<[string, ComponentChildren, string?]> }): JSX.Element {
  return (
    <dl class="dashboard-facts">
      {items.map(([label, value, title]) => (
        <div key={label} class="dashboard-fact">
          <dt>{label}</dt>
          <dd title={title}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Badge({ tone, children }: { tone: 'ok' | 'warn' | 'danger' | 'info'; children: ComponentChildren }): JSX.Element {
  return <span class={tone === 'info' ? 'badge' : `badge badge-${tone}`}>{children}</span>;
}

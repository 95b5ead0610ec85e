import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { errorText } from './api/client';
import { signOut, type Session } from './api/session';
import { Banner, fetchActiveMessages, ModalGate, pendingModals, type UiMessage } from './components/messages';
import type { PageRoute } from './page';
import { Link } from './router';

/** The signed-in frame: navigation (only what the token may use), post-login messages, sign-out. */
export function Layout({ session, nav, path, children }: {
  session: Session;
  nav: PageRoute[];
  path: string;
  children: ComponentChildren;
}): JSX.Element {
  const [messages, setMessages] = useState<UiMessage[]>([]);
  const [messagesError, setMessagesError] = useState<string | null>(null);
  const [acknowledged, setAcknowledged] = useState<ReadonlySet<string>>(new Set());
  const [dismissed, setDismissed] = useState<ReadonlySet<string>>(new Set());
  const [loaded, setLoaded] = useState(false);

  useEffect(() => {
    let live = true;
    fetchActiveMessages(true).then(
      (found) => { if (live) { setMessages(found); setLoaded(true); } },
      (err: unknown) => { if (live) { setMessagesError(errorText(err)); setLoaded(true); } },
    );
    return () => { live = false; };
  }, [session.token, session.namespace]);

  // Until every post-login modal is acknowledged, the page behind it takes no input.
  const blocked = pendingModals(messages, acknowledged) > 0;
  return (
    <div class="shell" aria-busy={!loaded}>
      <div class="shell-page" inert={blocked}>
        <header class="topbar">
          <Link to="/" class="brand">Strongroom</Link>
          <nav class="nav" aria-label="Main">
            {nav.map((r) => r.nav && (
              <Link key={r.nav.to} to={r.nav.to} class="nav-link"
                aria-current={path === r.nav.to || path.startsWith(`${r.nav.to}/`) ? 'page' : undefined}>{r.nav.label}</Link>
            ))}
          </nav>
          <div class="topbar-end">
            {session.namespace && <span class="badge" title="Namespace">ns: {session.namespace}</span>}
            <button type="button" class="btn btn-quiet" onClick={() => signOut()}>Sign out</button>
          </div>
        </header>
        <div class="banners">
          {messagesError && <p class="error" role="alert">Messages could not be loaded: {messagesError}</p>}
          {messages.filter((m) => m.type === 'banner' && !dismissed.has(m.id)).map((m) => (
            <Banner key={m.id} message={m} onDismiss={() => setDismissed(new Set([...dismissed, m.id]))} />
          ))}
        </div>
        <main class="content">{children}</main>
      </div>
      <ModalGate messages={messages} acknowledged={acknowledged}
        onAcknowledge={(id) => setAcknowledged(new Set([...acknowledged, id]))} />
    </div>
  );
}

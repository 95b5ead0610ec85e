import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { allows, fetchCapabilities, type CapabilityMap } from './api/capabilities';
import { errorText } from './api/client';
import { getSession, onSessionChange, type Session } from './api/session';
import { Layout } from './layout';
import { NotFound } from './pages/not-found';
import { SignIn } from './pages/sign-in';
import { matchPath, navigate, useLocation } from './router';
import { routes } from './routes';

function useSession(): Session | null {
  const [session, setSession] = useState(getSession());
  useEffect(() => onSessionChange(() => setSession(getSession())), []);
  return session;
}

export function App(): JSX.Element {
  const session = useSession();
  return session ? <SignedIn key={`${session.token}@${session.namespace}`} session={session} /> : <SignIn />;
}

function SignedIn({ session }: { session: Session }): JSX.Element {
  const path = useLocation();
  const [caps, setCaps] = useState<CapabilityMap | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    const paths = routes.flatMap((r) => (r.needs ?? []).map((n) => n.path));
    fetchCapabilities(paths).then(
      (found) => { if (live) setCaps(found); },
      (err: unknown) => { if (live) setError(errorText(err)); },
    );
    return () => { live = false; };
  }, []);

  const allowed = caps ? routes.filter((r) => allows(caps, r.needs)) : [];
  const nav = allowed.filter((r) => r.nav).sort((a, b) => (a.nav?.order ?? 0) - (b.nav?.order ?? 0));

  useEffect(() => {
    if (caps && path === '/' && nav[0]?.nav) navigate(nav[0].nav.to, { replace: true });
  }, [caps, path]);

  let page: JSX.Element;
  let title = 'Strongroom';
  if (error) page = <p class="error" role="alert">{error}</p>;
  else if (!caps) page = <p class="muted">Loading…</p>;
  else {
    const found = routes.map((r) => ({ r, params: matchPath(r.pattern, path) })).find((m) => m.params !== null);
    if (path === '/') page = <section class="page"><h1>Welcome</h1><p class="muted">This token may use none of the UI's pages.</p></section>;
    else if (!found) page = <NotFound />;
    else if (!allows(caps, found.r.needs)) page = <NotFound reason="This token's policies do not allow this page." />;
    else {
      const Page = found.r.component;
      title = `${found.r.title} · Strongroom`;
      // Keyed by path: a page's state (a chosen version, an open editor) belongs to one address.
      page = <Page key={path} params={found.params ?? {}} />;
    }
  }
  useEffect(() => { document.title = title; }, [title]);
  return <Layout session={session} nav={nav} path={path}>{page}</Layout>;
}

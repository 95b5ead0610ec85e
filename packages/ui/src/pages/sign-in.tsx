import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { signIn, takeSignOutReason } from '../api/session';
import { Banner, fetchActiveMessages, ModalGate, pendingModals, type UiMessage } from '../components/messages';

/** Shown instead of any page while no token is held; the URL stays so sign-in lands there. */
export function SignIn(): JSX.Element {
  const [token, setToken] = useState('');
  const [namespace, setNamespace] = useState('');
  const [messages, setMessages] = useState<UiMessage[]>([]);
  const [messagesError, setMessagesError] = useState<string | null>(null);
  const [acknowledged, setAcknowledged] = useState<ReadonlySet<string>>(new Set());
  const [error, setError] = useState<string | null>(null);
  const [notice] = useState(takeSignOutReason);
  const [busy, setBusy] = useState(false);
  const [messagesFor, setMessagesFor] = useState('');
  const [messagesLoaded, setMessagesLoaded] = useState(false);

  useEffect(() => {
    let live = true;
    setMessagesLoaded(false);
    fetchActiveMessages(false, messagesFor).then(
      (found) => { if (live) { setMessages(found); setMessagesError(null); setMessagesLoaded(true); } },
      (err: unknown) => { if (live) { setMessagesError(errorText(err)); setMessagesLoaded(true); } },
    );
    return () => { live = false; };
  }, [messagesFor]);

  const blocked = pendingModals(messages, acknowledged) > 0;

  const submit = async (e: Event) => {
    e.preventDefault();
    if (blocked || busy) return;
    setBusy(true);
    setError(null);
    try {
      // Proves the token before keeping it, so a typo never becomes a session.
      await api.read('auth/token/lookup-self', { token: token.trim(), namespace: namespace.trim() });
      signIn({ token: token.trim(), namespace: namespace.trim() });
    } catch (err) {
      setError(errorText(err));
      setBusy(false);
    }
  };

  return (
    <main class="sign-in" aria-busy={!messagesLoaded}>
      <div class="sign-in-banners" inert={blocked}>
        {messages.filter((m) => m.type === 'banner').map((m) => <Banner key={m.id} message={m} />)}
      </div>
      <form class="card sign-in-card" onSubmit={submit} aria-label="Sign in" inert={blocked}>
        <h1 class="sign-in-title">Strongroom</h1>
        <p class="muted">Sign in with a token.</p>
        {notice && <p class="notice" role="status">{notice}</p>}
        {messagesError && <p class="error" role="alert">Messages could not be loaded: {messagesError}</p>}
        <fieldset disabled={blocked || busy}>
          <label class="field">
            <span>Token</span>
            <input name="token" type="password" autocomplete="off" required value={token}
              onInput={(e) => setToken(e.currentTarget.value)} />
          </label>
          <label class="field">
            <span>Namespace <span class="muted">(optional)</span></span>
            <input name="namespace" type="text" autocomplete="off" placeholder="root" value={namespace}
              onInput={(e) => setNamespace(e.currentTarget.value)}
              onChange={(e) => setMessagesFor(e.currentTarget.value.trim())} />
          </label>
          {error && <p class="error" role="alert">{error}</p>}
          <button type="submit" class="btn btn-primary" disabled={token.trim() === ''}>Sign in</button>
        </fieldset>
        {blocked && <p class="muted" role="note">Acknowledge the message to continue.</p>}
      </form>
      <ModalGate messages={messages} acknowledged={acknowledged}
        onAcknowledge={(id) => setAcknowledged(new Set([...acknowledged, id]))} />
    </main>
  );
}

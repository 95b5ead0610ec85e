/**
 * The signed-in token and chosen namespace. Kept in memory and in sessionStorage (so a reload of
 * the tab keeps the session and closing it forgets it); never in localStorage or a URL.
 */
export interface Session {
  token: string;
  /** '' for the root namespace. */
  namespace: string;
}

const STORAGE_KEY = 'strongroom.session';

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const parsed = JSON.parse(raw) as Partial<Session>;
    return typeof parsed.token === 'string' && parsed.token !== ''
      ? { token: parsed.token, namespace: typeof parsed.namespace === 'string' ? parsed.namespace : '' }
      : null;
  } catch {
    return null;
  }
}

let current: Session | null = load();
/** Why the last session ended, shown once on the sign-in page. */
let endedBecause: string | null = null;
const listeners = new Set<() => void>();

function changed(): void {
  for (const listener of [...listeners]) listener();
}

export function getSession(): Session | null {
  return current;
}

export function signIn(session: Session): void {
  current = { token: session.token, namespace: session.namespace.replace(/^\/+|\/+$/g, '') };
  endedBecause = null;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(current));
  changed();
}

/** Forgets the token; revokes nothing, since the token may be shared with other clients. */
export function signOut(reason: string | null = null): void {
  current = null;
  endedBecause = reason;
  sessionStorage.removeItem(STORAGE_KEY);
  changed();
}

export function takeSignOutReason(): string | null {
  const reason = endedBecause;
  endedBecause = null;
  return reason;
}

export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

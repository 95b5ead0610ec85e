import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { api } from '../api/client';

/** A custom message as the UI shows it: the body already decoded from base64. */
export interface UiMessage {
  id: string;
  title: string;
  body: string;
  type: 'banner' | 'modal';
  link: { title: string; href: string } | null;
}

interface StoredDisplay {
  title?: string;
  message?: string;
  type?: string;
  link?: Record<string, string> | null;
}

export function decodeBase64(text: string): string {
  try {
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    return new TextDecoder().decode(bytes);
  } catch {
    return text;
  }
}

export function encodeBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Only web links: a message is operator-written, but it must not be able to run script. */
export function safeLink(link: Record<string, string> | null | undefined): UiMessage['link'] {
  const [entry] = Object.entries(link ?? {});
  if (!entry) return null;
  const [title, href] = entry;
  return /^https?:\/\//i.test(href) ? { title, href } : null;
}

export function toUiMessage(id: string, m: StoredDisplay): UiMessage {
  return {
    id,
    title: m.title ?? '',
    body: decodeBase64(m.message ?? ''),
    type: m.type === 'modal' ? 'modal' : 'banner',
    link: safeLink(m.link),
  };
}

/** The active messages for the sign-in page (`authenticated` false) or for signed-in users. */
export async function fetchActiveMessages(authenticated: boolean, namespace?: string): Promise<UiMessage[]> {
  const path = authenticated ? 'sys/internal/ui/authenticated-messages' : 'sys/internal/ui/unauthenticated-messages';
  const res = await api.read<{ keys?: string[]; key_info?: Record<string, StoredDisplay> }>(path, {
    anonymous: !authenticated,
    ...(namespace === undefined ? {} : { namespace }),
  });
  const data = res?.data;
  return (data?.keys ?? []).map((id) => toUiMessage(id, data?.key_info?.[id] ?? {}));
}

function MessageLink({ link }: { link: UiMessage['link'] }): JSX.Element | null {
  if (!link) return null;
  return <a class="message-link" href={link.href} target="_blank" rel="noopener noreferrer">{link.title}</a>;
}

export function Banner({ message, onDismiss }: { message: UiMessage; onDismiss?: () => void }): JSX.Element {
  return (
    <div class="banner" role="status" data-message-id={message.id}>
      <div class="banner-text">
        <strong class="banner-title">{message.title}</strong>
        <span class="banner-body">{message.body}</span>
        <MessageLink link={message.link} />
      </div>
      {onDismiss && <button type="button" class="btn btn-quiet" aria-label={`Dismiss ${message.title}`} onClick={onDismiss}>Dismiss</button>}
    </div>
  );
}

/** A modal panel; `inline` draws it in place (the admin preview) instead of over the page. */
export function ModalCard({ message, onAcknowledge }: { message: UiMessage; onAcknowledge?: () => void }): JSX.Element {
  const button = useRef<HTMLButtonElement>(null);
  // A blocking dialog takes the keyboard focus, so it can be acknowledged without a pointer.
  useEffect(() => { if (onAcknowledge) button.current?.focus(); }, [message.id]);
  return (
    <div class="modal-card" data-message-id={message.id}>
      <h2 class="modal-title">{message.title}</h2>
      <p class="modal-body">{message.body}</p>
      <MessageLink link={message.link} />
      <div class="modal-actions">
        <button ref={button} type="button" class="btn btn-primary" onClick={onAcknowledge} disabled={!onAcknowledge}>Acknowledge</button>
      </div>
    </div>
  );
}

/** The first modal not yet acknowledged, over everything, until it is. */
export function ModalGate({ messages, acknowledged, onAcknowledge }: {
  messages: UiMessage[];
  acknowledged: ReadonlySet<string>;
  onAcknowledge: (id: string) => void;
}): JSX.Element | null {
  const next = messages.find((m) => m.type === 'modal' && !acknowledged.has(m.id));
  if (!next) return null;
  return (
    <div class="modal-backdrop">
      <div class="modal" role="dialog" aria-modal="true" aria-label={next.title}>
        <ModalCard message={next} onAcknowledge={() => onAcknowledge(next.id)} />
      </div>
    </div>
  );
}

export function pendingModals(messages: UiMessage[], acknowledged: ReadonlySet<string>): number {
  return messages.filter((m) => m.type === 'modal' && !acknowledged.has(m.id)).length;
}

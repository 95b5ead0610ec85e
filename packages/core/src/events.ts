import type { Logger } from './logger';

/** A change to a KV v2 secret, published after the change is durably stored. */
export interface KvEvent {
  kind: 'data-write' | 'data-patch' | 'data-delete' | 'data-undelete' | 'data-destroy' | 'metadata-write' | 'metadata-delete';
  mountPath: string;
  mountAccessor: string;
  /** Secret path within the mount, e.g. `app/db`. */
  path: string;
  /** The versions the change touched (the new version for writes). */
  versions: number[];
  /** The secret's current version after the change (0 when the secret is gone). */
  currentVersion: number;
}

export interface EventMap {
  kv: KvEvent;
}

type Listener<T> = (event: T) => void | Promise<void>;

/**
 * In-process publish/subscribe for changes other packages react to (secret sync listens to KV).
 * Listeners run after the change is stored and cannot fail the request that caused it: their
 * errors are logged, never thrown back.
 */
export class EventBus {
  private readonly listeners = new Map<keyof EventMap, Set<Listener<never>>>();

  constructor(private readonly logger?: Logger) {}

  subscribe<K extends keyof EventMap>(topic: K, listener: Listener<EventMap[K]>): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  publish<K extends keyof EventMap>(topic: K, event: EventMap[K]): void {
    const set = this.listeners.get(topic);
    if (!set) return;
    for (const listener of set) {
      try {
        const r = (listener as Listener<EventMap[K]>)(event);
        if (r && typeof (r as Promise<void>).catch === 'function') {
          (r as Promise<void>).catch((err: unknown) => this.logger?.error('event listener failed', { topic, err }));
        }
      } catch (err) {
        this.logger?.error('event listener failed', { topic, err });
      }
    }
  }
}

/**
 * Mutual exclusion per string key, for read-modify-write sections over storage (a KV write
 * checks cas then writes; a key rotation reads then stores). The active node is the only
 * writer, which makes an in-process lock sufficient. A section may hold several keys; they are
 * always taken in sorted order, so two sections wanting overlapping sets cannot each hold one
 * key while waiting for the other's.
 */
export class KeyedMutex {
  /** The tail of each key's queue; a key with no holder and no waiter has no entry. */
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    if (typeof keys === 'string' && !this.tails.has(keys)) return this.runAlone(keys, fn);
    const ordered = typeof keys === 'string' ? [keys] : [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of ordered) releases.push(await this.acquire(key));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  /** Keys currently held or waited for; zero once everything has settled (tests check for leaks). */
  get size(): number {
    return this.tails.size;
  }

  /**
   * The common case, a key nobody holds or waits for: taken at once, with no queue to wait
   * behind (a KV write of a new secret, on every request, pays for nothing more).
   */
  private async runAlone<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.tails.set(key, tail);
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}

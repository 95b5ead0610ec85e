/**
 * Serializes async work per key within this process. A KV write reads the secret's metadata,
 * checks cas against it and then writes, so two writers to one secret must not interleave;
 * the active node is the only writer, which makes an in-process lock sufficient.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    const tail = previous.then(() => held);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      // Only the last waiter's tail may be dropped, or a later waiter would lose its place.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys currently held or waited on; lets tests prove the map does not grow without bound. */
  get size(): number {
    return this.tails.size;
  }
}

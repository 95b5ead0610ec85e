/** The one call of a LevelDB iterator that a scan makes. */
export interface BatchIterator<K, V> {
  nextv(size: number): Promise<Array<[K, V]>>;
}

/**
 * An iterator's batches of up to `size` records, the next one already being read in the thread
 * pool while the caller handles the one before: a scan's LevelDB reads and its framing, hashing
 * and writing on the main thread overlap instead of taking turns. Closing the iterator stays the
 * caller's; it waits for a read still in flight.
 */
export async function* readAhead<K, V>(it: BatchIterator<K, V>, size: number): AsyncGenerator<Array<[K, V]>> {
  let next: Promise<Array<[K, V]>> | undefined = it.nextv(size);
  try {
    for (;;) {
      const batch: Array<[K, V]> = await next;
      next = undefined;
      if (batch.length === 0) return;
      next = it.nextv(size);
      yield batch;
    }
  } finally {
    // A caller that stopped early leaves a read in flight whose outcome has no one to reach.
    next?.catch(() => undefined);
  }
}

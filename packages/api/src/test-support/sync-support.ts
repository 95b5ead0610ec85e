/**
 * Helpers of the secret sync tests over HTTP: the queue and the reconciliation run in the
 * background, and the clients read their endpoints from operator settings at server start.
 */

/** Waits for `check` to hold, polling every 100 ms, `tries` times at most. */
export async function eventually<T>(what: string, read: () => Promise<T> | T, check: (v: T) => boolean, tries = 300): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < tries; i++) {
    last = await read();
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: still ${JSON.stringify(last)}`);
}

/** Operator settings in the environment for one test file, put back as they were afterwards. */
export function operatorSettings(): { set(name: string, value: string): void; restore(): void } {
  const saved: Record<string, string | undefined> = {};
  return {
    set(name, value) {
      if (!(name in saved)) saved[name] = process.env[name];
      process.env[name] = value;
    },
    restore() {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}

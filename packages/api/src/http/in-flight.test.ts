import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { InFlight } from './in-flight';

/** A stand-in response: what the tracker uses of one is its 'close' event. */
function response(): ServerResponse & { bulk?: unknown } {
  return new EventEmitter() as unknown as ServerResponse;
}

describe('responses in flight', () => {
  it('counts each response until it closes, once', () => {
    const inFlight = new InFlight();
    const a = response();
    const b = response();
    inFlight.track(a);
    inFlight.track(b);
    expect(inFlight.size).toBe(2);
    a.emit('close');
    a.emit('close');
    expect(inFlight.size).toBe(1);
    b.emit('close');
    expect(inFlight.size).toBe(0);
  });

  it('keeps no closed response alive through young-generation GCs', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options?: { type: 'minor' }) => void;
    const oldSpace = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;
    const inFlight = new InFlight();
    // The tracker lives as long as its listener: in the old generation.
    gc();
    const before = oldSpace();
    const open: ServerResponse[] = [];
    for (let i = 0; i < 400; i++) {
      const res = response();
      // About 8 KB of small objects, as a request's objects would be.
      res.bulk = Array.from({ length: 200 }, (_, n) => ({ n }));
      inFlight.track(res);
      open.push(res);
      if (open.length > 16) open.shift()?.emit('close');
    }
    while (open.length > 0) open.shift()?.emit('close');
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    // Kept responses would have moved about 3 MB into the old generation.
    expect(oldSpace() - before).toBeLessThan(1_000_000);
  });
});

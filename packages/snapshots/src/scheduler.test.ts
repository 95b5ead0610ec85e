import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { FakeClock, MemoryStorage, silentLogger } from '@strongroom/core';
import type { SnapshotConfig } from './config';
import { SnapshotScheduler, snapshotName } from './scheduler';
import { freshStatus, type SnapshotStatus } from './status';
import { openTarget } from './targets';

const SIZE = 10_000;

function save(s: SnapshotScheduler, config: SnapshotConfig): Promise<void> {
  return s.save(config.name, () => config);
}

async function waitFor<T>(probe: () => Promise<T | null | undefined | false>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('SnapshotScheduler', () => {
  let dir: string;
  let storage: MemoryStorage;
  let clock: FakeClock;
  let sources: number;
  let schedulers: SnapshotScheduler[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'snapshots-'));
    storage = new MemoryStorage();
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    sources = 0;
    schedulers = [];
  });
  afterEach(async () => {
    for (const s of schedulers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function scheduler(source?: () => Promise<Readable>): SnapshotScheduler {
    const s = new SnapshotScheduler({
      storage, clock, logger: silentLogger,
      source: source ?? (async () => {
        sources++;
        return Readable.from([Buffer.alloc(SIZE, sources)]);
      }),
    });
    schedulers.push(s);
    return s;
  }

  function local(name: string, extra: Partial<SnapshotConfig> = {}): SnapshotConfig {
    return {
      name, storage_type: 'local', interval: 60, retain: 1, path_prefix: join(dir, name), file_prefix: 'service-snapshot',
      local_max_space: 1_000_000, ...extra,
    } as SnapshotConfig;
  }

  const files = (name: string): string[] => {
    try {
      return readdirSync(join(dir, name)).sort();
    } catch {
      return [];
    }
  };

  /** Moves the clock and waits until the configuration has recorded `count` finished attempts in all. */
  /**
   * Moves the clock and waits until the configuration has finished an attempt that ended at or
   * after `ended` (and, with `ok`, succeeded). Timers that async work sets meanwhile for "now"
   * are fired as the wait goes on.
   */
  async function runsTo(s: SnapshotScheduler, name: string, ms: number, ended: number, ok = false): Promise<SnapshotStatus> {
    await clock.advance(ms);
    return waitFor(async () => {
      await clock.advance(0);
      const st = await s.status(name);
      return st && st.current === null && st.lastEnd >= ended && (!ok || st.lastError === '') ? st : null;
    }, `${name} to finish an attempt`);
  }

  it('takes the first snapshot one interval after creation, then one per interval, keeping `retain`', async () => {
    const s = scheduler();
    await s.start();
    const t0 = clock.now();
    await save(s, local('daily', { retain: 2 }));
    expect((await s.status('daily'))?.next).toBe(t0 + 60_000);
    await clock.advance(59_000);
    expect(files('daily')).toEqual([]);
    for (let i = 1; i <= 4; i++) await runsTo(s, 'daily', i === 1 ? 1_000 : 60_000, t0 + i * 60_000);
    expect(files('daily')).toEqual([snapshotName('service-snapshot', t0 + 180_000), snapshotName('service-snapshot', t0 + 240_000)]);
    expect(snapshotName('service-snapshot', t0 + 240_000)).toMatch(/^service-snapshot-\d{19}\.snap$/);
    const st = await s.status('daily');
    expect(st).toMatchObject({ consecutiveErrors: 0, lastError: '', lastSize: SIZE, next: t0 + 300_000 });
    expect(st?.lastUrl).toBe(`file://${join(dir, 'daily', snapshotName('service-snapshot', t0 + 240_000))}`);
    expect(sources).toBe(4);
  });

  it('fails an attempt that would pass local_max_space, leaving the snapshots already there untouched', async () => {
    const s = scheduler();
    await s.start();
    const t0 = clock.now();
    // A file of someone else's with the same prefix counts too.
    const cfg = local('capped', { retain: 5, local_max_space: 3 * SIZE - 1 });
    await save(s, cfg);
    await runsTo(s, 'capped', 60_000, t0 + 60_000);
    writeFileSync(join(dir, 'capped', 'service-snapshot-manual-copy'), Buffer.alloc(SIZE + 5));
    const before = files('capped');
    let st = await runsTo(s, 'capped', 60_000, t0 + 120_000);
    expect(st.consecutiveErrors).toBe(1);
    expect(st.lastError).toMatch(/not enough space.*local_max_space 29999/);
    st = await runsTo(s, 'capped', 60_000, t0 + 180_000);
    expect(st.consecutiveErrors).toBe(2);
    expect(files('capped')).toEqual(before);
    expect(st.lastUrl).toBe(`file://${join(dir, 'capped', before[0] as string)}`);

    await save(s, { ...cfg, local_max_space: 10 * SIZE } as SnapshotConfig);
    st = await runsTo(s, 'capped', 60_000, t0 + 240_000);
    expect(st).toMatchObject({ consecutiveErrors: 0, lastError: '' });
    expect(files('capped')).toHaveLength(3);
  });

  it('records a failing destination in its status without holding up the other configurations', async () => {
    writeFileSync(join(dir, 'not-a-directory'), 'x');
    const s = scheduler();
    await s.start();
    const t0 = clock.now();
    await save(s, local('broken', { path_prefix: join(dir, 'not-a-directory', 'snaps') }));
    await save(s, local('fine'));
    await clock.advance(60_000);
    const broken = await waitFor(async () => (await s.status('broken'))?.lastError, 'the failure');
    expect(broken).toMatch(/ENOTDIR|not a directory/i);
    await waitFor(async () => ((await s.status('fine'))?.lastEnd ?? 0) >= t0 + 60_000, 'the other configuration');
    expect(files('fine')).toHaveLength(1);
    expect((await s.status('broken'))?.consecutiveErrors).toBe(1);
  });

  it('keeps the schedule across a restart: nothing skipped, nothing doubled', async () => {
    const first = scheduler();
    await first.start();
    const t0 = clock.now();
    await save(first, local('hourly'));
    await runsTo(first, 'hourly', 60_000, t0 + 60_000);
    await first.stop();

    // Back within the interval: the next snapshot keeps its time.
    await clock.advance(30_000);
    const second = scheduler();
    await second.start();
    await clock.advance(29_000);
    expect(sources).toBe(1);
    await runsTo(second, 'hourly', 1_000, t0 + 120_000);
    expect(sources).toBe(2);
    await second.stop();

    // Down for five intervals: one snapshot on return, then the interval again.
    await clock.advance(300_000);
    const third = scheduler();
    await third.start();
    const back = clock.now();
    const st = await runsTo(third, 'hourly', 0, back);
    expect(sources).toBe(3);
    expect(st.next).toBe(back + 60_000);
  });

  it('takes again at once an attempt that a stop cut short, and leaves no partial file', async () => {
    let hang: PassThrough | null = null;
    const stuck = scheduler(async () => {
      hang = new PassThrough();
      hang.write(Buffer.alloc(1000));
      return hang;
    });
    await stuck.start();
    const t0 = clock.now();
    await save(stuck, local('cut'));
    await clock.advance(60_000);
    await waitFor(async () => hang !== null, 'the attempt to start');
    await stuck.stop();
    expect((await stuck.status('cut'))?.current?.start).toBe(t0 + 60_000);
    expect(files('cut')).toEqual([]);

    const next = scheduler();
    await next.start();
    const st = await runsTo(next, 'cut', 0, t0 + 60_000, true);
    expect(sources).toBe(1);
    expect(st).toMatchObject({ consecutiveErrors: 0, lastError: '', next: t0 + 120_000 });
    expect(files('cut')).toHaveLength(1);
  });

  it('counts an interrupted attempt as done when its snapshot reached the destination', async () => {
    const s = scheduler();
    await s.start();
    const t0 = clock.now();
    await save(s, local('landed'));
    await runsTo(s, 'landed', 60_000, t0 + 60_000);
    await s.stop();
    // As if the node stopped between the write and the status update.
    const file = snapshotName('service-snapshot', t0 + 120_000);
    writeFileSync(join(dir, 'landed', file), Buffer.alloc(SIZE));
    const status = (await s.status('landed')) as SnapshotStatus;
    status.current = { start: t0 + 120_000, name: file, url: `file://${join(dir, 'landed', file)}` };
    status.next = t0 + 180_000;
    await storage.put('core/snapshot-auto/status/landed', Buffer.from(JSON.stringify(status)));
    await clock.advance(70_000);

    const next = scheduler();
    await next.start();
    const st = await waitFor(async () => {
      const v = await next.status('landed');
      return v && v.current === null ? v : null;
    }, 'recovery');
    expect(st).toMatchObject({ lastUrl: status.current.url, lastError: '', lastSize: SIZE, next: t0 + 180_000 });
    expect(sources).toBe(1);
  });

  it('stops a configuration on delete and keeps the snapshots it wrote', async () => {
    const s = scheduler();
    await s.start();
    const t0 = clock.now();
    await save(s, local('gone'));
    await runsTo(s, 'gone', 60_000, t0 + 60_000);
    await s.remove('gone');
    expect(await s.names()).toEqual([]);
    expect(await s.status('gone')).toBeNull();
    await clock.advance(120_000);
    expect(sources).toBe(1);
    expect(files('gone')).toHaveLength(1);
  });

  it('does nothing while stopped (a standby)', async () => {
    const s = scheduler();
    await save(s, local('idle'));
    await clock.advance(600_000);
    expect(sources).toBe(0);
  });

  it('records a destination that cannot even be opened, once per interval', async () => {
    const s = new SnapshotScheduler({
      storage, clock, logger: silentLogger, source: async () => { sources++; return Readable.from([Buffer.alloc(1)]); },
      openTarget: () => { throw new Error('no client for this'); },
    });
    schedulers.push(s);
    await s.start();
    const t0 = clock.now();
    await storage.put('core/snapshot-auto/config/odd', Buffer.from(JSON.stringify(local('odd'))));
    await storage.put('core/snapshot-auto/status/odd', Buffer.from(JSON.stringify(freshStatus(t0 + 60_000))));
    await s.stop();
    await s.start();
    const st = await runsTo(s, 'odd', 60_000, t0 + 60_000);
    expect(st).toMatchObject({ consecutiveErrors: 1, lastError: 'no client for this', next: t0 + 120_000 });
    await clock.advance(30_000);
    expect((await s.status('odd'))?.consecutiveErrors).toBe(1);
    expect(sources).toBe(0);
  });

  it('backs off when storage refuses to record an attempt, instead of retrying at once', async () => {
    let refused = 0;
    const flaky = new MemoryStorage();
    const realPut = flaky.put.bind(flaky);
    let refuse = false;
    flaky.put = async (key, value) => {
      if (refuse && key.startsWith('core/snapshot-auto/status/')) {
        refused++;
        throw new Error('not the leader');
      }
      return realPut(key, value);
    };
    storage = flaky;
    const s = scheduler();
    await s.start();
    await save(s, local('refused'));
    refuse = true;
    await clock.advance(60_000 + 120_000);
    // Due at 60 s, then retried after 5, 10, 20 and 40 s: five tries in two minutes.
    expect(refused).toBeGreaterThanOrEqual(4);
    expect(refused).toBeLessThanOrEqual(6);
    expect(sources).toBe(0);
    refuse = false;
    await clock.advance(80_000);
    await waitFor(async () => sources === 1, 'the attempt once storage takes it again');
  });

  it('closes the snapshot stream when the writer fails before reading it', async () => {
    writeFileSync(join(dir, 'file'), 'x');
    let stream: Readable | null = null;
    const s = scheduler(async () => {
      stream = Readable.from([Buffer.alloc(10)]);
      return stream;
    });
    await s.start();
    const t0 = clock.now();
    await save(s, local('early', { path_prefix: join(dir, 'file') }));
    const st = await runsTo(s, 'early', 60_000, t0 + 60_000);
    expect(st.lastError).toMatch(/EEXIST|ENOTDIR|exists|not a directory/i);
    expect((stream as Readable | null)?.destroyed).toBe(true);
  });

  it('does not run a configuration saved while its interrupted attempt is being settled until that is done', async () => {
    const first = scheduler();
    await first.start();
    const t0 = clock.now();
    await save(first, local('slow'));
    await runsTo(first, 'slow', 60_000, t0 + 60_000);
    await first.stop();
    const status = (await first.status('slow')) as SnapshotStatus;
    const file = snapshotName('service-snapshot', t0 + 120_000);
    status.current = { start: t0 + 120_000, name: file, url: `file://${join(dir, 'slow', file)}` };
    status.next = t0 + 180_000;
    await storage.put('core/snapshot-auto/status/slow', Buffer.from(JSON.stringify(status)));
    await clock.advance(70_000);

    let release: () => void = () => {};
    const listed = new Promise<void>((r) => { release = r; });
    const second = new SnapshotScheduler({
      storage, clock, logger: silentLogger,
      source: async () => { sources++; return Readable.from([Buffer.alloc(SIZE)]); },
      openTarget: (c) => {
        const t = openTarget(c);
        return { ...t, url: (n) => t.url(n), write: (...a) => t.write(...a), remove: (n) => t.remove(n), close: () => t.close(), list: async () => { await listed; return t.list(); } };
      },
    });
    schedulers.push(second);
    await second.start();
    await save(second, { ...local('slow'), retain: 3 } as SnapshotConfig);
    await clock.advance(1_000);
    expect(sources).toBe(1);
    release();
    await waitFor(async () => (await second.status('slow'))?.lastError.startsWith('interrupted'), 'the attempt to be settled');
    await clock.advance(0);
    await waitFor(async () => sources === 2, 'the retaken snapshot');
    await clock.advance(1_000);
    expect(sources).toBe(2);
  });

  it('stops within a bounded time even when a destination never answers', async () => {
    const status = { ...freshStatus(clock.now()), current: { start: clock.now(), name: 'x', url: 'file:///x' } };
    await storage.put('core/snapshot-auto/config/hung', Buffer.from(JSON.stringify(local('hung'))));
    await storage.put('core/snapshot-auto/status/hung', Buffer.from(JSON.stringify(status)));
    const s = new SnapshotScheduler({
      storage, clock, logger: silentLogger, source: async () => Readable.from([]),
      openTarget: () => ({ url: () => 'file:///x', write: () => new Promise(() => {}), list: () => new Promise(() => {}), remove: async () => {}, close: () => {} }),
    });
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    await s.start();
    const began = Date.now();
    await s.stop();
    expect(Date.now() - began).toBeLessThan(15_000);
    // Settling the interrupted attempt gave up with the stop: no wait on the listing is left
    // behind, and the attempt stays marked running for the next active node.
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBeLessThanOrEqual(timersBefore);
    expect(JSON.parse((await storage.get('core/snapshot-auto/status/hung'))!.toString()).current).toMatchObject({ name: 'x' });
  }, 20_000);
});

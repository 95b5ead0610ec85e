import { testing } from '@strongroom/core';
import { KV } from './test-support/fakes';
import { valid } from './test-support/fixtures';
import { syncRig, type SyncRig } from './test-support/sync-rig';

const { data, failure } = testing;

let rig: SyncRig;
beforeEach(async () => {
  rig = await syncRig();
  await rig.ok('update', 'sys/sync/destinations/deployhost-project/vc', valid('deployhost-project'));
});
afterEach(() => rig.close());

const SET = 'sys/sync/destinations/deployhost-project/vc/associations/set';
const REMOVE = 'sys/sync/destinations/deployhost-project/vc/associations/remove';
const VIEW = 'sys/sync/destinations/deployhost-project/vc/associations';

/** Lets the background loops run until `done` holds (bounded: a few thousand turns of the event loop). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

async function statuses(): Promise<Record<string, string>> {
  const secrets = data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { sync_status: string }>;
  return Object.fromEntries(Object.entries(secrets).map(([k, v]) => [k, v.sync_status]));
}

async function queued(): Promise<number> {
  return (await rig.core.barrier.list('sys/sync/queue/')).length;
}

describe('the sync queue', () => {
  it('syncs on association, on each KV change from the feed, and unsyncs on removal', async () => {
    rig.kv.write('app/db', { user: 'app', password: 'one' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'app/db' });
    await until(() => rig.destination.values.get('PASSWORD') === 'one', 'the first sync');
    expect(rig.destination.values.get('USER')).toBe('app');
    await until(async () => (await statuses())[`${KV.accessor}/app/db/password`] === 'SYNCED', 'SYNCED');

    rig.kv.write('app/db', { password: 'two' });
    await until(() => rig.destination.values.get('PASSWORD') === 'two', 'the update');
    // The key the new version no longer holds is removed.
    await until(() => !rig.destination.values.has('USER'), 'the stale key removed');

    rig.kv.delete('app/db');
    await until(() => rig.destination.values.size === 0, 'the delete');
    await until(async () => Object.values(await statuses()).every((s) => s === 'UNSYNCED'), 'UNSYNCED');

    rig.kv.write('app/db', { password: 'three' });
    await until(() => rig.destination.values.get('PASSWORD') === 'three', 'the write after the delete');
    await rig.ok('update', REMOVE, { mount: 'kv', secret_name: 'app/db' });
    await until(() => rig.destination.values.size === 0, 'the unsync');
    expect(data(await rig.ok('read', VIEW))['associated_secrets']).toEqual({});
    await until(async () => (await queued()) === 0, 'an empty queue');
  });

  it('holds work as PENDING while disabled, and runs it in order once re-enabled', async () => {
    await rig.ok('patch', 'sys/sync/config', { disabled: true });
    rig.kv.write('a', { k: '1' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    rig.kv.write('a', { k: '2' });
    rig.kv.write('a', { k: '3' });
    await until(async () => (await queued()) === 3, 'three operations queued');
    expect(await statuses()).toEqual({ [`${KV.accessor}/a`]: 'PENDING' });
    // Nothing was sent, however long it waits.
    await rig.clock.advance(120_000);
    expect(rig.destination.calls).toBe(0);

    await rig.ok('patch', 'sys/sync/config', { disabled: false });
    await until(async () => (await queued()) === 0, 'the queue drained');
    expect(rig.destination.values.get('K')).toBe('3');
    expect(await statuses()).toEqual({ [`${KV.accessor}/a/k`]: 'SYNCED' });
  });

  it('refuses operations past queue_capacity and says so in the status', async () => {
    await rig.ok('patch', 'sys/sync/config', { disabled: true, queue_capacity: 1 });
    rig.kv.write('a', { k: '1' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'b' });
    const secrets = data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { sync_status: string; last_error?: string }>;
    expect(secrets[`${KV.accessor}/a`]?.sync_status).toBe('PENDING');
    expect(secrets[`${KV.accessor}/b`]).toMatchObject({ sync_status: 'INTERNAL_VAULT_ERROR', last_error: expect.stringContaining('queue_capacity 1') });
    // A KV change to a queued secret finds no room either.
    rig.kv.write('a', { k: '2' });
    await until(async () => ((data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { sync_status: string }>)[`${KV.accessor}/a`]?.sync_status) === 'INTERNAL_VAULT_ERROR', 'the refusal shown');
    expect(await queued()).toBe(1);
    // Removing needs room for the unsync, or the external secret would stay behind for good.
    const f = await failure(rig.call('update', REMOVE, { mount: 'kv', secret_name: 'a' }));
    expect(f.status).toBe(503);
    expect(f.message).toContain('queue_capacity');
  });

  it('retries a failing destination with backoff from 1 s doubling to 30 s, the status saying why', async () => {
    rig.kv.write('a', { k: '1' });
    rig.destination.failNext(8);
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    await until(() => rig.destination.calls === 1, 'the first attempt');
    await until(async () => (await statuses())[`${KV.accessor}/a`] === 'EXTERNAL_SERVICE_ERROR', 'the error status');
    const view = data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { last_error: string }>;
    // The destination's message, with the credential it quoted masked.
    expect(view[`${KV.accessor}/a`]?.last_error).toBe('the service is unavailable');
    const gaps: number[] = [];
    for (let attempt = 2; attempt <= 9; attempt++) {
      const before = rig.destination.calls;
      let waited = 0;
      while (rig.destination.calls === before && waited < 60_000) {
        await rig.clock.advance(250);
        waited += 250;
        await until(() => true, '');
      }
      gaps.push(waited);
    }
    expect(gaps).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    await until(() => rig.destination.values.get('K') === '1', 'the sync once the destination is back');
    await until(async () => (await statuses())[`${KV.accessor}/a/k`] === 'SYNCED', 'SYNCED');
  });

  it('loses and repeats nothing across a restart: the cursor and the queue are in storage', async () => {
    rig.kv.write('a', { k: '1' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    await until(() => rig.destination.values.get('K') === '1', 'the first sync');
    await rig.ok('patch', 'sys/sync/config', { disabled: true });
    rig.kv.write('a', { k: '2' });
    await until(async () => (await queued()) === 1, 'the change queued');
    await rig.restart();
    // Changes made while no node was active are read from the feed after the stored cursor.
    rig.kv.write('a', { k: '3' });
    rig.feed.other();
    await until(async () => (await queued()) === 2, 'the later change queued once, the earlier not again');
    await rig.ok('patch', 'sys/sync/config', { disabled: false });
    await until(async () => (await queued()) === 0, 'the queue drained');
    expect(rig.destination.values.get('K')).toBe('3');
    // One external version per KV version: v1, then v3 (the v2 operation ran after v3 was written, last write wins).
    expect(rig.destination.versions.map((v) => v.value)).toEqual(['1', '3']);
  });

  it('runs an operation whose result was not recorded again without a second external version', async () => {
    rig.kv.write('a', { k: '1' });
    await rig.ok('patch', 'sys/sync/config', { disabled: true });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    // A crash between the write at the destination and its record: the operation is still queued.
    const op = (await rig.core.barrier.list('sys/sync/queue/'))[0] as string;
    await rig.destination.clients({ type: 'deployhost-project', connection: {} } as never, {} as never).put('K', '1', 'unused');
    rig.destination.versions.length = 0;
    await rig.ok('patch', 'sys/sync/config', { disabled: false });
    await until(async () => (await rig.core.barrier.get(`sys/sync/queue/${op}`)) === null, 'the operation done');
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    await until(async () => (await queued()) === 0, 'the refresh done');
    // Both runs of v1 used one token.
    expect(new Set(rig.destination.versions.map((v) => v.token)).size).toBe(1);
  });

  it('reconciles every association when the cursor has left the feed\'s window', async () => {
    rig.kv.write('a', { k: '1' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'a' });
    await until(() => rig.destination.values.get('K') === '1', 'the first sync');
    await rig.core.close();
    rig.kv.write('a', { k: '2' });
    rig.feed.forget();
    rig.feed.other();
    await rig.restart();
    await until(() => rig.destination.values.get('K') === '2', 'the reconciliation');
  });
});

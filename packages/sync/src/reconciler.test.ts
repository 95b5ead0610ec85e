import { testing } from '@strongroom/core';
import { KV } from './test-support/fakes';
import { valid } from './test-support/fixtures';
import { syncRig, TEST_SETTINGS, type SyncRig } from './test-support/sync-rig';

const { data } = testing;

const INTERVAL = 60_000;
const SET = 'sys/sync/destinations/deployhost-project/vc/associations/set';
const VIEW = 'sys/sync/destinations/deployhost-project/vc/associations';

let rig: SyncRig;
afterEach(() => rig.close());

async function start(reconcileBatch?: number): Promise<void> {
  rig = await syncRig({ ...TEST_SETTINGS, reconcileIntervalMs: INTERVAL }, reconcileBatch !== undefined ? { reconcileBatch } : {});
  await rig.ok('update', 'sys/sync/destinations/deployhost-project/vc', valid('deployhost-project'));
}

/** Lets the background loops run until `done` holds (bounded: a few thousand turns of the event loop). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

const queued = async () => (await rig.core.barrier.list('sys/sync/queue/')).length;

async function settle(): Promise<void> {
  await until(async () => (await queued()) === 0, 'an empty queue');
  // A round's reads run after its timer fires: let them finish.
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
}

/** One reconciliation round: the timer fires, and what it queued is run. */
async function round(): Promise<void> {
  const reads = rig.destination.reads;
  await rig.clock.advance(INTERVAL);
  await until(() => rig.destination.reads > reads, 'a round reading the destination');
  await settle();
}

async function associate(name: string, value: string, key = 'k'): Promise<void> {
  rig.kv.write(name, { [key]: value });
  await rig.ok('update', SET, { mount: 'kv', secret_name: name });
  await settle();
}

describe('the periodic reconciliation', () => {
  it('puts back a value changed or deleted out of band, as a new version; leaves a matching one alone', async () => {
    await start();
    await associate('a', 'one');
    expect(rig.destination.values.get('K')).toBe('one');
    const written = rig.destination.versions.length;

    await round();
    // Nothing differed: nothing written.
    expect(rig.destination.versions).toHaveLength(written);

    rig.destination.values.set('K', 'changed elsewhere');
    await round();
    await until(() => rig.destination.values.get('K') === 'one', 'the value put back');
    // A version of its own: the KV version's token would only name the version that was overwritten.
    expect(rig.destination.versions).toHaveLength(written + 1);
    expect(new Set(rig.destination.versions.map((v) => v.token)).size).toBe(written + 1);
    const statuses = data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { sync_status: string }>;
    expect(statuses[`${KV.accessor}/a/k`]?.sync_status).toBe('SYNCED');

    rig.destination.values.delete('K');
    await round();
    await until(() => rig.destination.values.get('K') === 'one', 'the deleted value put back');
  });

  it('removes a secret that came back out of band after its KV secret was deleted', async () => {
    await start();
    // secret-path granularity: the one name is known with the secret gone.
    await rig.ok('update', 'sys/sync/destinations/cloud1-sm/aws', valid('cloud1-sm'));
    rig.kv.write('a', { k: 'one' });
    await rig.ok('update', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'kv', secret_name: 'a' });
    const name = `vault/${KV.accessor}/a`;
    await until(() => rig.destination.values.get(name) === JSON.stringify({ k: 'one' }), 'the first sync');
    rig.kv.delete('a');
    await until(() => !rig.destination.values.has(name), 'the delete');
    await settle();
    rig.destination.values.set(name, 'restored elsewhere');
    await round();
    await until(() => !rig.destination.values.has(name), 'the secret removed again');
  });

  it('never runs while sync is disabled', async () => {
    await start();
    await associate('a', 'one');
    await rig.ok('patch', 'sys/sync/config', { disabled: true });
    rig.destination.values.set('K', 'changed elsewhere');
    const reads = rig.destination.reads;
    for (let i = 0; i < 3; i++) {
      await rig.clock.advance(INTERVAL);
      for (let j = 0; j < 50; j++) await new Promise((r) => setImmediate(r));
    }
    expect(rig.destination.reads).toBe(reads);
    expect(rig.destination.values.get('K')).toBe('changed elsewhere');
    await rig.ok('patch', 'sys/sync/config', { disabled: false });
    await round();
    await until(() => rig.destination.values.get('K') === 'one', 'the value put back once enabled');
  });

  it('reads at most a batch of associations per round, going on from where the last round stopped', async () => {
    await start(2);
    const names = ['a', 'b', 'c', 'd', 'e'];
    // secret-key granularity, named by the key alone: a key of its own for each.
    for (const n of names) await associate(n, `v-${n}`, n);
    for (const n of names) rig.destination.values.set(n.toUpperCase(), 'changed elsewhere');
    const fixed = () => names.filter((n) => rig.destination.values.get(n.toUpperCase()) === `v-${n}`).length;

    const reads = rig.destination.reads;
    await round();
    await until(() => fixed() === 2, 'two put back');
    // Two associations read by the round (one name each), and again by the two syncs before they write: bounded.
    expect(rig.destination.reads - reads).toBe(2 + 2);
    await round();
    await until(() => fixed() === 4, 'two more put back');
    await round();
    await until(() => fixed() === 5, 'the last one put back');
    // The third round wrapped around to `a`, which matched: read, not written.
    expect(rig.destination.reads - reads).toBe(4 + 4 + 3);
  });

  it('leaves a secret written since it was found changed to that version\'s own sync: one external version each', async () => {
    await start();
    await associate('a', 'one');
    const written = rig.destination.versions.length;
    rig.destination.values.set('K', 'changed elsewhere');
    // The put-back fails once, so it waits for its retry behind...
    rig.destination.failNextPuts(1);
    await rig.clock.advance(INTERVAL);
    await until(async () => (await rig.core.barrier.list('sys/sync/queue/')).length === 1 && rig.destination.versions.length === written &&
      (data(await rig.ok('read', VIEW))['associated_secrets'] as Record<string, { sync_status: string }>)[`${KV.accessor}/a/k`]?.sync_status === 'EXTERNAL_SERVICE_ERROR',
    'the put-back waiting for its retry');
    // ... a new KV version, whose sync queues behind it.
    rig.kv.write('a', { k: 'two' });
    await until(async () => (await queued()) === 2, 'the new version queued');
    await rig.clock.advance(1000);
    await settle();
    expect(rig.destination.values.get('K')).toBe('two');
    expect(rig.destination.versions.slice(written).map((v) => v.value)).toEqual(['two']);
  });

  it('a destination that cannot be read waits for the next round', async () => {
    await start();
    await associate('a', 'one');
    rig.destination.values.set('K', 'changed elsewhere');
    rig.kv.write('a', { k: 'two' });
    await settle();
    rig.destination.values.set('K', 'changed elsewhere');
    rig.destination.failNext(1);
    const calls = rig.destination.calls;
    await rig.clock.advance(INTERVAL);
    await until(() => rig.destination.calls > calls, 'the failed read');
    await settle();
    expect(rig.destination.values.get('K')).toBe('changed elsewhere');
    await round();
    await until(() => rig.destination.values.get('K') === 'two', 'the value put back');
  });
});

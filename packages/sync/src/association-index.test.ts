import { SECRET_INDEX_PREFIX } from './association-index';
import { KV } from './test-support/fakes';
import { valid } from './test-support/fixtures';
import { syncRig, type SyncRig } from './test-support/sync-rig';
import type { SyncMount } from './host';

/** A second KV v2 mount, with no association unless a test makes one. */
const OTHER: SyncMount = { ...KV, path: 'other/', accessor: 'kv_5678efgh' };

const SET = 'sys/sync/destinations/deployhost-project/vc/associations/set';
const REMOVE = 'sys/sync/destinations/deployhost-project/vc/associations/remove';

let rig: SyncRig;
beforeEach(async () => {
  rig = await syncRig();
  rig.kv.mounts.push(OTHER);
  await rig.ok('update', 'sys/sync/destinations/deployhost-project/vc', valid('deployhost-project'));
});
afterEach(() => rig.close());

/** Lets the background loops run until `done` holds (bounded: a few thousand turns of the event loop). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/** Counts the storage listings of one mount's association index from now on (each is an iterator in LevelDB). */
function countLookups(mount: SyncMount): { count: number } {
  const counter = { count: 0 };
  const barrier = rig.core.barrier;
  const list = barrier.list.bind(barrier);
  const dir = `${SECRET_INDEX_PREFIX}${encodeURIComponent(mount.accessor)}/`;
  jest.spyOn(barrier, 'list').mockImplementation((prefix: string) => {
    if (prefix.startsWith(dir)) counter.count++;
    return list(prefix);
  });
  return counter;
}

/** Writes a marker to the associated `kv` mount and waits for its sync: every change before it has been handled. */
async function settle(value: string): Promise<void> {
  rig.kv.write('marker', { marker: value });
  await until(() => rig.destination.values.get('MARKER') === value, `the marker ${value}`);
}

async function removeStored(prefix: string): Promise<void> {
  const barrier = rig.core.barrier;
  for (const child of await barrier.list(prefix)) {
    if (child.endsWith('/')) await removeStored(prefix + child);
    else await barrier.delete(prefix + child);
  }
}

describe('the index of mounts with associations', () => {
  beforeEach(async () => {
    rig.kv.write('marker', { marker: 'first' });
    await rig.ok('update', SET, { mount: 'kv', secret_name: 'marker' });
    await settle('start');
  });

  it('skips the lookup of a change under a mount with no associations', async () => {
    const lookups = countLookups(OTHER);
    for (let i = 0; i < 20; i++) rig.kv.write(`app/${i}`, { password: String(i) }, OTHER);
    await settle('after');
    expect(lookups.count).toBe(0);
    expect(rig.destination.values.has('PASSWORD')).toBe(false);
  });

  it('follows an association set and removed through the API', async () => {
    rig.kv.write('app/db', { password: 'one' }, OTHER);
    await rig.ok('update', SET, { mount: 'other', secret_name: 'app/db' });
    await until(() => rig.destination.values.get('PASSWORD') === 'one', 'the sync on association');
    rig.kv.write('app/db', { password: 'two' }, OTHER);
    await until(() => rig.destination.values.get('PASSWORD') === 'two', 'the sync of a write after the association');

    await rig.ok('update', REMOVE, { mount: 'other', secret_name: 'app/db' });
    await until(() => !rig.destination.values.has('PASSWORD'), 'the unsync');
    // The first change after the removal confirms there is none left; later ones look up nothing.
    rig.kv.write('app/db', { password: 'three' }, OTHER);
    await settle('confirmed');
    const lookups = countLookups(OTHER);
    for (let i = 0; i < 5; i++) rig.kv.write('app/db', { password: `later ${i}` }, OTHER);
    await settle('after');
    expect(lookups.count).toBe(0);
    expect(rig.destination.values.has('PASSWORD')).toBe(false);
  });

  it('follows associations written elsewhere, as the commit feed carries them', async () => {
    // What another node stored before this one became active: the records, and the feed's entry for them.
    const indexKey = `${SECRET_INDEX_PREFIX}${encodeURIComponent(OTHER.accessor)}/${encodeURIComponent('app/db')}/deployhost-project/vc`;
    const associationKey = `sys/sync/associations/root/deployhost-project/vc/${encodeURIComponent(`${OTHER.accessor}/app/db`)}`;
    const record = {
      namespace_id: 'root', type: 'deployhost-project', name: 'vc', accessor: OTHER.accessor, secret_name: 'app/db',
      granularity: 'secret-key', template: '{{ .SecretKey | uppercase }}', sync_status: 'SYNCED', updated_at: 1, synced: {}, synced_version: 0,
    };
    await rig.core.barrier.put(associationKey, Buffer.from(JSON.stringify(record)));
    await rig.core.barrier.put(indexKey, Buffer.from(JSON.stringify({ namespace_id: 'root' })));
    rig.feed.system([{ type: 'put', key: associationKey }, { type: 'put', key: indexKey }]);
    rig.kv.write('app/db', { password: 'from elsewhere' }, OTHER);
    await until(() => rig.destination.values.get('PASSWORD') === 'from elsewhere', 'the sync of an association made elsewhere');
  });

  it('is read from storage again after a restart', async () => {
    rig.kv.write('app/db', { password: 'one' }, OTHER);
    await rig.ok('update', SET, { mount: 'other', secret_name: 'app/db' });
    await until(() => rig.destination.values.get('PASSWORD') === 'one', 'the sync on association');
    await rig.restart();
    rig.kv.write('app/db', { password: 'two' }, OTHER);
    await until(() => rig.destination.values.get('PASSWORD') === 'two', 'the sync after the restart');

    await rig.ok('update', REMOVE, { mount: 'other', secret_name: 'app/db' });
    await until(() => !rig.destination.values.has('PASSWORD'), 'the unsync');
    await rig.restart();
    await settle('restarted');
    const lookups = countLookups(OTHER);
    rig.kv.write('app/db', { password: 'three' }, OTHER);
    await settle('after');
    expect(lookups.count).toBe(0);
  });

  it('is read from storage again after a restore', async () => {
    rig.kv.write('app/db', { password: 'one' }, OTHER);
    await rig.ok('update', SET, { mount: 'other', secret_name: 'app/db' });
    await until(() => rig.destination.values.get('PASSWORD') === 'one', 'the sync on association');
    await settle('before the restore');

    // The restored state has no association of `other`, only the marker's.
    const prefix = `${SECRET_INDEX_PREFIX}${encodeURIComponent(OTHER.accessor)}/`;
    await removeStored(prefix);
    await rig.core.barrier.delete(`sys/sync/associations/root/deployhost-project/vc/${encodeURIComponent(`${OTHER.accessor}/app/db`)}`);
    rig.feed.restored();
    await settle('restored');
    const lookups = countLookups(OTHER);
    rig.kv.write('app/db', { password: 'two' }, OTHER);
    await settle('after');
    expect(lookups.count).toBe(0);
    expect(rig.destination.values.get('PASSWORD')).toBe('one');
  });
});

import { testing } from '@strongroom/core';
import { KV } from './test-support/fakes';
import { valid } from './test-support/fixtures';
import { syncRig, type SyncRig } from './test-support/sync-rig';

const { data } = testing;

let rig: SyncRig;
beforeEach(async () => {
  rig = await syncRig();
  await rig.ok('update', DEST, valid('deployhost-project'));
});
afterEach(() => rig.close());

const DEST = 'sys/sync/destinations/deployhost-project/vc';

/** Lets the background loops run until `done` holds (bounded: a few thousand turns of the event loop). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/** The mount leaves the tables, and the feed shows the table's change, as disabling it does. */
function disableKv(): void {
  rig.kv.mounts.splice(rig.kv.mounts.indexOf(KV), 1);
  rig.feed.other('core/mounts');
}

describe('a mount that goes', () => {
  it('takes its associations with it and unsyncs their secrets, durably: the unsync queued survives a restart', async () => {
    rig.kv.write('a', { user: 'u' });
    await rig.ok('update', `${DEST}/associations/set`, { mount: 'kv', secret_name: 'a' });
    await until(() => rig.destination.values.get('USER') === 'u', 'the sync');
    await rig.ok('patch', 'sys/sync/config', { disabled: true });

    disableKv();
    await until(async () => Object.keys(data(await rig.ok('read', `${DEST}/associations`))['associated_secrets'] as object).length === 0, 'the association removed');
    expect((await rig.call('delete', DEST)).status).toBe(204);
    // Held while disabled, in storage: a restart keeps it.
    expect(rig.destination.values.get('USER')).toBe('u');
    await rig.restart();
    await rig.ok('patch', 'sys/sync/config', { disabled: false });
    await until(() => rig.destination.values.size === 0, 'the unsync after the restart');
    expect((await rig.core.barrier.list('sys/sync/queue/')).length).toBe(0);
  });

  it('leaves the associations of mounts still there, whatever else the tables changed', async () => {
    rig.kv.write('a', { user: 'u' });
    await rig.ok('update', `${DEST}/associations/set`, { mount: 'kv', secret_name: 'a' });
    await until(() => rig.destination.values.get('USER') === 'u', 'the sync');
    rig.feed.other('core/mounts');
    rig.kv.write('a', { user: 'u2' });
    await until(() => rig.destination.values.get('USER') === 'u2', 'the next sync');
    expect(Object.keys(data(await rig.ok('read', `${DEST}/associations`))['associated_secrets'] as object)).toHaveLength(1);
  });
});

import { testing } from '@strongroom/core';
import { valid } from './test-support/fixtures';
import { syncRig, type SyncRig } from './test-support/sync-rig';

const { data, failure } = testing;

let rig: SyncRig;
beforeEach(async () => {
  rig = await syncRig();
  await rig.ok('update', DEST, valid('deployhost-project'));
});
afterEach(() => rig.close());

const DEST = 'sys/sync/destinations/deployhost-project/vc';
const SET = `${DEST}/associations/set`;

/** Lets the background loops run until `done` holds (bounded: a few thousand turns of the event loop). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

async function associate(...secrets: string[]): Promise<void> {
  for (const s of secrets) {
    rig.kv.write(s, { [`${s}_key`]: `${s}-value` });
    await rig.ok('update', SET, { mount: 'kv', secret_name: s });
  }
  await until(() => rig.destination.values.size === secrets.length, 'every secret synced');
}

const gone = async () => (await rig.call('read', DEST)).status === 404;

describe('DELETE with purge=true', () => {
  it('unsyncs every association, then deletes the destination', async () => {
    await associate('a', 'b');
    expect((await rig.call('delete', DEST, { purge: true })).status).toBe(204);
    await until(gone, 'the destination deleted');
    expect(rig.destination.values.size).toBe(0);
    expect((await rig.call('list', 'sys/sync/associations')).status).toBe(404);
    expect((await rig.core.barrier.list('sys/sync/queue/')).length).toBe(0);
  });

  it('shows the purge on read while it runs, holds the destination while the destination refuses, and finishes once it accepts', async () => {
    await associate('a');
    rig.destination.failNext(3);
    await rig.ok('delete', DEST, { purge: true });
    // The associations go at once; the destination stays until their unsyncs are done.
    expect(data(await rig.ok('read', `${DEST}/associations`))['associated_secrets']).toEqual({});
    const running = data(await rig.ok('read', DEST));
    expect(Date.parse(running['purge_initiated_at'] as string)).toBe(rig.clock.now());
    await until(async () => data(await rig.ok('read', DEST))['purge_error'] !== '', 'the purge error');
    // The destination's message, its credential masked.
    expect(data(await rig.ok('read', DEST))['purge_error']).toBe('unsyncing a failed: the service is unavailable for token *****');
    // No new association while it purges; a second purge leaves the first to run.
    rig.kv.write('c', { k: 'v' });
    expect((await failure(rig.call('update', SET, { mount: 'kv', secret_name: 'c' }))).message).toContain('being purged');
    expect((await rig.call('delete', DEST, { purge: true })).status).toBe(204);

    for (let i = 0; i < 40 && !(await gone()); i++) {
      await rig.clock.advance(1000);
      await until(() => true, '');
    }
    await until(gone, 'the destination deleted once the unsync went through');
    expect(rig.destination.values.size).toBe(0);
  });

  it('uses credentials fixed meanwhile, the destination still reaching the same place', async () => {
    await associate('a');
    rig.destination.failNext(1000);
    await rig.ok('delete', DEST, { purge: true });
    await until(async () => data(await rig.ok('read', DEST))['purge_error'] !== '', 'the purge error');
    rig.destination.failNext(0);
    const fixed = data(await rig.ok('update', DEST, { access_token: 'dh_FIXEDTOKEN_0123456789' }));
    // An update keeps the purge going.
    expect(fixed['purge_initiated_at']).toBeDefined();
    for (let i = 0; i < 40 && !(await gone()); i++) {
      await rig.clock.advance(1000);
      await until(() => true, '');
    }
    await until(gone, 'the destination deleted');
    expect(rig.destination.removals.map((r) => r.credential)).toEqual(['dh_FIXEDTOKEN_0123456789']);
  });

  it('deletes a destination without associations at once', async () => {
    expect((await rig.call('delete', DEST, { purge: true })).status).toBe(204);
    expect(await gone()).toBe(true);
  });
});

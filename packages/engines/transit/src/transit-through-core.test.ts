/**
 * The transit engine mounted in a real Core: what it does on core's signals, a reload of the
 * mount and the periodic task.
 */
import { PERIODIC_INTERVAL_MS, testing } from '@strongroom/core';
import { transitEngine } from './transit-engine';

const { rig } = testing;

async function withKey() {
  const r = await rig({ engines: [transitEngine] });
  await r.ok('update', 'sys/mounts/transit', r.root, { type: 'transit' });
  await r.ok('update', 'transit/keys/k', r.root, {});
  return r;
}

describe('sys/plugins/reload/backend on a transit mount', () => {
  it('applies a transit cache size only once the mount is reloaded', async () => {
    const r = await withKey();
    const first = await r.ok('update', 'transit/cache-config', r.root, { size: 20 });
    expect(first.body.warnings[0]).toMatch(/applies after the mount is reloaded/);
    expect((await r.ok('update', 'transit/cache-config', r.root, { size: 20 })).body.warnings?.[0]).toMatch(/applies after/);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { mounts: ['transit/'] })).status).toBe(204);
    await r.ok('read', 'transit/keys/k', r.root);
    // The reloaded backend runs with the stored size, so writing it again needs no warning.
    expect((await r.ok('update', 'transit/cache-config', r.root, { size: 20 })).body.warnings ?? null).toBeNull();
  });
});

describe('core\'s periodic task on a transit mount', () => {
  it('rotates a transit key when its auto_rotate_period has passed, also across a restart', async () => {
    const r = await rig({ engines: [transitEngine] });
    await r.ok('update', 'sys/mounts/transit', r.root, { type: 'transit' });
    await r.ok('update', 'transit/keys/auto', r.root, { auto_rotate_period: '1h' });
    const latest = async () => (await r.ok('read', 'transit/keys/auto', r.root)).body.data.latest_version;
    await r.clock.advance(3600_000 - PERIODIC_INTERVAL_MS);
    expect(await latest()).toBe(1);
    await r.restart();
    await r.clock.advance(2 * PERIODIC_INTERVAL_MS);
    expect(await latest()).toBe(2);
    await r.clock.advance(10 * PERIODIC_INTERVAL_MS);
    expect(await latest()).toBe(2);
  });
});

import { transitEngine } from '@strongroom/engine-transit';
import { rig } from '../testing/core-rig';

describe('sys/plugins/reload/backend', () => {
  async function setup() {
    const r = await rig({ engines: [transitEngine] });
    await r.ok('update', 'sys/mounts/transit', r.root, { type: 'transit' });
    await r.ok('update', 'transit/keys/k', r.root, {});
    return r;
  }

  it('applies a transit cache size only once the mount is reloaded', async () => {
    const r = await setup();
    const first = await r.ok('update', 'transit/cache-config', r.root, { size: 20 });
    expect(first.body.warnings[0]).toMatch(/applies after the mount is reloaded/);
    expect((await r.ok('update', 'transit/cache-config', r.root, { size: 20 })).body.warnings?.[0]).toMatch(/applies after/);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { mounts: ['transit/'] })).status).toBe(204);
    await r.ok('read', 'transit/keys/k', r.root);
    // The reloaded backend runs with the stored size, so writing it again needs no warning.
    expect((await r.ok('update', 'transit/cache-config', r.root, { size: 20 })).body.warnings ?? null).toBeNull();
  });

  it('reloads every mount of a plugin type, keeps data, and refuses bad requests', async () => {
    const r = await setup();
    await r.ok('update', 'sys/plugins/reload/backend', r.root, { plugin: 'transit' });
    expect((await r.ok('read', 'transit/keys/k', r.root)).body.data.name).toBe('k');
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, {})).status).toBe(400);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { plugin: 'transit', mounts: ['transit/'] })).status).toBe(400);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { mounts: ['nope/'] })).body.errors[0]).toMatch(/"mounts"/);
    const global = await r.ok('update', 'sys/plugins/reload/backend', r.root, { plugin: 'transit', scope: 'global' });
    expect(global.body.data.reload_id).toEqual(expect.any(String));
  });
});

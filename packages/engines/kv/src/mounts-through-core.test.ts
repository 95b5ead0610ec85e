/**
 * The KV engine mounted through core's sys/mounts: the version a mount is enabled with decides
 * what it serves, and a remounted KV mount keeps its secrets' version history.
 */
import { testing } from '@strongroom/core';
import { kvEngine } from './kv-engine';

const { data, rig } = testing;
type Body = testing.Body;

describe('KV mounted through sys/mounts', () => {
  it('mounts kv version 2 from options.version and serves versioned secrets there', async () => {
    const r = await rig({ engines: [kvEngine] });
    expect((await r.call('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' }, description: 'app secrets' })).status).toBe(204);
    await r.ok('update', 'secret/data/app', r.root, { data: { password: 'x' } });
    const read = data(await r.ok('read', 'secret/data/app', r.root));
    expect(read['data']).toEqual({ password: 'x' });
    expect((read['metadata'] as Body)['version']).toBe(1);
  });

  it('mounts kv version 1 without options', async () => {
    const r = await rig({ engines: [kvEngine] });
    await r.ok('update', 'sys/mounts/kv', r.root, { type: 'kv' });
    await r.ok('update', 'kv/app', r.root, { password: 'y' });
    expect(data(await r.ok('read', 'kv/app', r.root))).toEqual({ password: 'y' });
  });

  it('keeps counting a secret\'s versions after sys/remount moves the mount', async () => {
    const r = await rig({ engines: [kvEngine] });
    await r.ok('update', 'sys/mounts/old', r.root, { type: 'kv-v2' });
    await r.ok('update', 'old/data/app', r.root, { data: { v: 1 } });
    await r.ok('update', 'sys/remount', r.root, { from: 'old', to: 'new/place' });
    expect(data(await r.ok('read', 'new/place/data/app', r.root))['data']).toEqual({ v: 1 });
    await r.ok('update', 'new/place/data/app', r.root, { data: { v: 2 } });
    expect((data(await r.ok('read', 'new/place/data/app', r.root))['metadata'] as Body)['version']).toBe(2);
  });
});

import { storeEngine } from '../test-support/store-engine';
import { data, rig } from '../testing';

describe('Core.replicationScope', () => {
  it('keeps tokens, leases, cubbyholes, local tables and local mounts\' data local, and shares the rest', async () => {
    const r = await rig({ engines: [storeEngine(), { ...storeEngine('pass'), kind: 'auth' }] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'store', local: true });
    await r.ok('update', 'sys/mounts/everywhere', r.root, { type: 'store' });
    await r.ok('update', 'sys/auth/mine', r.root, { type: 'pass', local: true });
    await r.ok('update', 'sys/auth/ours', r.root, { type: 'pass' });
    const ns = data(await r.ok('update', 'sys/namespaces/team', r.root))['id'] as string;
    await r.ok('update', 'team/sys/mounts/team-here', r.root, { type: 'store', local: true });
    const mounts = data(await r.ok('read', 'sys/mounts', r.root));
    const auths = data(await r.ok('read', 'sys/auth', r.root));
    const teamMounts = data(await r.ok('read', 'team/sys/mounts', r.root));
    const uuid = (table: Record<string, unknown>, path: string) => (table[path] as { uuid: string }).uuid;
    const scope = (key: string) => r.core.replicationScope(key).scope;

    for (const key of [
      'sys/token/id/abc', 'sys/token/accessor/abc', 'sys/token/parent/a/b', 'sys/token/cubbyhole/abc', 'sys/token/salt',
      'sys/expire/id/secret/creds/1', 'core/local/replication/performance/state', 'core/replication-performance-set', 'core/replication-performance-link',
      'core/replication-performance-link-applied', 'core/local-audit', 'core/local-mounts', 'core/local-auth', 'core/wrapped-root-key',
      `core/namespaces/${ns}/local-mounts`, `core/namespaces/${ns}/local-auth`,
      `logical/${uuid(mounts, 'here/')}/x`, `auth/${uuid(auths, 'mine/')}/users/a`, `logical/${uuid(teamMounts, 'team-here/')}/x`,
    ]) expect([key, scope(key)]).toEqual([key, 'local']);

    for (const key of [
      'core/mounts', 'core/auth', 'core/audit', 'sys/policy/default', 'sys/namespaces/abc', `core/namespaces/${ns}/mounts`,
      `core/namespaces/${ns}/auth`, `core/namespaces/${ns}/policy/p`, `logical/${uuid(mounts, 'everywhere/')}/x`,
      `auth/${uuid(auths, 'ours/')}/users/a`, 'sys/identity/entity/abc', 'core/keyring',
    ]) expect([key, scope(key)]).toEqual([key, 'shared']);
  });

  it('follows mounts as they are enabled, and keeps a disabled local mount\'s data local while it is deleted', async () => {
    const r = await rig({ engines: [storeEngine()] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'store', local: true });
    const here = (data(await r.ok('read', 'sys/mounts/here', r.root)) as { uuid: string }).uuid;
    expect(r.core.replicationScope(`logical/${here}/x`).scope).toBe('local');
    await r.ok('delete', 'sys/mounts/here', r.root);
    expect(r.core.replicationScope(`logical/${here}/x`).scope).toBe('local');
    await r.ok('update', 'sys/mounts/later', r.root, { type: 'store', local: true });
    const later = (data(await r.ok('read', 'sys/mounts/later', r.root)) as { uuid: string }).uuid;
    expect(r.core.replicationScope(`logical/${later}/x`).scope).toBe('local');
  });
});

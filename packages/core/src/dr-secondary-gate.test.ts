import { rig } from './testing';

function roles(mode: 'disabled' | 'primary' | 'secondary') {
  return { drMode: () => mode, performanceMode: () => 'disabled' as const, servesOnDrSecondary: (p: string) => p === 'sys/replication/dr/status' };
}

describe('a DR secondary', () => {
  it('refuses every path but its own with a 400 naming the mode, and answers health with 472', async () => {
    const r = await rig();
    r.core.replication = roles('secondary');
    const refused = await r.call('read', 'sys/mounts', r.root);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/DR secondary mode/);
    const health = await r.call('read', 'sys/health', undefined);
    expect(health.status).toBe(472);
    expect(health.body.replication_dr_mode).toBe('secondary');
    const overridden = await r.call('read', 'sys/health', undefined, { drsecondarycode: 200 });
    expect(overridden.status).toBe(200);
    expect((await r.call('read', 'sys/seal-status', undefined)).status).toBe(200);
  });

  it('serves normally when the cluster is a primary, and health reports the mode', async () => {
    const r = await rig();
    r.core.replication = roles('primary');
    expect((await r.call('read', 'sys/mounts', r.root)).status).toBe(200);
    const health = await r.call('read', 'sys/health', undefined);
    expect(health.status).toBe(200);
    expect(health.body.replication_dr_mode).toBe('primary');
  });
});

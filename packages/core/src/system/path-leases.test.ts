import { Backend } from '../framework/backend';
import type { EngineFactory } from '../framework/engine';
import { definePath } from '../framework/types';
import { rig, type Rig } from '../testing/core-rig';

/** A secrets engine that issues named credentials and records what it was asked to revoke. */
function leasingEngine() {
  const live = new Set<string>();
  const revoked: string[] = [];
  const control = { failRevokes: 0 };
  const engine: EngineFactory = {
    type: 'leasing',
    kind: 'secret',
    create: () => new Backend('leasing', [
      definePath({
        pattern: 'creds/(?<name>.+)',
        fields: { name: { type: 'string' }, ttl: { type: 'duration' }, renewable: { type: 'bool', default: true } },
        operations: {
          read: async (_req, f) => {
            const username = `${f.string('name')}-${live.size + revoked.length}`;
            live.add(username);
            return { data: { username }, secret: { type: 'cred', ttl: f.int('ttl'), renewable: f.bool('renewable'), internal: { username } } };
          },
        },
      }),
    ], {
      cred: {
        revoke: async (_req, internal) => {
          if (control.failRevokes > 0) {
            control.failRevokes--;
            throw new Error('provider unavailable');
          }
          live.delete(internal['username'] as string);
          revoked.push(internal['username'] as string);
        },
      },
    }),
  };
  return { engine, live, revoked, control };
}

async function setup() {
  const le = leasingEngine();
  const r = await rig({ engines: [le.engine] });
  await r.ok('update', 'sys/mounts/leasing', r.root, { type: 'leasing', config: { default_lease_ttl: '60s', max_lease_ttl: '300s' } });
  const issue = async (token = r.root, name = 'app', data: Record<string, unknown> = {}) => (await r.ok('read', `leasing/creds/${name}`, token, data)).body;
  return { r, ...le, issue };
}

async function tick(r: Rig, ms: number): Promise<void> {
  await r.clock.advance(ms);
  await r.core.expiration.settled();
}

describe('leases', () => {
  it('gives a secret with a lifetime a lease in the reply', async () => {
    const { issue } = await setup();
    const body = await issue();
    expect(body.lease_id).toMatch(/^leasing\/creds\/app\/\w{24}$/);
    expect(body.lease_duration).toBe(60);
    expect(body.renewable).toBe(true);
    expect(body.data).toEqual({ username: 'app-0' });
  });

  it('looks a lease up and lists leases by prefix', async () => {
    const { r, issue } = await setup();
    const { lease_id } = await issue();
    await issue(r.root, 'other');
    await tick(r, 10_000);
    const looked = await r.ok('update', 'sys/leases/lookup', r.root, { lease_id });
    expect(looked.body.data).toMatchObject({ id: lease_id, renewable: true, ttl: 50, last_renewal: null });
    expect((await r.ok('list', 'sys/leases/lookup/leasing/creds/', r.root)).body.data.keys).toEqual(['app/', 'other/']);
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id: 'leasing/creds/app/nope' })).status).toBe(400);
  });

  it('revokes through the backend when the lease expires', async () => {
    const { r, issue, live, revoked } = await setup();
    const { lease_id } = await issue();
    await tick(r, 59_999);
    expect(live.has('app-0')).toBe(true);
    await tick(r, 1);
    expect(revoked).toEqual(['app-0']);
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id })).status).toBe(400);
  });

  it('renews by the increment, capped at the mount maximum counted from issue', async () => {
    const { r, issue, revoked } = await setup();
    const { lease_id } = await issue();
    const renewed = await r.ok('update', 'sys/leases/renew', r.root, { lease_id, increment: '120s' });
    expect(renewed.body.lease_duration).toBe(120);
    await tick(r, 100_000);
    expect(revoked).toEqual([]);
    const capped = await r.ok('update', `sys/leases/renew/${lease_id}`, r.root, { increment: 3600 });
    expect(capped.body.lease_duration).toBe(200);
    expect(capped.body.warnings[0]).toMatch(/capped/);
    await tick(r, 200_000);
    expect(revoked).toEqual(['app-0']);
  });

  it('refuses to renew a lease that is not renewable', async () => {
    const { r, issue } = await setup();
    const { lease_id } = await issue(r.root, 'fixed', { renewable: false });
    const res = await r.call('update', 'sys/leases/renew', r.root, { lease_id });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toBe('lease is not renewable');
  });

  it('revokes one lease, or every lease under a prefix (with sudo)', async () => {
    const { r, issue, revoked } = await setup();
    const a = await issue();
    await issue(r.root, 'b');
    await issue(r.root, 'c');
    await r.ok('update', 'sys/leases/revoke', r.root, { lease_id: a.lease_id });
    expect(revoked).toEqual(['app-0']);
    await r.policy('lease-admin', 'path "sys/leases/*" { capabilities = ["update"] }');
    const noSudo = (await r.token(r.root, { policies: ['lease-admin'] })).client_token;
    expect((await r.call('update', 'sys/leases/revoke-prefix/leasing/creds', noSudo)).status).toBe(403);
    await r.ok('update', 'sys/leases/revoke-prefix/leasing/creds', r.root);
    expect(revoked.sort()).toEqual(['app-0', 'b-1', 'c-2']);
  });

  it('retries a failing revocation with backoff and never drops the lease', async () => {
    const { r, issue, revoked, control } = await setup();
    const { lease_id } = await issue();
    control.failRevokes = 3;
    await tick(r, 60_000); // attempt 1 fails; retry in 1 s
    expect(revoked).toEqual([]);
    expect((await r.ok('update', 'sys/leases/lookup', r.root, { lease_id })).body.data.id).toBe(lease_id);
    await tick(r, 1_000); // attempt 2 fails; retry in 2 s
    await tick(r, 1_999);
    expect(revoked).toEqual([]);
    await tick(r, 1); // attempt 3 fails; retry in 4 s
    await tick(r, 4_000); // attempt 4 succeeds
    expect(revoked).toEqual(['app-0']);
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id })).status).toBe(400);
  });

  it('revoke-force removes leases without asking the backend', async () => {
    const { r, issue, revoked, live, control } = await setup();
    const { lease_id } = await issue();
    control.failRevokes = 100;
    expect((await r.call('update', 'sys/leases/revoke', r.root, { lease_id })).status).toBe(400);
    await r.ok('update', 'sys/leases/revoke-force/leasing/', r.root);
    expect(revoked).toEqual([]);
    expect(live.has('app-0')).toBe(true);
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id })).status).toBe(400);
  });

  it('revokes a token\'s leases when the token is revoked', async () => {
    const { r, issue, revoked } = await setup();
    await r.policy('creds', 'path "leasing/creds/*" { capabilities = ["read"] }');
    const t = (await r.token(r.root, { policies: ['creds'] })).client_token;
    await issue(t, 'mine');
    await issue(r.root, 'roots');
    await r.ok('update', 'auth/token/revoke', r.root, { token: t });
    await r.core.expiration.settled();
    await tick(r, 0);
    expect(revoked).toEqual(['mine-0']);
  });

  it('tidy revokes leases whose owning token vanished without taking them along', async () => {
    const { r, issue, revoked } = await setup();
    await r.policy('creds', 'path "leasing/creds/*" { capabilities = ["read"] }');
    const t = (await r.token(r.root, { policies: ['creds'] })).client_token;
    await issue(t, 'orphaned');
    await issue(r.root, 'kept');
    // As if the server died between deleting the token and marking its leases.
    await r.core.barrier.delete(`sys/token/id/${r.core.tokens.hash(t)}`);
    await r.restart();
    const tidy = await r.ok('update', 'sys/leases/tidy', r.root);
    expect(tidy.body.warnings[0]).toMatch(/1 revoked or expired tokens/);
    await tick(r, 0);
    expect(revoked).toEqual(['orphaned-0']);
  });

  it('revokes on the next start a lease that expired while the server was stopped', async () => {
    const { r, issue, revoked } = await setup();
    await issue(r.root, 'app', { ttl: '10s' });
    await r.restart(async () => {
      await r.clock.advance(20_000);
    });
    await tick(r, 0);
    expect(revoked).toEqual(['app-0']);
  });

  it('starts lease IDs with the namespace path and revokes them when that namespace\'s mount goes', async () => {
    const { r, revoked } = await setup();
    await r.ok('update', 'sys/namespaces/team', r.root);
    await r.ok('update', 'team/sys/mounts/leasing', r.root, { type: 'leasing' });
    const body = (await r.ok('read', 'team/leasing/creds/x', r.root)).body;
    expect(body.lease_id).toMatch(/^team\/leasing\/creds\/x\/\w{24}$/);
    await r.ok('delete', 'team/sys/mounts/leasing', r.root);
    expect(revoked).toEqual(['x-0']);
  });

  it('revokes a mount\'s leases when it is disabled, and keeps the mount if that fails', async () => {
    const { r, issue, revoked, control } = await setup();
    await issue();
    control.failRevokes = 1;
    const refused = await r.call('delete', 'sys/mounts/leasing', r.root);
    expect(refused.status).toBe(400);
    expect((await r.ok('read', 'sys/mounts', r.root)).body.data).toHaveProperty(['leasing/']);
    await r.ok('delete', 'sys/mounts/leasing', r.root);
    expect(revoked).toEqual(['app-0']);
  });
});

import type { BackendRequest } from '@strongroom/core';
import { backendRig, EmulatorFixture, type BackendRig } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

const HOUR = 3600_000;

/** An access list entry for `count` instances of a role whose tokens live an hour. */
async function loginInstances(r: BackendRig, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const instance = fixture.instance({ accountId: r.accountId });
    await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'box' }));
    ids.push(instance.instanceId);
  }
  return ids;
}

async function setup(): Promise<BackendRig> {
  const r = await backendRig(fixture);
  await r.write('role/box', { auth_type: 'vm', bound_account_id: r.accountId, token_max_ttl: '1h' });
  await r.write('role/tagged', { auth_type: 'vm', bound_account_id: r.accountId, token_max_ttl: '10h', role_tag: 'VaultRole' });
  return r;
}

const listed = async (r: BackendRig, path: string) => ((await r.h.request('list', path))?.data?.['keys'] as string[] | undefined) ?? [];

function periodicRequest(r: BackendRig): BackendRequest {
  return {
    id: 'tick', operation: 'delete', path: '', mount: r.h.mount, storage: r.h.storage, data: {}, headers: {}, namespace: { id: 'root', path: '' },
  };
}

describe('tidy', () => {
  it('removes only access list entries whose expiration plus the safety buffer has passed', async () => {
    const r = await setup();
    const [old] = await loginInstances(r, 1);
    await r.clock.advance(2 * HOUR);
    const [fresh] = await loginInstances(r, 1);
    const resp = await r.write('tidy/identity-accesslist', { safety_buffer: '30m' });
    expect(resp).toMatchObject({ status: 202, data: { removed: 1 } });
    expect(resp?.warnings?.[0]).toMatch(/1 expired entry removed/);
    expect(await listed(r, 'identity-accesslist')).toEqual([fresh]);
    expect(old).toBeDefined();
  });

  it('honours the default 72h safety buffer, also through the deprecated path', async () => {
    const r = await setup();
    await loginInstances(r, 2);
    await r.clock.advance(72 * HOUR);
    expect((await r.write('tidy/identity-whitelist'))?.data).toEqual({ removed: 0 });
    await r.clock.advance(2 * HOUR);
    expect((await r.write('tidy/identity-whitelist'))?.data).toEqual({ removed: 2 });
  });

  it('removes expired deny list entries only', async () => {
    const r = await setup();
    const short = (await r.write('role/tagged/tag', { max_ttl: '1h' }))?.data?.['tag_value'] as string;
    // Without its own max TTL a tag's entry lives as long as the role's tokens (10h).
    const long = (await r.write('role/tagged/tag', {}))?.data?.['tag_value'] as string;
    await r.write(`roletag-denylist/${short}`);
    await r.write(`roletag-denylist/${long}`);
    await r.clock.advance(2 * HOUR);
    expect((await r.write('tidy/roletag-blacklist', { safety_buffer: '1s' }))?.data).toEqual({ removed: 1 });
    expect((await r.read(`roletag-denylist/${long}`))?.data).toBeDefined();
    expect(await r.read(`roletag-denylist/${short}`)).toBeNull();
  });

  it('runs hourly in the background on its settings, unless disabled', async () => {
    const r = await setup();
    await loginInstances(r, 1);
    await r.write('config/tidy/identity-accesslist', { safety_buffer: '1m' });
    await r.write('config/tidy/roletag-denylist', { disable_periodic_tidy: true, safety_buffer: '1m' });
    const tag = (await r.write('role/tagged/tag', { max_ttl: '1m' }))?.data?.['tag_value'] as string;
    await r.write(`roletag-denylist/${tag}`);
    await r.backend.periodic(periodicRequest(r));
    expect(await listed(r, 'identity-accesslist')).toHaveLength(1);
    await r.clock.advance(2 * HOUR);
    await r.backend.periodic(periodicRequest(r));
    expect(await listed(r, 'identity-accesslist')).toHaveLength(0);
    expect(await listed(r, 'roletag-denylist')).toHaveLength(1);
    // Within the hour nothing runs again, even with expired entries.
    await r.write('config/tidy/roletag-denylist', { disable_periodic_tidy: false });
    await r.clock.advance(HOUR / 2);
    await r.backend.periodic(periodicRequest(r));
    expect(await listed(r, 'roletag-denylist')).toHaveLength(1);
    await r.clock.advance(HOUR);
    await r.backend.periodic(periodicRequest(r));
    expect(await listed(r, 'roletag-denylist')).toHaveLength(0);
  });
});

import { testing } from '@strongroom/core';
import { syncRig, type SyncRig } from './test-support/sync-rig';

const { data, failure } = testing;

let rig: SyncRig;
beforeEach(async () => {
  rig = await syncRig();
});
afterEach(() => rig.close());

describe('sys/sync/config', () => {
  it('reads the defaults, and a PATCH changes only the fields it names', async () => {
    expect(data(await rig.call('read', 'sys/sync/config'))).toEqual({ disabled: false, queue_capacity: 1_000_000 });
    expect(data(await rig.ok('patch', 'sys/sync/config', { disabled: 'true' }))).toEqual({ disabled: true, queue_capacity: 1_000_000 });
    expect(data(await rig.ok('patch', 'sys/sync/config', { queue_capacity: 500 }))).toEqual({ disabled: true, queue_capacity: 500 });
    expect(data(await rig.call('read', 'sys/sync/config'))).toEqual({ disabled: true, queue_capacity: 500 });
  });

  it('is kept across a restart (it lives in storage)', async () => {
    await rig.ok('patch', 'sys/sync/config', { disabled: true, queue_capacity: 7 });
    await rig.restart();
    expect(data(await rig.call('read', 'sys/sync/config'))).toEqual({ disabled: true, queue_capacity: 7 });
  });

  it.each([
    [{ queue_capacity: 0 }, 'invalid value for "queue_capacity": must be between 1 and 100000000'],
    [{ queue_capacity: 100_000_001 }, 'invalid value for "queue_capacity": must be between 1 and 100000000'],
    [{ queue_capacity: 'lots' }, 'invalid value for "queue_capacity": expected an integer'],
    [{ disabled: 'maybe' }, 'invalid value for "disabled": expected a boolean'],
  ])('refuses %j with a 400 naming the field', async (body, message) => {
    expect(await failure(rig.call('patch', 'sys/sync/config', body))).toEqual({ status: 400, message });
    expect(data(await rig.call('read', 'sys/sync/config'))).toEqual({ disabled: false, queue_capacity: 1_000_000 });
  });

  it('answers only in the root namespace', async () => {
    await rig.ok('update', 'sys/namespaces/team', {});
    expect((await failure(rig.call('read', 'team/sys/sync/config'))).status).toBe(400);
    expect((await failure(rig.call('patch', 'team/sys/sync/config', { disabled: true }))).status).toBe(400);
    expect(data(await rig.call('read', 'sys/sync/config'))['disabled']).toBe(false);
  });

  it('is changed with PATCH only', async () => {
    expect((await failure(rig.call('update', 'sys/sync/config', { disabled: true }))).status).toBe(405);
  });

  it('follows the ACL, and needs no sudo (Vault asks none for sys/sync)', async () => {
    const reader = await tokenWith('sync-read', 'path "sys/sync/*" { capabilities = ["read", "list"] }');
    expect(data(await rig.ok('read', 'sys/sync/config', {}, reader))['queue_capacity']).toBe(1_000_000);
    expect((await failure(rig.call('patch', 'sys/sync/config', { disabled: true }, reader))).status).toBe(403);
    const admin = await tokenWith('sync-admin', 'path "sys/sync/*" { capabilities = ["read", "list", "create", "update", "patch", "delete"] }');
    await rig.ok('patch', 'sys/sync/config', { disabled: true }, admin);
    await rig.ok('update', 'sys/sync/destinations/cloud1-sm/chain', {}, admin);
    expect(data(await rig.ok('list', 'sys/sync/destinations/', {}, reader))['total_destinations']).toBe(1);
    expect((await failure(rig.call('update', 'sys/sync/destinations/cloud1-sm/other', {}, reader))).status).toBe(403);
    const none = await tokenWith('nothing', 'path "secret/*" { capabilities = ["read"] }');
    expect((await failure(rig.call('read', 'sys/sync/config', {}, none))).status).toBe(403);
  });
});

async function tokenWith(name: string, policy: string): Promise<string> {
  await rig.ok('update', `sys/policies/acl/${name}`, { policy });
  return (await rig.ok('update', 'auth/token/create', { policies: [name] })).body.auth.client_token;
}

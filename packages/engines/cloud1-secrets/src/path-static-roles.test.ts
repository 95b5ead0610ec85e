import { ListAccessKeysCommand } from '@aws-sdk/client-iam';
import { BackendHarness, expectBadRequest, silentLogger } from '@strongroom/core';
import { createCloud1SecretsBackend } from './cloud1-secrets-engine';
import { backendRig, credentialsOf, EmulatorFixture, type BackendRig } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

async function keysOf(r: BackendRig, userName: string): Promise<string[]> {
  const iam = fixture.iam(r.account.root);
  try {
    return ((await iam.send(new ListAccessKeysCommand({ UserName: userName }))).AccessKeyMetadata ?? []).map((k) => k.AccessKeyId ?? '');
  } finally {
    iam.destroy();
  }
}

async function current(r: BackendRig, name = 'app') {
  return credentialsOf((await r.read(`static-creds/${name}`))?.data);
}

const MINUTE = 60_000;

describe('static roles', () => {
  it('adopt an existing user with a new key of its own, shown by static-creds and never by the role', async () => {
    const r = await backendRig(fixture);
    const user = fixture.emulator.createUser(r.account.accountId, { userName: 'app', accessKeys: 1 });
    const resp = await r.write('static-roles/app', { username: 'app', rotation_period: '24h' });
    expect(resp?.data).toEqual({ name: 'app', username: 'app', rotation_period: 86400 });
    expect((await r.read('static-roles/app'))?.data).toEqual({ name: 'app', username: 'app', rotation_period: 86400 });
    const creds = await current(r);
    expect(creds.accessKeyId).not.toBe(user.accessKeys[0]?.accessKeyId);
    expect(JSON.stringify((await r.read('static-roles/app'))?.data)).not.toContain(creds.secretAccessKey);
    expect((await r.read('static-creds/app'))?.data?.['expiration']).toBe(new Date(r.clock.now() + 86400_000).toISOString());
    expect((await r.read('static-creds/app'))?.secret).toBeUndefined();
    expect(await fixture.whoAmI(creds)).toBe(`arn:aws:iam::${r.account.accountId}:user/app`);
    // The user's own key is left alone while there is room for both.
    expect(await keysOf(r, 'app')).toEqual([user.accessKeys[0]?.accessKeyId, creds.accessKeyId]);
    expect((await r.h.request('list', 'static-roles'))?.data).toEqual({ keys: ['app'] });
  });

  it('delete the oldest key at creation when the user already has the maximum of two', async () => {
    const r = await backendRig(fixture);
    const user = fixture.emulator.createUser(r.account.accountId, { userName: 'app', accessKeys: 2 });
    await r.write('static-roles/app', { username: 'app', rotation_period: 3600 });
    const creds = await current(r);
    expect(await keysOf(r, 'app')).toEqual([user.accessKeys[1]?.accessKeyId, creds.accessKeyId]);
    expect(await fixture.refused(user.accessKeys[0] as never)).toBe('InvalidClientTokenId');
  });

  it('need an existing user and a rotation period of at least a minute, as a duration or seconds', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await expectBadRequest(r.write('static-roles/app', { rotation_period: '1h' }), 'username');
    await expectBadRequest(r.write('static-roles/app', { username: 'app' }), 'rotation_period');
    await expectBadRequest(r.write('static-roles/app', { username: 'app', rotation_period: '59s' }), 'rotation_period');
    await expectBadRequest(r.write('static-roles/app', { username: 'app', rotation_period: 30 }), 'rotation_period');
    await expectBadRequest(r.write('static-roles/app', { username: 'app', rotation_period: 'soon' }), 'rotation_period');
    await expectBadRequest(r.write('static-roles/app', { username: 'ghost', rotation_period: '1h' }), 'username');
    expect(await r.read('static-roles/app')).toBeNull();
    await r.write('static-roles/app', { username: 'app', rotation_period: '86400' });
    expect((await r.read('static-roles/app'))?.data?.['rotation_period']).toBe(86400);
    await expectBadRequest(r.write('static-roles/app', { username: 'other' }), 'username');
    await expectBadRequest(r.write('static-roles/app', { rotation_period: '10s' }), 'rotation_period');
  });

  it('rotate when the period has passed; the old key keeps working until the following rotation', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    await r.clock.advance(59 * MINUTE);
    await r.periodic();
    expect(await current(r)).toEqual(first);
    await r.clock.advance(2 * MINUTE);
    await r.periodic();
    const second = await current(r);
    expect(second.accessKeyId).not.toBe(first.accessKeyId);
    // A client that read the first key just before the rotation has one more period.
    expect(await fixture.whoAmI(first)).toMatch(/:user\/app$/);
    expect(await fixture.whoAmI(second)).toMatch(/:user\/app$/);
    expect(await keysOf(r, 'app')).toEqual([first.accessKeyId, second.accessKeyId]);
    expect((await r.read('static-creds/app'))?.data?.['expiration']).toBe(new Date(r.clock.now() + 3600_000).toISOString());
    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    const third = await current(r);
    expect(await fixture.refused(first)).toBe('InvalidClientTokenId');
    expect(await fixture.whoAmI(second)).toMatch(/:user\/app$/);
    expect(await keysOf(r, 'app')).toEqual([second.accessKeyId, third.accessKeyId]);
  });

  it('rotate the oldest key each time, starting with a key the adopted user had of its own', async () => {
    const r = await backendRig(fixture);
    const user = fixture.emulator.createUser(r.account.accountId, { userName: 'app', accessKeys: 1 });
    const [a] = user.accessKeys;
    if (!a) throw new Error('the user has its own key');
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const b = await current(r);
    expect(await keysOf(r, 'app')).toEqual([a.accessKeyId, b.accessKeyId]);

    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    const c = await current(r);
    expect(await keysOf(r, 'app')).toEqual([b.accessKeyId, c.accessKeyId]);
    expect(await fixture.refused(a)).toBe('InvalidClientTokenId');
    expect(await fixture.whoAmI(b)).toMatch(/:user\/app$/);

    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    const d = await current(r);
    expect(await keysOf(r, 'app')).toEqual([c.accessKeyId, d.accessKeyId]);
    expect(await fixture.refused(b)).toBe('InvalidClientTokenId');
    expect(await fixture.whoAmI(c)).toMatch(/:user\/app$/);
    expect(await fixture.whoAmI(d)).toMatch(/:user\/app$/);
    expect(new Set([a.accessKeyId, b.accessKeyId, c.accessKeyId, d.accessKeyId]).size).toBe(4);
  });

  it('keep at most two keys by rotating the oldest when the user gained one', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    const extra = fixture.emulator.createAccessKey(r.account.accountId, 'app');
    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    const second = await current(r);
    // The managed key was the oldest: it made room, and the key added meanwhile stays.
    expect(await keysOf(r, 'app')).toEqual([extra.accessKeyId, second.accessKeyId]);
    expect(await fixture.refused(first)).toBe('InvalidClientTokenId');
  });

  it('move the next rotation to now plus the new period when rotation_period changes', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    await r.clock.advance(50 * MINUTE);
    await r.write('static-roles/app', { rotation_period: '30m' });
    await r.clock.advance(20 * MINUTE); // 70 minutes after creation, 20 after the change
    await r.periodic();
    expect(await current(r)).toEqual(first);
    await r.clock.advance(11 * MINUTE);
    await r.periodic();
    expect((await current(r)).accessKeyId).not.toBe(first.accessKeyId);
  });

  it('keep their schedule in storage, so a new backend (restart, new leader) rotates on time', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    await r.clock.advance(61 * MINUTE);
    const successor = createCloud1SecretsBackend({ clock: r.clock, logger: silentLogger }, fixture.options());
    await successor.periodic(r.internalRequest());
    const h = new BackendHarness(successor, r.h.mount, r.h.storage);
    const second = credentialsOf((await h.request('read', 'static-creds/app'))?.data);
    expect(second.accessKeyId).not.toBe(first.accessKeyId);
    expect(await fixture.whoAmI(second)).toMatch(/:user\/app$/);
  });

  it('rotate once when two passes overlap', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    await r.clock.advance(61 * MINUTE);
    await Promise.all([r.periodic(), r.periodic(), r.write('static-roles/app', { username: 'app' })]);
    const now = await current(r);
    // One rotation: the first key and the one new key (a second rotation would have deleted the first).
    expect(await keysOf(r, 'app')).toEqual([first.accessKeyId, now.accessKeyId]);
    expect(await fixture.whoAmI(now)).toMatch(/:user\/app$/);
  });

  it('retry a failed rotation at the next pass, logging no secret', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const first = await current(r);
    const good = fixture.rootConfig(r.account.engineUser.credentials);
    await r.write('config/root', { ...good, secret_key: 'a-wrong-secret-for-the-engine' });
    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    expect(await current(r)).toEqual(first);
    expect(r.logger.lines.join('\n')).toMatch(/static role rotation failed/);
    expect(r.logger.lines.join('\n')).not.toContain('a-wrong-secret-for-the-engine');
    expect(r.logger.lines.join('\n')).not.toContain(first.secretAccessKey);
    await r.write('config/root', good);
    await r.clock.advance(MINUTE);
    await r.periodic();
    expect((await current(r)).accessKeyId).not.toBe(first.accessKeyId);
  });

  it('are forgotten on delete, leaving the user and its keys to the operator', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '1h' });
    const creds = await current(r);
    await r.h.request('delete', 'static-roles/app');
    expect(await r.read('static-roles/app')).toBeNull();
    expect(await r.read('static-creds/app')).toBeNull();
    expect(await fixture.whoAmI(creds)).toMatch(/:user\/app$/);
    await r.clock.advance(61 * MINUTE);
    await r.periodic();
    expect(await keysOf(r, 'app')).toEqual([creds.accessKeyId]);
  });
});

/**
 * End to end through a real Core: the engine mounted at cloud1/, credentials issued under leases
 * that core registers, renews, expires and revokes (retrying with backoff when the provider
 * fails), and static roles rotated by core's periodic task on a fake clock, across a restart.
 */
import { testing } from '@strongroom/core';
import { cloud1SecretsEngineWith } from './cloud1-secrets-engine';
import { credentialsOf, EmulatorFixture, type Account } from './test-support/cloud1-rig';

const { rig } = testing;
type Rig = testing.Rig;

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

const READ_ONLY = 'arn:aws:iam::aws:policy/ReadOnlyAccess';
const DOC = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }] });

interface Setup {
  r: Rig;
  account: Account;
  /** Moves core's clock and waits for the expiry work it started. */
  tick(ms: number): Promise<void>;
}

async function setup(): Promise<Setup> {
  const r = await rig({ engines: [cloud1SecretsEngineWith(fixture.options())] });
  await r.ok('update', 'sys/mounts/cloud1', r.root, { type: 'cloud1' });
  const account = fixture.account();
  await r.ok('update', 'cloud1/config/root', r.root, fixture.rootConfig(account.engineUser.credentials));
  return {
    r, account,
    async tick(ms) {
      await r.clock.advance(ms);
      await r.core.expiration.settled();
    },
  };
}

function userNameOf(body: { data: Record<string, unknown> }, account: Account): Promise<string> {
  return fixture.whoAmI(credentialsOf(body.data)).then((arn) => {
    expect(arn.startsWith(`arn:aws:iam::${account.accountId}:user/`)).toBe(true);
    return arn.slice(arn.lastIndexOf('/') + 1);
  });
}

describe('iam_user leases through core', () => {
  it('keys work until the lease is revoked; then the user and its keys are gone', async () => {
    const { r, account } = await setup();
    await fixture.createGroup(account, 'devs');
    await r.ok('update', 'cloud1/roles/web', r.root, { credential_type: 'iam_user', policy_arns: READ_ONLY, policy_document: DOC, iam_groups: 'devs' });
    const body = (await r.ok('read', 'cloud1/creds/web', r.root)).body;
    expect(body.lease_id).toMatch(/^cloud1\/creds\/web\/\w+$/);
    expect(body).toMatchObject({ renewable: true, lease_duration: 32 * 24 * 3600 });
    const userName = await userNameOf(body, account);
    expect(userName).toMatch(/^vault-root-web-/);
    await r.ok('update', 'sys/leases/revoke', r.root, { lease_id: body.lease_id });
    expect(await fixture.userExists(account, userName)).toBe(false);
    expect(await fixture.refused(credentialsOf(body.data))).toBe('InvalidClientTokenId');
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id: body.lease_id })).status).toBe(400);
  });

  it('leases last config/lease\'s lease, renew up to lease_max, and expiry removes the user', async () => {
    const { r, account, tick } = await setup();
    await r.ok('update', 'cloud1/config/lease', r.root, { lease: '1h', lease_max: '2h' });
    await r.ok('update', 'cloud1/roles/web', r.root, { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const body = (await r.ok('read', 'cloud1/creds/web', r.root)).body;
    expect(body.lease_duration).toBe(3600);
    const userName = await userNameOf(body, account);
    const renew = async () => (await r.ok('update', 'sys/leases/renew', r.root, { lease_id: body.lease_id })).body.lease_duration;
    await tick(50 * 60_000);
    expect(await renew()).toBe(3600);
    await tick(50 * 60_000);
    expect(await renew()).toBe(1200); // lease_max counts from issue: 2h - 100m
    expect(await fixture.userExists(account, userName)).toBe(true);
    await tick(20 * 60_000 + 1000);
    expect(await fixture.userExists(account, userName)).toBe(false);
    expect(await fixture.refused(credentialsOf(body.data))).toBe('InvalidClientTokenId');
  });

  it('a revocation the provider refuses stays, and is retried with backoff until it succeeds', async () => {
    const { r, account, tick } = await setup();
    await r.ok('update', 'cloud1/config/lease', r.root, { lease: '10m', lease_max: '1h' });
    await r.ok('update', 'cloud1/roles/web', r.root, { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const body = (await r.ok('read', 'cloud1/creds/web', r.root)).body;
    const userName = await userNameOf(body, account);
    const good = fixture.rootConfig(account.engineUser.credentials);
    await r.ok('update', 'cloud1/config/root', r.root, { ...good, secret_key: 'not-the-engine-secret' });

    const refused = await r.call('update', 'sys/leases/revoke', r.root, { lease_id: body.lease_id });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/SignatureDoesNotMatch/);
    await tick(10 * 60_000);
    await tick(1000);
    const lease = (await r.ok('update', 'sys/leases/lookup', r.root, { lease_id: body.lease_id })).body.data;
    expect(lease.ttl).toBeGreaterThan(0); // rescheduled: attempts back off (1 s, 2 s, 4 s, ...)
    expect(await fixture.userExists(account, userName)).toBe(true);

    await r.ok('update', 'cloud1/config/root', r.root, good);
    await tick(5000);
    expect(await fixture.userExists(account, userName)).toBe(false);
    expect((await r.call('update', 'sys/leases/lookup', r.root, { lease_id: body.lease_id })).status).toBe(400);
  });

  it('revoking the token that asked for the credentials removes the user', async () => {
    const { r, account, tick } = await setup();
    await r.ok('update', 'cloud1/roles/web', r.root, { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const child = (await r.token(r.root, { policies: ['root'] })).client_token as string;
    const body = (await r.ok('read', 'cloud1/creds/web', child)).body;
    const userName = await userNameOf(body, account);
    await r.ok('update', 'auth/token/revoke', r.root, { token: child });
    await tick(0);
    expect(await fixture.userExists(account, userName)).toBe(false);
  });
});

describe('STS leases through core', () => {
  it('each STS type: keys work, the lease is not renewable and lasts the keys\' life, and the keys expire at the provider', async () => {
    const { r, account } = await setup();
    const role = fixture.emulator.createRole(account.accountId, { roleName: 'deploy' });
    await r.ok('update', 'cloud1/roles/assumed', r.root, { credential_type: 'assumed_role', role_arns: role.arn });
    await r.ok('update', 'cloud1/roles/fed', r.root, { credential_type: 'federation_token', policy_document: DOC });
    await r.ok('update', 'cloud1/roles/session', r.root, { credential_type: 'session_token' });
    const issued = [
      (await r.ok('update', 'cloud1/sts/assumed', r.root, { ttl: '15m' })).body,
      (await r.ok('update', 'cloud1/sts/fed', r.root, { ttl: '15m' })).body,
      (await r.ok('read', 'cloud1/creds/session', r.root, { ttl: '15m' })).body,
    ];
    for (const body of issued) {
      expect(body).toMatchObject({ renewable: false, lease_duration: 900 });
      expect(await fixture.whoAmI(credentialsOf(body.data))).toMatch(new RegExp(`^arn:aws:(sts|iam)::${account.accountId}:`));
      expect((await r.call('update', 'sys/leases/renew', r.root, { lease_id: body.lease_id })).body.errors[0]).toMatch(/not renewable/);
      // The provider cannot revoke STS keys: ending the lease succeeds and the keys live on until they expire.
      await r.ok('update', 'sys/leases/revoke', r.root, { lease_id: body.lease_id });
      expect(await fixture.refused(credentialsOf(body.data))).toBeNull();
    }
    const later = 16 * 60_000;
    fixture.emulator.advanceTime(later);
    try {
      for (const body of issued) expect(await fixture.refused(credentialsOf(body.data))).toMatch(/Expired/);
    } finally {
      fixture.emulator.advanceTime(-later);
    }
  });
});

describe('static roles through core', () => {
  it('rotate on schedule from core\'s periodic task, and keep the schedule across a restart', async () => {
    const { r, account } = await setup();
    fixture.emulator.createUser(account.accountId, { userName: 'app' });
    await r.ok('update', 'cloud1/static-roles/app', r.root, { username: 'app', rotation_period: '1h' });
    const read = async () => credentialsOf((await r.ok('read', 'cloud1/static-creds/app', r.root)).body.data);
    const first = await read();
    expect((await r.ok('read', 'cloud1/static-creds/app', r.root)).body.lease_id).toBe('');

    await r.clock.advance(30 * 60_000);
    await r.core.runPeriodic();
    expect(await read()).toEqual(first);
    await r.clock.advance(31 * 60_000);
    await r.core.runPeriodic();
    const second = await read();
    expect(second.accessKeyId).not.toBe(first.accessKeyId);
    // The previous key lives until the next rotation.
    expect(await fixture.whoAmI(first)).toBe(`arn:aws:iam::${account.accountId}:user/app`);
    expect(await fixture.whoAmI(second)).toBe(`arn:aws:iam::${account.accountId}:user/app`);

    await r.restart();
    await r.clock.advance(61 * 60_000);
    await r.core.runPeriodic();
    const third = await read();
    expect(third.accessKeyId).not.toBe(second.accessKeyId);
    expect(await fixture.refused(first)).toBe('InvalidClientTokenId');
    expect(await fixture.whoAmI(second)).toBe(`arn:aws:iam::${account.accountId}:user/app`);
    expect(await fixture.whoAmI(third)).toBe(`arn:aws:iam::${account.accountId}:user/app`);
  });
});

import { expectBadRequest } from '@strongroom/core';
import { backendRig, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('config/client', () => {
  it('keeps what a write does not name and never shows the secret key', async () => {
    const r = await backendRig(fixture);
    await r.write('config/client', { iam_server_id_header_value: 'vault.example.com', allowed_sts_header_values: 'X-Amz-Foo,X-Bar' });
    const read = (await r.read('config/client'))?.data ?? {};
    expect(read).toMatchObject({
      access_key: r.root.accessKeyId, max_retries: -1, sts_region: 'us-east-1', iam_server_id_header_value: 'vault.example.com',
      allowed_sts_header_values: ['x-amz-foo', 'x-bar'], use_sts_region_from_client: false,
    });
    expect(read).not.toHaveProperty('secret_key');
    expect(JSON.stringify(read)).not.toContain(r.root.secretAccessKey);
    await r.h.request('delete', 'config/client');
    expect(await r.read('config/client')).toBeNull();
  });

  it('refuses bad values, naming the field', async () => {
    const r = await backendRig(fixture);
    await expectBadRequest(r.write('config/client', { max_retries: -2 }), 'max_retries');
    // A huge count would hold a request for as long as the retries back off: hours.
    await expectBadRequest(r.write('config/client', { max_retries: 11 }), 'max_retries');
    await expectBadRequest(r.write('config/client', { max_retries: 2 ** 53 - 1 }), 'max_retries');
    await r.write('config/client', { max_retries: 10 });
    await expectBadRequest(r.write('config/client', { endpoint: 'ftp://x' }), 'endpoint');
    await expectBadRequest(r.write('config/client', { access_key: 'AKIA', secret_key: '' }), 'secret_key');
    await expectBadRequest(r.write('config/client', { sts_endpoint: '', sts_region: 'us-east-1' }), 'sts_region');
  });
});

describe('config/rotate-root', () => {
  it('replaces the static key with a new one of the same user and deletes the old one', async () => {
    const r = await backendRig(fixture);
    const svc = fixture.emulator.createUser(r.accountId, { userName: 'strongroom', accessKeys: 1 });
    const old = svc.accessKeys[0]!;
    await r.write('config/client', { access_key: old.accessKeyId, secret_key: old.secretAccessKey });
    const rotated = (await r.write('config/rotate-root'))?.data as { access_key: string };
    expect(rotated.access_key).toMatch(/^AKIA/);
    expect(rotated.access_key).not.toBe(old.accessKeyId);
    expect(rotated).not.toHaveProperty('secret_key');
    expect((await r.read('config/client'))?.data?.['access_key']).toBe(rotated.access_key);
    // The new key works for provider calls (a vm login describes the instance with it).
    const instance = fixture.instance({ accountId: r.accountId });
    await r.write('role/box', { auth_type: 'vm', bound_account_id: r.accountId });
    await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'box' }));
    // The old one is gone: configuring it again makes provider calls fail.
    await r.write('config/client', { access_key: old.accessKeyId, secret_key: old.secretAccessKey });
    const other = fixture.instance({ accountId: r.accountId });
    await expect(r.login(await fixture.pkcs7Login(other.instanceId, { role: 'box' }))).rejects.toThrow(/AuthFailure/);
  });

  it('is refused while the user has a second key, and without static credentials', async () => {
    const r = await backendRig(fixture);
    const svc = fixture.emulator.createUser(r.accountId, { userName: 'strongroom', accessKeys: 2 });
    const key = svc.accessKeys[0]!;
    await r.write('config/client', { access_key: key.accessKeyId, secret_key: key.secretAccessKey });
    await expect(r.write('config/rotate-root')).rejects.toThrow(/has another access key/);
    expect((await r.read('config/client'))?.data?.['access_key']).toBe(key.accessKeyId);
    await r.write('config/client', { access_key: '', secret_key: '' });
    await expectBadRequest(r.write('config/rotate-root'), 'access_key');
  });
});

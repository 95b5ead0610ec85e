import { expectBadRequest } from '@strongroom/core';
import { backendRig, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('config/identity', () => {
  it('defaults to role_id aliases and account_id, auth_type metadata; empty means none, default restores', async () => {
    const r = await backendRig(fixture);
    expect((await r.read('config/identity'))?.data).toEqual({
      iam_alias: 'role_id', iam_metadata: ['account_id', 'auth_type'], vm_alias: 'role_id', vm_metadata: ['account_id', 'auth_type'],
    });
    await r.write('config/identity', { vm_alias: 'instance_id', vm_metadata: 'default,region', iam_metadata: [] });
    expect((await r.read('config/identity'))?.data).toMatchObject({ vm_alias: 'instance_id', vm_metadata: ['account_id', 'auth_type', 'region'], iam_metadata: [] });
    await r.write('config/identity', { iam_metadata: '' });
    expect((await r.read('config/identity'))?.data?.['iam_metadata']).toEqual([]);
    await r.write('config/identity', { iam_metadata: 'default' });
    expect((await r.read('config/identity'))?.data?.['iam_metadata']).toEqual(['account_id', 'auth_type']);
    await expectBadRequest(r.write('config/identity', { iam_alias: 'instance_id' }), 'iam_alias');
    await expectBadRequest(r.write('config/identity', { vm_metadata: 'client_arn' }), 'vm_metadata');
  });

  it('feeds the alias and metadata of a vm login', async () => {
    const r = await backendRig(fixture);
    const instance = fixture.instance({ accountId: r.accountId, imageId: 'ami-0abc' });
    await r.write('role/box', { auth_type: 'vm', bound_account_id: r.accountId });
    await r.write('config/identity', { vm_alias: 'image_id', vm_metadata: 'instance_id,region' });
    const login = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'box' }));
    expect(login.aliasName).toBe('ami-0abc');
    expect(login.aliasMetadata).toEqual({ instance_id: instance.instanceId, region: 'us-east-1' });
    expect(login.metadata).toMatchObject({ instance_id: instance.instanceId, region: 'us-east-1', role: 'box' });
    expect(login.metadata).not.toHaveProperty('account_id');
  });
});

describe('config/certificate', () => {
  it('registers, reads, lists and removes certificates, in PEM or base64', async () => {
    const r = await backendRig(fixture);
    const pem = fixture.certificate();
    await r.write('config/certificate/b64', { cloud1_public_cert: Buffer.from(pem).toString('base64'), type: 'identity' });
    expect((await r.read('config/certificate/b64'))?.data).toEqual({ cloud1_public_cert: `${pem.trim()}\n`, type: 'identity' });
    expect((await r.h.request('list', 'config/certificates'))?.data?.['keys']).toEqual(['b64', 'emulator-identity', 'emulator-pkcs7']);
    await r.write('config/certificate/b64', { type: 'pkcs7' });
    expect((await r.read('config/certificate/b64'))?.data?.['type']).toBe('pkcs7');
    await r.h.request('delete', 'config/certificate/b64');
    expect(await r.read('config/certificate/b64')).toBeNull();
    await expectBadRequest(r.write('config/certificate/bad', { cloud1_public_cert: 'not a cert!' }), 'cloud1_public_cert');
    await expectBadRequest(r.write('config/certificate/bad', { cloud1_public_cert: Buffer.from('junk').toString('base64') }), 'cloud1_public_cert');
    await expectBadRequest(r.write('config/certificate/bad', { cloud1_public_cert: pem, type: 'dsa' }), 'type');
  });
});

describe('config/sts', () => {
  it('stores a role per account and refuses what is not a role ARN', async () => {
    const r = await backendRig(fixture);
    await r.write('config/sts/123456789012', { sts_role: 'arn:aws:iam::123456789012:role/verify' });
    expect((await r.h.request('list', 'config/sts'))?.data).toEqual({ keys: ['123456789012'] });
    await expectBadRequest(r.write('config/sts/123456789012', { sts_role: 'arn:aws:iam::123456789012:user/x' }), 'sts_role');
    await expectBadRequest(r.write('config/sts/12', { sts_role: 'arn:aws:iam::123456789012:role/verify' }), 'account_id');
    await expectBadRequest(r.write('config/sts/123456789012', {}), 'sts_role');
    await r.h.request('delete', 'config/sts/123456789012');
    expect(await r.read('config/sts/123456789012')).toBeNull();
  });
});

describe('config/tidy', () => {
  it('stores both settings records, also under the deprecated names', async () => {
    const r = await backendRig(fixture);
    expect(await r.read('config/tidy/identity-accesslist')).toBeNull();
    await r.write('config/tidy/identity-whitelist', { safety_buffer: '1h', disable_periodic_tidy: true });
    expect((await r.read('config/tidy/identity-accesslist'))?.data).toEqual({ safety_buffer: 3600, disable_periodic_tidy: true });
    await r.write('config/tidy/roletag-denylist', {});
    expect((await r.read('config/tidy/roletag-blacklist'))?.data).toEqual({ safety_buffer: 259200, disable_periodic_tidy: false });
    await expectBadRequest(r.write('config/tidy/roletag-denylist', { safety_buffer: 'soon' }), 'safety_buffer');
    await r.h.request('delete', 'config/tidy/identity-accesslist');
    expect(await r.read('config/tidy/identity-whitelist')).toBeNull();
  });
});

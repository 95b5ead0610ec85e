import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendHarness, expectBadRequest, silentLogger } from '@strongroom/core';
import { createCloud1SecretsBackend } from './cloud1-secrets-engine';
import { DEFAULT_ROOT_CONFIG } from './path-config-root';
import { credentialChain } from '@strongroom/cloud1-client';
import { effectiveRegion } from './provider';
import { backendRig, credentialsOf, EmulatorFixture } from './test-support/cloud1-rig';
import { DEFAULT_USERNAME_TEMPLATE } from './username-template';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('config/root', () => {
  it('reads back everything but the secret key, and a write replaces the whole configuration', async () => {
    const r = await backendRig(fixture);
    const read = (await r.read('config/root'))?.data ?? {};
    expect(read).toEqual({
      max_retries: -1, access_key: r.account.engineUser.credentials.accessKeyId, region: 'us-east-1',
      iam_endpoint: fixture.endpoints.api, sts_endpoint: fixture.endpoints.api, username_template: DEFAULT_USERNAME_TEMPLATE,
    });
    expect(JSON.stringify(read)).not.toContain(r.account.engineUser.credentials.secretAccessKey);
    await r.write('config/root', { max_retries: 2, username_template: '{{ printf "app-%s" (random 8) }}' });
    expect((await r.read('config/root'))?.data).toEqual({
      max_retries: 2, access_key: '', region: '', iam_endpoint: '', sts_endpoint: '', username_template: '{{ printf "app-%s" (random 8) }}',
    });
  });

  it('answers 404 before it is written', async () => {
    const r = await backendRig(fixture);
    await r.h.storage.delete('config/root');
    expect(await r.read('config/root')).toBeNull();
  });

  it('refuses bad values, naming the field', async () => {
    const r = await backendRig(fixture);
    await expectBadRequest(r.write('config/root', { max_retries: -2 }), 'max_retries');
    // A huge count would hold a request for as long as the retries back off: hours.
    await expectBadRequest(r.write('config/root', { max_retries: 11 }), 'max_retries');
    await expectBadRequest(r.write('config/root', { max_retries: 2 ** 53 - 1 }), 'max_retries');
    await expectBadRequest(r.write('config/root', { access_key: 'AKIAX' }), 'secret_key');
    await expectBadRequest(r.write('config/root', { secret_key: 'x' }), 'access_key');
    await expectBadRequest(r.write('config/root', { iam_endpoint: 'ftp://x' }), 'iam_endpoint');
    await expectBadRequest(r.write('config/root', { sts_endpoint: 'not a url' }), 'sts_endpoint');
    await expectBadRequest(r.write('config/root', { username_template: '{{ .Unknown }}' }), 'username_template');
    // Refused writes leave the configuration as it was.
    expect((await r.read('config/root'))?.data?.['access_key']).toBe(r.account.engineUser.credentials.accessKeyId);
  });

  it('takes the region from config/root, then CLOUD1_REGION, then CLOUD1_DEFAULT_REGION, then us-east-1', () => {
    const env = { CLOUD1_REGION: 'eu-west-1', CLOUD1_DEFAULT_REGION: 'ap-south-1' };
    expect(effectiveRegion({ ...DEFAULT_ROOT_CONFIG, region: 'us-west-2' }, env)).toBe('us-west-2');
    expect(effectiveRegion(DEFAULT_ROOT_CONFIG, env)).toBe('eu-west-1');
    expect(effectiveRegion(DEFAULT_ROOT_CONFIG, { CLOUD1_DEFAULT_REGION: 'ap-south-1' })).toBe('ap-south-1');
    expect(effectiveRegion(DEFAULT_ROOT_CONFIG, {})).toBe('us-east-1');
  });
});

describe('the credential chain of provider calls', () => {
  const saved = { ...process.env };
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cloud1-secrets-creds-'));
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
    process.env.AWS_CONFIG_FILE = join(dir, 'config');
    delete process.env.AWS_PROFILE;
    delete process.env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI;
    delete process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI;
  });
  afterEach(() => {
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes the static keys first, then CLOUD1_* variables, then the shared credentials file', async () => {
    writeFileSync(join(dir, 'credentials'), '[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = file-secret\n');
    const env = { CLOUD1_ACCESS_KEY: 'AKIAENV', CLOUD1_SECRET_KEY: 'env-secret', CLOUD1_SESSION_TOKEN: 'tok' };
    const statics = { ...DEFAULT_ROOT_CONFIG, accessKey: 'AKIASTATIC', secretKey: 'static-secret' };
    expect(await credentialChain(statics, env, 'config/root')()).toEqual({ accessKeyId: 'AKIASTATIC', secretAccessKey: 'static-secret' });
    expect(await credentialChain(DEFAULT_ROOT_CONFIG, env, 'config/root')()).toEqual({ accessKeyId: 'AKIAENV', secretAccessKey: 'env-secret', sessionToken: 'tok' });
    expect(await credentialChain(DEFAULT_ROOT_CONFIG, {}, 'config/root')()).toMatchObject({ accessKeyId: 'AKIAFILE', secretAccessKey: 'file-secret' });
  });

  it('ends with the instance role\'s credentials from the metadata service, unless that is disabled', async () => {
    const { accountId } = fixture.account();
    fixture.emulator.createRole(accountId, { roleName: 'box', instanceProfile: true });
    const instance = fixture.emulator.createInstance({ accountId, instanceProfileName: 'box' });
    process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = await fixture.emulator.openMetadataEndpoint(instance.instanceId);
    delete process.env.AWS_EC2_METADATA_DISABLED;
    try {
      const found = await credentialChain(DEFAULT_ROOT_CONFIG, {}, 'config/root')();
      expect(found.accessKeyId).toMatch(/^ASIA/);
      expect(await fixture.whoAmI(found)).toBe(`arn:aws:sts::${accountId}:assumed-role/box/${instance.instanceId}`);
      await expect(credentialChain(DEFAULT_ROOT_CONFIG, { AWS_EC2_METADATA_DISABLED: 'true' }, 'config/root')()).rejects.toThrow(/no credentials/);
    } finally {
      process.env.AWS_EC2_METADATA_DISABLED = 'true';
      delete process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    }
  });

  it('says where credentials can come from when none is found', async () => {
    await expect(credentialChain(DEFAULT_ROOT_CONFIG, {}, 'config/root')()).rejects.toThrow(/CLOUD1_ACCESS_KEY/);
  });

  it('lets a mount without static keys act with the environment\'s', async () => {
    const r = await backendRig(fixture);
    const { credentials } = r.account.engineUser;
    const env = { CLOUD1_ACCESS_KEY: credentials.accessKeyId, CLOUD1_SECRET_KEY: credentials.secretAccessKey, CLOUD1_REGION: 'us-east-1' };
    const backend = createCloud1SecretsBackend({ clock: r.clock, logger: silentLogger }, { env });
    const h = new BackendHarness(backend, { path: 'cloud1/' });
    await h.request('write', 'config/root', { iam_endpoint: fixture.endpoints.api, sts_endpoint: fixture.endpoints.api });
    await h.request('write', 'roles/s', { credential_type: 'session_token' });
    const creds = credentialsOf((await h.request('read', 'creds/s'))?.data);
    expect(await fixture.whoAmI(creds)).toBe(`arn:aws:iam::${r.account.accountId}:user/strongroom`);
  });
});

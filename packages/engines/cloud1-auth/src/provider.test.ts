import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CLIENT_CONFIG } from './path-config-client';
import { credentialChain } from '@strongroom/cloud1-client';

process.env.AWS_EC2_METADATA_DISABLED = 'true';

describe('the credential chain of provider calls', () => {
  const saved = { ...process.env };
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cloud1-creds-'));
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

  it('takes static config first, then CLOUD1_* variables, then the shared credentials file', async () => {
    writeFileSync(join(dir, 'credentials'), '[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = file-secret\n');
    const env = { CLOUD1_ACCESS_KEY: 'AKIAENV', CLOUD1_SECRET_KEY: 'env-secret' };
    const statics = { ...DEFAULT_CLIENT_CONFIG, accessKey: 'AKIASTATIC', secretKey: 'static-secret' };
    expect(await credentialChain(statics, env, 'config/client')()).toEqual({ accessKeyId: 'AKIASTATIC', secretAccessKey: 'static-secret' });
    expect(await credentialChain(DEFAULT_CLIENT_CONFIG, env, 'config/client')()).toEqual({ accessKeyId: 'AKIAENV', secretAccessKey: 'env-secret' });
    expect(await credentialChain(DEFAULT_CLIENT_CONFIG, { AWS_EC2_METADATA_DISABLED: 'true' }, 'config/client')()).toMatchObject({ accessKeyId: 'AKIAFILE', secretAccessKey: 'file-secret' });
  });

  it('says where credentials can come from when none is found', async () => {
    await expect(credentialChain(DEFAULT_CLIENT_CONFIG, { AWS_EC2_METADATA_DISABLED: 'true' }, 'config/client')()).rejects.toThrow(/CLOUD1_ACCESS_KEY/);
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, startTestServer, type TestServer } from './test-support/servers';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeVault = require('node-vault') as (opts: { endpoint: string; token?: string }) => any;

function decodeWithOtp(encoded: string, otp: string): string {
  const raw = Buffer.from(encoded, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(raw.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

describe('sys/generate-root through the real server', () => {
  let t: TestServer;
  let keys: string[];
  let root: string;

  beforeAll(async () => {
    t = await startTestServer();
    const admin = nodeVault({ endpoint: t.url });
    const init = await admin.init({ secret_shares: 3, secret_threshold: 2 });
    keys = init.keys_base64;
    root = init.root_token;
    await admin.unseal({ key: init.keys[0] });
    await admin.unseal({ key: init.keys[1] });
    await t.server.waitActive();
  });

  afterAll(async () => {
    await t.stop();
  });

  it('a Vault client makes a new root token from two of three shares; the audit log holds none of the secrets', async () => {
    const log = join(t.dir, 'audit.log');
    expect((await call(t.url, 'POST', 'sys/audit/file', { token: root, body: { type: 'file', options: { file_path: log } } })).status).toBe(204);

    const client = nodeVault({ endpoint: t.url });
    const started = await client.generateRootInit({});
    expect(started).toMatchObject({ started: true, progress: 0, required: 2, complete: false, pgp_fingerprint: '', otp_length: 28 });
    expect(started.otp).toHaveLength(28);

    const status = await call(t.url, 'GET', 'sys/generate-root/attempt');
    expect(status.status).toBe(200);
    expect(status.json).toEqual({
      started: true, nonce: started.nonce, progress: 0, required: 2, complete: false, encoded_token: '', encoded_root_token: '',
      pgp_fingerprint: '', otp: '', otp_length: 28,
    });

    expect(await client.generateRootUpdate({ key: keys[2], nonce: started.nonce })).toMatchObject({ progress: 1, complete: false });
    const done = await client.generateRootUpdate({ key: keys[0], nonce: started.nonce });
    expect(done).toMatchObject({ complete: true, progress: 2, required: 2 });
    expect(done.encoded_root_token).toBe(done.encoded_token);

    const token = decodeWithOtp(done.encoded_root_token, started.otp);
    const self = await nodeVault({ endpoint: t.url, token }).tokenLookupSelf();
    expect(self.data).toMatchObject({ policies: ['root'], ttl: 0 });

    expect((await call(t.url, 'DELETE', 'sys/audit/file', { token: root })).status).toBe(204);
    const audit = readFileSync(log, 'utf8');
    expect(audit).toContain('sys/generate-root/update');
    for (const secret of [...keys, started.otp, done.encoded_token, token]) expect(audit).not.toContain(secret);
  });

  it('answers bad input with 400 naming the field and the rule, and cancels with DELETE', async () => {
    const first = await call(t.url, 'PUT', 'sys/generate-root/attempt', { body: {} });
    expect(first.status).toBe(200);
    const second = await call(t.url, 'PUT', 'sys/generate-root/attempt', { body: {} });
    expect(second.status).toBe(400);
    expect(second.json.errors[0]).toMatch(/already in progress/);

    const wrongNonce = await call(t.url, 'PUT', 'sys/generate-root/update', { body: { key: keys[0], nonce: 'nope' } });
    expect(wrongNonce).toMatchObject({ status: 400, json: { errors: [expect.stringContaining('"nonce"')] } });
    const badKey = await call(t.url, 'PUT', 'sys/generate-root/update', { body: { key: 'zz', nonce: first.json.nonce } });
    expect(badKey).toMatchObject({ status: 400, json: { errors: [expect.stringContaining('"key"')] } });
    expect((await call(t.url, 'DELETE', 'sys/generate-root/attempt')).status).toBe(204);
    const pgp = await call(t.url, 'PUT', 'sys/generate-root/attempt', { body: { pgp_key: 'bm90IGEga2V5' } });
    expect(pgp).toMatchObject({ status: 400, json: { errors: [expect.stringContaining('"pgp_key"')] } });
    expect((await call(t.url, 'GET', 'sys/generate-root/attempt')).json.started).toBe(false);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import { startServer, type RunningServer } from './server';

// node-vault is a real Vault client from npm, written by people who never saw this code.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeVault = require('node-vault') as (opts: { endpoint: string; token?: string; apiVersion?: string }) => any;

describe('a Vault client (node-vault) drives the server end to end', () => {
  let server: RunningServer;
  let dir: string;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-nv-'));
    server = await startServer({
      storage: { type: 'raft', path: join(dir, 'data'), nodeId: 'n1' },
      listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1 << 20, clusterAddress: { host: '127.0.0.1', port: 0 } }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    url = server.addresses[0] as string;
  });

  afterAll(async () => {
    await server.close(1000);
    rmSync(dir, { recursive: true, force: true });
  });

  it('initializes, unseals, writes a policy, creates a token and uses KV v2 with it', async () => {
    const admin = nodeVault({ endpoint: url });
    expect(await admin.initialized()).toEqual({ initialized: false });
    const init = await admin.init({ secret_shares: 3, secret_threshold: 2 });
    expect(init.keys).toHaveLength(3);
    expect(init.root_token).toMatch(/^hvs\./);

    let status = await admin.unseal({ key: init.keys[0] });
    expect(status).toMatchObject({ sealed: true, progress: 1, t: 2, n: 3 });
    status = await admin.unseal({ key: init.keys_base64[2] });
    expect(status).toMatchObject({ sealed: false, progress: 0 });

    admin.token = init.root_token;
    await admin.mount({ mount_point: 'secret', type: 'kv', options: { version: '2' } });
    await admin.addPolicy({
      name: 'app',
      rules: 'path "secret/data/app/*" { capabilities = ["create", "read", "update"] }\npath "secret/metadata/app/*" { capabilities = ["list"] }',
    });
    const created = await admin.tokenCreate({ policies: ['app'], ttl: '1h' });
    expect(created.auth.policies).toEqual(['app', 'default']);

    const app = nodeVault({ endpoint: url, token: created.auth.client_token });
    const written = await app.write('secret/data/app/db', { data: { password: 'pw-1' } });
    expect(written.data.version).toBe(1);
    await app.write('secret/data/app/db', { data: { password: 'pw-2' }, options: { cas: 1 } });
    const read = await app.read('secret/data/app/db');
    expect(read.data.data).toEqual({ password: 'pw-2' });
    expect(read.data.metadata.version).toBe(2);

    // node-vault lists with the LIST method, which node's HTTP parser does not know.
    await app.write('secret/data/app/cache', { data: { url: 'redis://x' } });
    const listed = await app.list('secret/metadata/app/');
    expect(listed.data.keys).toEqual(['cache', 'db']);

    // Outside its policy the token is refused.
    await expect(app.read('secret/data/other')).rejects.toMatchObject({ response: { statusCode: 403 } });
    await expect(app.write('sys/policy/app', { rules: '' })).rejects.toMatchObject({ response: { statusCode: 403 } });

    const self = await app.tokenLookupSelf();
    expect(self.data.policies).toEqual(['app', 'default']);
    expect(self.data.ttl).toBeGreaterThan(3500);
  });
});

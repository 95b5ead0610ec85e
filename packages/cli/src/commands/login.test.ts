import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StrongroomError, testing, type Core } from '@strongroom/core';
import { cloud1AuthEngineWith } from '@strongroom/engine-cloud1-auth';
import { Cloud1Emulator } from '@strongroom/emulators';
import { loginCommand } from './login';

const { rig } = testing;
type Rig = testing.Rig;

process.env.AWS_EC2_METADATA_DISABLED = 'true';

/** Just enough of the HTTP API for the CLI: JSON bodies to core.handle and back. */
function serve(getCore: () => Core): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => { text += c.toString(); });
    req.on('end', () => {
      const path = (req.url ?? '').replace(/^\/v1\//, '').replace(/\?.*$/, '');
      const operation = req.method === 'GET' ? 'read' : req.method === 'DELETE' ? 'delete' : 'update';
      const token = req.headers['x-vault-token'];
      getCore().handle({ operation, path, data: text ? JSON.parse(text) : {}, ...(typeof token === 'string' ? { token } : {}) })
        .then((reply) => res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body === null ? '' : JSON.stringify(reply.body)))
        .catch((err: unknown) => {
          const status = err instanceof StrongroomError ? err.status : 500;
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [String((err as Error).message)] }));
        });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  }));
}

function sink(): { stream: NodeJS.WritableStream; text: () => string } {
  let text = '';
  const stream = { write: (chunk: string) => { text += chunk; return true; } } as unknown as NodeJS.WritableStream;
  return { stream, text: () => text };
}

describe('strongroom login -method=cloud1', () => {
  const emulator = new Cloud1Emulator();
  let r: Rig;
  let http: { server: Server; url: string };
  let accountId: string;
  let api: string;

  beforeAll(async () => {
    ({ api } = await emulator.start({ listen: '127.0.0.1:0' }));
    r = await rig({ engines: [cloud1AuthEngineWith({ env: {}, stsEndpointForRegion: () => api })] });
    http = await serve(() => r.core);
    ({ accountId } = emulator.createAccount({ id: '210987654321' }));
    const root = emulator.issueRootCredentials(accountId);
    await r.ok('update', 'sys/auth/cloud1', r.root, { type: 'cloud1' });
    await r.ok('update', 'auth/cloud1/config/client', r.root, {
      access_key: root.accessKeyId, secret_key: root.secretAccessKey, endpoint: api, iam_endpoint: api, sts_endpoint: api,
      sts_region: 'us-east-1', iam_server_id_header_value: 'strongroom.test',
    });
    await r.ok('update', 'auth/cloud1/config/certificate/emulator', r.root, { cloud1_public_cert: emulator.caCertificatePem() });
  });
  afterAll(async () => {
    await new Promise((resolve) => http.server.close(resolve));
    await emulator.stop();
  });

  it('logs an instance in from its metadata service (type=vm)', async () => {
    const instance = emulator.createInstance({ accountId });
    await r.ok('update', 'auth/cloud1/role/box', r.root, { auth_type: 'vm', bound_account_id: accountId });
    const metadataUrl = await emulator.openMetadataEndpoint(instance.instanceId);
    const out = sink();
    const env = { STRONGROOM_ADDR: http.url, CLOUD1_METADATA_URL: metadataUrl };
    expect(await loginCommand(['-method=cloud1', 'role=box', 'type=vm'], out.stream, env)).toBe(0);
    expect(out.text()).toMatch(/Success! You are now authenticated/);
    const token = /^token\s+(\S+)$/m.exec(out.text())?.[1];
    expect(token && (await r.works(token))).toBe(true);
    const nonce = /^token_meta_nonce\s+(\S+)$/m.exec(out.text())?.[1];
    expect(nonce).toBeDefined();
    // Logging in again takes the nonce of the first login.
    await expect(loginCommand(['-method=cloud1', 'role=box', 'type=vm'], sink().stream, env)).rejects.toThrow(/client nonce mismatch/);
    expect(await loginCommand(['-method=cloud1', 'role=box', 'type=vm', `nonce=${nonce}`], sink().stream, env)).toBe(0);
  });

  it('signs GetCallerIdentity with the provider credentials, with the server ID header (type=iam)', async () => {
    const carol = emulator.createUser(accountId, { userName: 'carol', accessKeys: 1 });
    const key = carol.accessKeys[0]!;
    await r.ok('update', 'auth/cloud1/role/dev', r.root, { bound_iam_principal_arn: carol.arn });
    const env = { STRONGROOM_ADDR: http.url, CLOUD1_ACCESS_KEY: key.accessKeyId, CLOUD1_SECRET_KEY: key.secretAccessKey };
    await expect(loginCommand(['-method=cloud1', 'role=dev'], sink().stream, env)).rejects.toThrow(/X-Service-Cloud1-IAM-Server-ID/);
    const out = sink();
    expect(await loginCommand(['-method=cloud1', '-format=json', 'role=dev', 'header_value=strongroom.test'], out.stream, env)).toBe(0);
    const body = JSON.parse(out.text());
    expect(body.auth.metadata).toMatchObject({ auth_type: 'iam', account_id: accountId });
    expect(await r.works(body.auth.client_token)).toBe(true);
  });

  it('refuses other methods and types', async () => {
    await expect(loginCommand(['-method=userpass'], sink().stream, {})).rejects.toThrow(/not supported/);
    await expect(loginCommand(['-method=cloud1', 'type=gce'], sink().stream, {})).rejects.toThrow(/type must be vm or iam/);
  });
});

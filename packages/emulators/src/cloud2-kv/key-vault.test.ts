/** The cloud2-kv emulator against the official Key Vault secrets client and identity library. */
import { request as httpsRequest, Agent } from 'node:https';
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient, type SecretClientOptions } from '@azure/keyvault-secrets';
import { runCli } from '../cli';
import { Cloud2KeyVaultEmulator } from './emulator';

let emulator: Cloud2KeyVaultEmulator;
let secrets: SecretClient;

/** Makes the SDK's HTTPS requests trust the emulator's certificate (and nothing else). */
function trusting(ca: string): NonNullable<SecretClientOptions['additionalPolicies']> {
  const agent = new Agent({ ca });
  return [{ policy: { name: 'trust-emulator', sendRequest: (req, next) => next(Object.assign(req, { agent })) }, position: 'perCall' }];
}

function clientFor(
  target: Cloud2KeyVaultEmulator,
  app: { clientId: string; clientSecret: string },
  options: { tenantId?: string; maxRetries?: number; authorityHost?: string | undefined } = {},
): SecretClient {
  const policies = trusting(target.caCertificatePem!);
  const authorityHost = 'authorityHost' in options ? options.authorityHost : target.url;
  const credential = new ClientSecretCredential(options.tenantId ?? target.tenantId, app.clientId, app.clientSecret, {
    ...(authorityHost === undefined ? {} : { authorityHost }),
    disableInstanceDiscovery: true,
    additionalPolicies: policies,
  });
  return new SecretClient(target.url, credential, {
    disableChallengeResourceVerification: true,
    additionalPolicies: policies,
    retryOptions: { maxRetries: options.maxRetries ?? 0, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
  });
}

/** An unauthenticated HTTPS request to the emulator, trusting its certificate. */
function call(method: string, path: string, body?: object): Promise<{ status: number; headers: Record<string, unknown>; json: any }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${emulator.url}${path}`, { method, ca: emulator.caCertificatePem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode!, headers: res.headers, json: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

beforeAll(async () => {
  emulator = await Cloud2KeyVaultEmulator.start();
  secrets = clientFor(emulator, emulator.addClient());
});

afterAll(() => emulator.close());

describe('cloud2-kv with the SDK', () => {
  it('creates a secret, adds a version on update, and reads the latest or a given version', async () => {
    const first = await secrets.setSecret('db-password', 'one', { tags: { owner: 'strongroom' }, contentType: 'text/plain' });
    const second = await secrets.setSecret('db-password', 'two');
    expect(first.properties.version).toMatch(/^[0-9a-f]{32}$/);
    expect(second.properties.version).not.toBe(first.properties.version);
    expect(second.properties.id).toBe(`${emulator.url}/secrets/db-password/${second.properties.version}`);
    expect(second.properties).toMatchObject({ vaultUrl: emulator.url, name: 'db-password', enabled: true, recoveryLevel: 'Recoverable+Purgeable' });

    expect((await secrets.getSecret('db-password')).value).toBe('two');
    // Names do not depend on case.
    expect((await secrets.getSecret('DB-PASSWORD')).value).toBe('two');
    const old = await secrets.getSecret('db-password', { version: first.properties.version! });
    expect(old).toMatchObject({ value: 'one', properties: { tags: { owner: 'strongroom' }, contentType: 'text/plain' } });

    const versions = [];
    for await (const v of secrets.listPropertiesOfSecretVersions('db-password')) versions.push(v.version);
    expect(versions.sort()).toEqual([first.properties.version, second.properties.version].sort());

    await secrets.updateSecretProperties('db-password', first.properties.version!, { enabled: false, tags: { old: 'yes' } });
    await expect(secrets.getSecret('db-password', { version: first.properties.version! })).rejects.toMatchObject({ statusCode: 403 });
    expect((await secrets.getSecret('db-password')).value).toBe('two');
  });

  it('soft-deletes: the name stays taken until purged or recovered', async () => {
    await secrets.setSecret('to-delete', 'v1');
    const poller = await secrets.beginDeleteSecret('to-delete');
    const deleted = await poller.pollUntilDone();
    expect(deleted).toMatchObject({ name: 'to-delete', properties: { recoveryId: `${emulator.url}/deletedsecrets/to-delete` } });
    expect(deleted.properties.deletedOn).toBeInstanceOf(Date);

    await expect(secrets.getSecret('to-delete')).rejects.toMatchObject({ statusCode: 404, code: 'SecretNotFound' });
    await expect(secrets.setSecret('to-delete', 'v2')).rejects.toMatchObject({ statusCode: 409, code: 'Conflict' });
    await expect(secrets.beginDeleteSecret('to-delete')).rejects.toMatchObject({ statusCode: 404 });

    const recovered = await (await secrets.beginRecoverDeletedSecret('to-delete')).pollUntilDone();
    expect(recovered.name).toBe('to-delete');
    expect((await secrets.getSecret('to-delete')).value).toBe('v1');

    await (await secrets.beginDeleteSecret('to-delete')).pollUntilDone();
    await secrets.purgeDeletedSecret('to-delete');
    await expect(secrets.getDeletedSecret('to-delete')).rejects.toMatchObject({ statusCode: 404 });
    expect((await secrets.setSecret('to-delete', 'fresh')).value).toBe('fresh');
    expect(emulator.secrets().find((s) => s.name === 'to-delete')?.versions.map((v) => v.value)).toEqual(['fresh']);
  });

  it('answers 404 SecretNotFound for what does not exist', async () => {
    await expect(secrets.getSecret('never-written')).rejects.toMatchObject({ statusCode: 404, code: 'SecretNotFound' });
    await expect(secrets.getSecret('db-password', { version: '0'.repeat(32) })).rejects.toMatchObject({ statusCode: 404 });
    await expect(secrets.purgeDeletedSecret('never-written')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('refuses names, values and tags the service refuses', async () => {
    for (const name of ['under_score', 'dot.ted', 'x'.repeat(128)]) {
      await expect(secrets.setSecret(name, 'v')).rejects.toMatchObject({ statusCode: 400, code: 'BadParameter' });
    }
    await expect(secrets.setSecret('big', 'x'.repeat(25 * 1024 + 1))).rejects.toMatchObject({ statusCode: 400, code: 'BadParameter' });
    const tags = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`t${i}`, 'v']));
    await expect(secrets.setSecret('many-tags', 'v', { tags })).rejects.toMatchObject({ statusCode: 400 });
    expect((await secrets.setSecret('x'.repeat(127), 'v')).name).toHaveLength(127);
    expect(emulator.secrets().map((s) => s.name)).not.toContain('big');
  });

  it('lists secrets across pages', async () => {
    for (let i = 0; i < 30; i++) await secrets.setSecret(`page-${String(i).padStart(2, '0')}`, `v${i}`);
    const names: string[] = [];
    for await (const p of secrets.listPropertiesOfSecrets()) names.push(p.name);
    expect(names.filter((n) => n.startsWith('page-'))).toHaveLength(30);
  });

  describe('authentication', () => {
    it('challenges a request without a token, and refuses an unknown token', async () => {
      const bare = await call('GET', '/secrets/db-password/?api-version=2025-07-01');
      expect(bare.status).toBe(401);
      expect(bare.headers['www-authenticate']).toBe(
        `Bearer authorization="${emulator.url}/${emulator.tenantId}", resource="https://vault.azure.net"`,
      );
      const forged = await new Promise<number>((resolve, reject) => {
        httpsRequest(
          `${emulator.url}/secrets/db-password/?api-version=2025-07-01`,
          { ca: emulator.caCertificatePem, headers: { authorization: 'Bearer forged' } },
          (res) => resolve(res.statusCode!),
        )
          .on('error', reject)
          .end();
      });
      expect(forged).toBe(401);
    });

    it('refuses a wrong client secret, an unknown client and another tenant at the token endpoint', async () => {
      const app = emulator.addClient();
      await expect(clientFor(emulator, { ...app, clientSecret: 'wrong' }).getSecret('db-password')).rejects.toThrow(
        /invalid_client: .*Invalid client secret/,
      );
      await expect(clientFor(emulator, { clientId: 'nobody', clientSecret: 'x' }).getSecret('db-password')).rejects.toThrow(
        /unauthorized_client: .*not found in the directory/,
      );
      // A credential of another tenant gets no token for this vault.
      await expect(clientFor(emulator, app, { tenantId: '11111111-2222-3333-4444-555555555555' }).getSecret('db-password')).rejects.toThrow();
      expect((await clientFor(emulator, app).getSecret('db-password')).value).toBe('two');
    });

    it('finds the token endpoint through AZURE_AUTHORITY_HOST', async () => {
      const saved = process.env.AZURE_AUTHORITY_HOST;
      process.env.AZURE_AUTHORITY_HOST = emulator.url;
      try {
        const viaEnv = clientFor(emulator, emulator.addClient(), { authorityHost: undefined });
        expect((await viaEnv.getSecret('db-password')).value).toBe('two');
      } finally {
        if (saved === undefined) delete process.env.AZURE_AUTHORITY_HOST;
        else process.env.AZURE_AUTHORITY_HOST = saved;
      }
    });

    it('refuses an application the vault grants too little', async () => {
      const reader = clientFor(emulator, emulator.addClient({ permissions: ['get', 'list'] }));
      expect((await reader.getSecret('db-password')).value).toBe('two');
      await expect(reader.setSecret('db-password', 'three')).rejects.toMatchObject({ statusCode: 403, code: 'Forbidden' });
      await expect(reader.beginDeleteSecret('db-password')).rejects.toMatchObject({ statusCode: 403 });
    });
  });

  describe('admin view', () => {
    it('lists every secret and version with values, soft-deleted ones marked', async () => {
      await secrets.setSecret('admin-seen', 'visible');
      await (await secrets.beginDeleteSecret('admin-seen')).pollUntilDone();
      const { status, json } = await call('GET', '/_admin/secrets');
      expect(status).toBe(200);
      expect(json.secrets).toContainEqual(
        expect.objectContaining({ name: 'admin-seen', deleted: true, versions: [expect.objectContaining({ value: 'visible', enabled: true })] }),
      );
      expect(json.secrets).toContainEqual(expect.objectContaining({ name: 'db-password', deleted: false }));
    });

    it('registers clients and fails the next requests on demand', async () => {
      const { json: app } = await call('POST', '/_admin/clients', { clientId: 'app-from-admin', clientSecret: 's3cret-value' });
      expect(app).toMatchObject({ clientId: 'app-from-admin', permissions: ['get', 'list', 'set', 'delete', 'recover', 'purge'] });
      const admin = clientFor(emulator, app);
      expect((await admin.getSecret('db-password')).value).toBe('two');

      await call('POST', '/_admin/faults', { count: 1, status: 503 });
      await expect(admin.getSecret('db-password')).rejects.toMatchObject({ statusCode: 503, code: 'ServiceUnavailable' });
      emulator.failNextRequests(2, 429);
      const retrying = clientFor(emulator, app, { maxRetries: 3 });
      expect((await retrying.getSecret('db-password')).value).toBe('two');
    });
  });
});

describe('cloud2-kv from the command line', () => {
  it('starts with --listen, prints a tenant and a client, and stops', async () => {
    let printed = '';
    const running = await runCli(['cloud2-kv', '--listen', '127.0.0.1:0'], { write: (t: string) => (printed += t) });
    expect(running).toBeDefined();
    try {
      const field = (name: string): string => new RegExp(`${name}=(\\S+)`).exec(printed)![1]!;
      const vault = field('CLOUD2_KEY_VAULT_URI');
      const ca = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(printed)![0];
      const policies = trusting(ca);
      const credential = new ClientSecretCredential(field('CLOUD2_TENANT_ID'), field('CLOUD2_CLIENT_ID'), field('CLOUD2_CLIENT_SECRET'), {
        authorityHost: field('AZURE_AUTHORITY_HOST'),
        disableInstanceDiscovery: true,
        additionalPolicies: policies,
      });
      const cli = new SecretClient(vault, credential, { disableChallengeResourceVerification: true, additionalPolicies: policies });
      await cli.setSecret('from-cli', 'x');
      expect((await cli.getSecret('from-cli')).value).toBe('x');
    } finally {
      await running!.stop();
    }
  });
});

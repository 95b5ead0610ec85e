/** The cloud3-sm emulator against the official Secret Manager client over gRPC. */
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { credentials as grpcCredentials, status } from '@grpc/grpc-js';
import { runCli } from '../cli';
import { crc32c } from '../cloud3/crc32c';
import { Cloud3SecretManagerEmulator } from './emulator';

const PROJECT = 'demo-project';
const parent = `projects/${PROJECT}`;

let emulator: Cloud3SecretManagerEmulator;
let client: SecretManagerServiceClient;

function clientFor(target: { host: string; port: number }, credentials?: object): SecretManagerServiceClient {
  return new SecretManagerServiceClient({
    apiEndpoint: target.host,
    port: target.port,
    sslCreds: grpcCredentials.createInsecure(),
    // Never the metadata server or a real token service: explicit (dummy or emulator-made) credentials.
    credentials: credentials ?? { client_email: 'nobody@example.invalid', private_key: 'unused' },
    projectId: PROJECT,
  });
}

const text = (data: Uint8Array | string | null | undefined): string => Buffer.from(data ?? '').toString('utf8');

beforeAll(async () => {
  emulator = await Cloud3SecretManagerEmulator.start();
  client = clientFor(emulator);
});

afterAll(async () => {
  await client.close();
  await emulator.close();
});

describe('cloud3-sm with the SDK', () => {
  it('creates a secret, adds versions, and accesses latest or a numbered version', async () => {
    const [secret] = await client.createSecret({
      parent,
      secretId: 'db-password',
      secret: { replication: { automatic: {} }, labels: { owner: 'strongroom' } },
    });
    expect(secret).toMatchObject({ name: `${parent}/secrets/db-password`, labels: { owner: 'strongroom' } });
    expect(Number(secret.createTime!.seconds)).toBeGreaterThan(0);

    const [v1] = await client.addSecretVersion({ parent: secret.name!, payload: { data: Buffer.from('one') } });
    const [v2] = await client.addSecretVersion({
      parent: secret.name!,
      payload: { data: Buffer.from('two'), dataCrc32c: crc32c(Buffer.from('two')) },
    });
    expect([v1.name, v1.state, v2.name]).toEqual([`${secret.name}/versions/1`, 'ENABLED', `${secret.name}/versions/2`]);
    expect(v2.clientSpecifiedPayloadChecksum).toBe(true);

    const [latest] = await client.accessSecretVersion({ name: `${secret.name}/versions/latest` });
    expect(latest.name).toBe(`${secret.name}/versions/2`);
    expect(text(latest.payload!.data)).toBe('two');
    expect(Number(latest.payload!.dataCrc32c)).toBe(crc32c(Buffer.from('two')));
    const [first] = await client.accessSecretVersion({ name: `${secret.name}/versions/1` });
    expect(text(first.payload!.data)).toBe('one');

    const [fetched] = await client.getSecret({ name: secret.name! });
    expect(fetched.labels).toEqual({ owner: 'strongroom' });
    const [versions] = await client.listSecretVersions({ parent: secret.name! });
    expect(versions.map((v) => v.name)).toEqual([`${secret.name}/versions/2`, `${secret.name}/versions/1`]);
  });

  it('answers ALREADY_EXISTS for a second create and NOT_FOUND for what does not exist', async () => {
    const secret = { replication: { automatic: {} } };
    await client.createSecret({ parent, secretId: 'twice', secret });
    await expect(client.createSecret({ parent, secretId: 'twice', secret })).rejects.toMatchObject({ code: status.ALREADY_EXISTS });
    await expect(client.getSecret({ name: `${parent}/secrets/missing` })).rejects.toMatchObject({ code: status.NOT_FOUND });
    await expect(client.accessSecretVersion({ name: `${parent}/secrets/missing/versions/latest` })).rejects.toMatchObject({
      code: status.NOT_FOUND,
    });
    // A secret with no versions has no latest.
    await expect(client.accessSecretVersion({ name: `${parent}/secrets/twice/versions/latest` })).rejects.toMatchObject({
      code: status.NOT_FOUND,
    });
    await expect(client.deleteSecret({ name: `${parent}/secrets/missing` })).rejects.toMatchObject({ code: status.NOT_FOUND });
  });

  it('deletes a secret with its versions', async () => {
    const [secret] = await client.createSecret({ parent, secretId: 'to-delete', secret: { replication: { automatic: {} } } });
    await client.addSecretVersion({ parent: secret.name!, payload: { data: Buffer.from('v') } });
    await client.deleteSecret({ name: secret.name! });
    await expect(client.getSecret({ name: secret.name! })).rejects.toMatchObject({ code: status.NOT_FOUND });
    expect(emulator.secrets().map((s) => s.name)).not.toContain(secret.name);
    // The ID is free again at once.
    await client.createSecret({ parent, secretId: 'to-delete', secret: { replication: { automatic: {} } } });
  });

  it('disables, enables and destroys versions; only enabled ones can be read', async () => {
    const [secret] = await client.createSecret({ parent, secretId: 'states', secret: { replication: { automatic: {} } } });
    await client.addSecretVersion({ parent: secret.name!, payload: { data: Buffer.from('old') } });
    await client.addSecretVersion({ parent: secret.name!, payload: { data: Buffer.from('new') } });
    const v2 = `${secret.name}/versions/2`;

    const [disabled] = await client.disableSecretVersion({ name: v2 });
    expect(disabled.state).toBe('DISABLED');
    await expect(client.accessSecretVersion({ name: `${secret.name}/versions/latest` })).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
    });
    await client.enableSecretVersion({ name: v2 });
    expect(text((await client.accessSecretVersion({ name: v2 }))[0].payload!.data)).toBe('new');

    const [destroyed] = await client.destroySecretVersion({ name: `${secret.name}/versions/1` });
    expect(destroyed).toMatchObject({ state: 'DESTROYED' });
    expect(Number(destroyed.destroyTime!.seconds)).toBeGreaterThan(0);
    await expect(client.accessSecretVersion({ name: `${secret.name}/versions/1` })).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
    });
    await expect(client.enableSecretVersion({ name: `${secret.name}/versions/1` })).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
    });
    const [enabled] = await client.listSecretVersions({ parent: secret.name!, filter: 'state:ENABLED' });
    expect(enabled.map((v) => v.name)).toEqual([v2]);
    expect(emulator.secrets().find((s) => s.name === secret.name)!.versions).toEqual([
      { name: `${secret.name}/versions/1`, state: 'DESTROYED' },
      expect.objectContaining({ name: v2, state: 'ENABLED', value: 'new' }),
    ]);
  });

  it('refuses bad secret IDs, labels, payloads and missing replication', async () => {
    const replication = { automatic: {} };
    for (const secretId of ['has.dot', 'has/slash', 'x'.repeat(256), '']) {
      await expect(client.createSecret({ parent, secretId, secret: { replication } })).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
      });
    }
    await expect(client.createSecret({ parent, secretId: 'no-replication', secret: {} })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    await expect(
      client.createSecret({ parent, secretId: 'bad-label', secret: { replication, labels: { Upper: 'x' } } }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(client.createSecret({ parent: 'projects/Not_A_Project', secretId: 'x', secret: { replication } })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    await client.createSecret({ parent, secretId: 'payloads', secret: { replication } });
    await expect(
      client.addSecretVersion({ parent: `${parent}/secrets/payloads`, payload: { data: Buffer.alloc(64 * 1024 + 1) } }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(
      client.addSecretVersion({ parent: `${parent}/secrets/payloads`, payload: { data: Buffer.from('x'), dataCrc32c: 12345 } }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    const [max] = await client.addSecretVersion({ parent: `${parent}/secrets/payloads`, payload: { data: Buffer.alloc(64 * 1024) } });
    expect(max.name).toBe(`${parent}/secrets/payloads/versions/1`);
    expect(emulator.secrets().map((s) => s.name)).not.toContain(`${parent}/secrets/has.dot`);
  });

  it('lists a project\'s secrets in pages and by label', async () => {
    const replication = { automatic: {} };
    for (let i = 0; i < 5; i++) {
      await client.createSecret({ parent: 'projects/list-project', secretId: `s${i}`, secret: { replication, labels: { n: String(i % 2) } } });
    }
    const [page, next] = await client.listSecrets({ parent: 'projects/list-project', pageSize: 2 }, { autoPaginate: false });
    expect(page.map((s) => s.name)).toEqual(['projects/list-project/secrets/s0', 'projects/list-project/secrets/s1']);
    expect(next).toMatchObject({ pageToken: '2' });
    const [all] = await client.listSecrets({ parent: 'projects/list-project' });
    expect(all.map((s) => s.name)).toEqual([0, 1, 2, 3, 4].map((i) => `projects/list-project/secrets/s${i}`));
    const [odd] = await client.listSecrets({ parent: 'projects/list-project', filter: 'labels.n=1' });
    expect(odd.map((s) => s.name)).toEqual(['projects/list-project/secrets/s1', 'projects/list-project/secrets/s3']);
  });

  describe('authentication', () => {
    let strict: Cloud3SecretManagerEmulator;

    beforeAll(async () => {
      strict = await Cloud3SecretManagerEmulator.start({ requireAuth: true });
    });

    afterAll(() => strict.close());

    const headers = (authorization: string) => ({ otherArgs: { headers: { authorization } } });

    it('refuses a call without a token when required, and an unknown token always', async () => {
      const anonymous = clientFor(strict);
      try {
        await expect(anonymous.listSecrets({ parent })).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
        await expect(anonymous.listSecrets({ parent }, headers('Bearer forged'))).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
        await expect(client.listSecrets({ parent }, headers('Bearer forged'))).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
        const token = strict.issueToken();
        const [secrets] = await anonymous.listSecrets({ parent }, headers(`Bearer ${token}`));
        expect(secrets).toEqual([]);
      } finally {
        await anonymous.close();
      }
    });

    it('accepts the JWT a service account key signs, for its own project only', async () => {
      const account = strict.createServiceAccount(PROJECT);
      const signed = clientFor(strict, account);
      try {
        // The library signs its own access token with the account's key, as it would for the real service.
        const bearer = `Bearer ${await jwtOf(signed)}`;
        const [created] = await signed.createSecret(
          { parent, secretId: 'signed', secret: { replication: { automatic: {} } } },
          headers(bearer),
        );
        expect(created.name).toBe(`${parent}/secrets/signed`);
        await expect(signed.listSecrets({ parent: 'projects/other-project' }, headers(bearer))).rejects.toMatchObject({
          code: status.PERMISSION_DENIED,
        });
        strict.deleteServiceAccountKey(account.private_key_id);
        await expect(signed.listSecrets({ parent }, headers(bearer))).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
      } finally {
        await signed.close();
      }
    });

    it('trades a signed assertion for an access token at the account\'s token_uri', async () => {
      const account = strict.createServiceAccount(PROJECT, 'exchanger');
      const signed = clientFor(strict, account);
      try {
        const assertion = await jwtOf(signed);
        const response = await fetch(account.token_uri, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
        });
        const { access_token: token } = (await response.json()) as { access_token: string };
        expect(response.status).toBe(200);
        await signed.createSecret({ parent, secretId: 'exchanged', secret: { replication: { automatic: {} } } }, headers(`Bearer ${token}`));
        const [secrets] = await signed.listSecrets({ parent }, headers(`Bearer ${token}`));
        expect(secrets.map((s) => s.name)).toContain(`${parent}/secrets/exchanged`);
        const refused = await fetch(account.token_uri, {
          method: 'POST',
          body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: `${assertion}x` }),
        });
        expect(refused.status).toBe(400);
      } finally {
        await signed.close();
      }
    });
  });

  describe('admin view', () => {
    const admin = async (path: string, body?: object): Promise<any> => {
      const response = await fetch(`${emulator.adminUrl}/_admin/${path}`, body ? { method: 'POST', body: JSON.stringify(body) } : {});
      return response.json();
    };

    it('lists every secret with its versions and payloads', async () => {
      const [secret] = await client.createSecret({ parent, secretId: 'admin-seen', secret: { replication: { automatic: {} } } });
      await client.addSecretVersion({ parent: secret.name!, payload: { data: Buffer.from('visible') } });
      const { secrets } = await admin('secrets');
      expect(secrets).toContainEqual({
        name: secret.name,
        labels: {},
        versions: [{ name: `${secret.name}/versions/1`, state: 'ENABLED', value: 'visible', valueBase64: Buffer.from('visible').toString('base64') }],
      });
    });

    it('fails the next requests on demand', async () => {
      expect(await admin('faults', { count: 1, code: 'UNAVAILABLE' })).toEqual({ pending: 1 });
      // CreateSecret is not retried by the client, so the injected failure reaches the caller.
      await expect(client.createSecret({ parent, secretId: 'after-fault', secret: { replication: { automatic: {} } } })).rejects.toMatchObject({
        code: status.UNAVAILABLE,
      });
      await client.createSecret({ parent, secretId: 'after-fault', secret: { replication: { automatic: {} } } });
      emulator.failNextRequests(1, status.RESOURCE_EXHAUSTED);
      await expect(client.getSecret({ name: `${parent}/secrets/after-fault` })).rejects.toMatchObject({
        code: status.RESOURCE_EXHAUSTED,
      });
    });
  });
});

/** The self-signed JWT the client library would send, taken from its auth client. */
async function jwtOf(signed: SecretManagerServiceClient): Promise<string> {
  const headers = (await signed.auth.getRequestHeaders()) as unknown as { get(name: string): string | null };
  return String(headers.get('authorization')).replace(/^Bearer /, '');
}

describe('cloud3-sm from the command line', () => {
  it('starts with --listen, prints the endpoint and a token, and stops', async () => {
    let printed = '';
    const running = await runCli(['cloud3-sm', '--listen', '127.0.0.1:0'], { write: (t: string) => (printed += t) });
    expect(running).toBeDefined();
    const endpoint = /STRONGROOM_CLOUD3_SM_ENDPOINT=(\S+):(\d+)/.exec(printed)!;
    const cli = clientFor({ host: endpoint[1]!, port: Number(endpoint[2]) });
    try {
      await cli.createSecret({ parent, secretId: 'from-cli', secret: { replication: { automatic: {} } } });
      const [secret] = await cli.getSecret({ name: `${parent}/secrets/from-cli` });
      expect(secret.name).toBe(`${parent}/secrets/from-cli`);
    } finally {
      await cli.close();
      await running!.stop();
    }
  });
});

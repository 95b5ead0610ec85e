import sodium = require('libsodium-wrappers');
import { runCli } from '../cli';
import { RepohostEmulator } from './emulator';
import { OctokitBridge, octokitError, type OctokitClient } from './test-support/octokit';

/** What a client does before every write: seal the value to the public key it was given. */
const seal = (value: string, key: string): string =>
  Buffer.from(sodium.crypto_box_seal(value, Buffer.from(key, 'base64'))).toString('base64');

describe('repohost emulator', () => {
  let emulator: RepohostEmulator;
  const bridge = new OctokitBridge();
  let octokit: OctokitClient;
  const repo = { owner: 'acme', repo: 'web' };

  /** Fetches the public key and writes one sealed secret, as a syncing client does. */
  const putRepoSecret = async (client: OctokitClient, name: string, value: string) => {
    const { data: key } = await client.call('actions.getRepoPublicKey', repo);
    return client.call('actions.createOrUpdateRepoSecret', { ...repo, secret_name: name, encrypted_value: seal(value, key.key), key_id: key.key_id });
  };

  beforeAll(async () => {
    await sodium.ready;
    emulator = await RepohostEmulator.start();
  });
  afterAll(async () => {
    await bridge.close();
    await emulator.close();
  });
  beforeEach(() => {
    emulator.reset();
    emulator.createRepository('acme/web');
    octokit = bridge.client(emulator.addToken(), emulator.url);
  });

  it('creates, updates, reads, lists and deletes repository secrets, opening each sealed value', async () => {
    const { data: key } = await octokit.call('actions.getRepoPublicKey', repo);
    expect(Buffer.from(key.key, 'base64')).toHaveLength(32);
    expect(key.key_id).toMatch(/^\d+$/);

    expect((await putRepoSecret(octokit, 'db_password', 'one')).status).toBe(201);
    expect(emulator.secretValue('acme/web', 'DB_PASSWORD')).toBe('one');
    expect((await putRepoSecret(octokit, 'DB_PASSWORD', 'two')).status).toBe(204);
    expect(emulator.secretValue('acme/web', 'db_password')).toBe('two');
    await putRepoSecret(octokit, 'API_TOKEN', 'three');

    const { data: one } = await octokit.call('actions.getRepoSecret', { ...repo, secret_name: 'db_password' });
    expect(one).toEqual({ name: 'DB_PASSWORD', created_at: expect.any(String), updated_at: expect.any(String) });
    expect(JSON.stringify(one)).not.toContain('two');

    const { data: list } = await octokit.call('actions.listRepoSecrets', repo);
    expect(list.total_count).toBe(2);
    expect(list.secrets.map((s: { name: string }) => s.name)).toEqual(['API_TOKEN', 'DB_PASSWORD']);
    const { data: paged } = await octokit.call('actions.listRepoSecrets', { ...repo, per_page: 1, page: 2 });
    expect(paged).toMatchObject({ total_count: 2, secrets: [{ name: 'DB_PASSWORD' }] });

    expect((await octokit.call('actions.deleteRepoSecret', { ...repo, secret_name: 'DB_PASSWORD' })).status).toBe(204);
    expect(await octokitError(octokit.call('actions.getRepoSecret', { ...repo, secret_name: 'DB_PASSWORD' }))).toMatchObject({
      status: 404,
      data: { message: 'Not Found' },
    });
    expect((await octokitError(octokit.call('actions.deleteRepoSecret', { ...repo, secret_name: 'DB_PASSWORD' }))).status).toBe(404);
  });

  it('keeps environments and their secrets under keys of their own', async () => {
    const { data: environment } = await octokit.call('repos.createOrUpdateEnvironment', { ...repo, environment_name: 'Production' });
    expect(environment).toMatchObject({ name: 'Production', protection_rules: [] });
    const { data: all } = await octokit.call('repos.getAllEnvironments', repo);
    expect(all).toMatchObject({ total_count: 1, environments: [{ name: 'Production' }] });

    const envRepo = { ...repo, environment_name: 'production' };
    const { data: envKey } = await octokit.call('actions.getEnvironmentPublicKey', envRepo);
    const { data: repoKey } = await octokit.call('actions.getRepoPublicKey', repo);
    expect(envKey.key).not.toBe(repoKey.key);

    // A value sealed to the repository's key cannot be opened with the environment's.
    const misaddressed = await octokitError(
      octokit.call('actions.createOrUpdateEnvironmentSecret', {
        ...envRepo,
        secret_name: 'DEPLOY_KEY',
        encrypted_value: seal('k', repoKey.key),
        key_id: envKey.key_id,
      }),
    );
    expect(misaddressed.status).toBe(422);

    const created = await octokit.call('actions.createOrUpdateEnvironmentSecret', {
      ...envRepo,
      secret_name: 'DEPLOY_KEY',
      encrypted_value: seal('k1', envKey.key),
      key_id: envKey.key_id,
    });
    expect(created.status).toBe(201);
    expect(emulator.secretValue('acme/web', 'DEPLOY_KEY', 'Production')).toBe('k1');
    expect(emulator.secretValue('acme/web', 'DEPLOY_KEY')).toBeUndefined();
    expect((await octokit.call('actions.getEnvironmentSecret', { ...envRepo, secret_name: 'deploy_key' })).data.name).toBe('DEPLOY_KEY');
    expect((await octokit.call('actions.listEnvironmentSecrets', envRepo)).data.total_count).toBe(1);
    expect((await octokit.call('actions.deleteEnvironmentSecret', { ...envRepo, secret_name: 'DEPLOY_KEY' })).status).toBe(204);

    expect((await octokitError(octokit.call('actions.listEnvironmentSecrets', { ...repo, environment_name: 'staging' }))).status).toBe(404);
    expect((await octokit.call('repos.deleteAnEnvironment', envRepo)).status).toBe(204);
    expect((await octokitError(octokit.call('repos.getEnvironment', envRepo))).status).toBe(404);
  });

  it('refuses names, values and keys the service refuses, without echoing values', async () => {
    for (const name of ['has space', '1STARTS_WITH_DIGIT', 'GITHUB_TOKEN', 'dash-ed']) {
      const refused = await octokitError(putRepoSecret(octokit, name, 'value-xyz'));
      expect(refused.status).toBe(422);
      expect(refused.data.errors[0]).toMatchObject({ field: 'secret_name' });
    }
    const { data: key } = await octokit.call('actions.getRepoPublicKey', repo);
    const put = (params: Record<string, unknown>) => octokit.call('actions.createOrUpdateRepoSecret', { ...repo, secret_name: 'S', ...params });
    expect((await octokitError(put({ encrypted_value: 'not base64!', key_id: key.key_id }))).data.errors[0].field).toBe('encrypted_value');
    expect((await octokitError(put({ encrypted_value: Buffer.from('x'.repeat(60)).toString('base64'), key_id: key.key_id }))).status).toBe(
      422,
    );
    expect((await octokitError(put({ encrypted_value: seal('v', key.key), key_id: '1' }))).data.errors[0].field).toBe('key_id');
    const tooLarge = await octokitError(put({ encrypted_value: seal('z'.repeat(48 * 1024 + 1), key.key), key_id: key.key_id }));
    expect(tooLarge.status).toBe(422);
    expect(JSON.stringify(tooLarge.data)).not.toContain('zzz');
    await put({ encrypted_value: seal('z'.repeat(48 * 1024), key.key), key_id: key.key_id });

    // After a key rotation, values sealed to the old key are refused until the client refetches.
    emulator.rotatePublicKey('acme/web');
    expect((await octokitError(put({ encrypted_value: seal('v', key.key), key_id: key.key_id }))).status).toBe(422);
    expect((await putRepoSecret(octokit, 'S', 'after-rotation')).status).toBe(204);
    expect(emulator.secretValue('acme/web', 'S')).toBe('after-rotation');
  });

  it('checks the token: missing, unknown, another repository, read-only', async () => {
    expect(await octokitError(bridge.client(undefined, emulator.url).call('actions.listRepoSecrets', repo))).toMatchObject({
      status: 401,
      data: { message: 'Requires authentication' },
    });
    expect(await octokitError(bridge.client('nope', emulator.url).call('actions.listRepoSecrets', repo))).toMatchObject({
      status: 401,
      data: { message: 'Bad credentials' },
    });
    emulator.createRepository('acme/other');
    const elsewhere = bridge.client(emulator.addToken({ repositories: ['acme/other'] }), emulator.url);
    expect((await octokitError(elsewhere.call('actions.getRepoPublicKey', repo))).status).toBe(404);
    expect((await octokitError(octokit.call('actions.getRepoPublicKey', { owner: 'acme', repo: 'missing' }))).status).toBe(404);

    const reader = bridge.client(emulator.addToken({ permission: 'read' }), emulator.url);
    expect((await reader.call('actions.listRepoSecrets', repo)).status).toBe(200);
    expect((await octokitError(putRepoSecret(reader, 'X', 'y'))).status).toBe(403);
    expect(emulator.secretValue('acme/web', 'X')).toBeUndefined();
  });

  it('shows stored plaintext to the admin API and fails the next requests on demand', async () => {
    await putRepoSecret(octokit, 'SEEN', 'plain-value');
    const view = (await (await fetch(`${emulator.url}/_admin/repos`)).json()) as { repositories: unknown[] };
    expect(view.repositories).toEqual([
      expect.objectContaining({ full_name: 'acme/web', secrets: [expect.objectContaining({ name: 'SEEN', value: 'plain-value' })] }),
    ]);

    const created = await fetch(`${emulator.url}/_admin/repos`, { method: 'POST', body: JSON.stringify({ full_name: 'acme/api' }) });
    expect(await created.json()).toMatchObject({ fullName: 'acme/api', publicKey: { key_id: expect.any(String) } });
    const token = (await (
      await fetch(`${emulator.url}/_admin/tokens`, { method: 'POST', body: JSON.stringify({ repositories: ['acme/api'] }) })
    ).json()) as { token: string };
    expect((await bridge.client(token.token, emulator.url).call('actions.listRepoSecrets', { owner: 'acme', repo: 'api' })).status).toBe(200);

    const armed = await fetch(`${emulator.url}/_admin/fail-next`, { method: 'POST', body: JSON.stringify({ count: 2, status: 503 }) });
    expect(armed.status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await octokitError(octokit.call('actions.listRepoSecrets', repo))).status).toBe(503);
    expect((await octokit.call('actions.listRepoSecrets', repo)).status).toBe(200);
    expect((await fetch(`${emulator.url}/_admin/fail-next`, { method: 'POST', body: '{}' })).status).toBe(400);
  });

  it('starts from the command line with a repository and a token to use', async () => {
    let printed = '';
    const running = await runCli(['repohost', '--listen', '127.0.0.1:0'], { write: (t: string) => (printed += t) });
    try {
      const url = /baseUrl\): (\S+)/.exec(printed)?.[1] ?? '';
      const token = /token: +(\S+)/.exec(printed)?.[1];
      expect(printed).toContain('repository:    demo/app');
      const client = bridge.client(token, url);
      expect((await client.call('actions.getRepoPublicKey', { owner: 'demo', repo: 'app' })).status).toBe(200);
    } finally {
      await running?.stop();
    }
  });
});

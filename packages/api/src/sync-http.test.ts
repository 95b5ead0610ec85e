import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeVault = require('node-vault') as (opts: { endpoint: string; token?: string }) => any;

const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiHTTPSECRET01';
const TOKEN = 'ghp_HTTPTOKEN0abcdefghijklmnopqrstuvwxyz';
const CLIENT_SECRET = 'Cl1ent~HTTPSECRET.value';
const PRIVATE_KEY_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjHTTPKEYMATERIAL';
const CREDENTIALS = ['AKIAHTTPEXAMPLE00001', SECRET_KEY, TOKEN, CLIENT_SECRET, PRIVATE_KEY_BODY, 'HTTPSECRET', 'HTTPTOKEN', 'HTTPKEY'];

/** sys/sync/config and sys/sync/destinations through HTTP on a real server (a cluster of one). */
describe('secret sync over HTTP', () => {
  let t: TestServer;
  let root: string;
  const texts: string[] = [];
  const previousOrigins = process.env['STRONGROOM_CLOUD2_KV_ORIGINS'];

  beforeAll(async () => {
    // An operator setting, read when the server starts.
    process.env['STRONGROOM_CLOUD2_KV_ORIGINS'] = 'https://127.0.0.1:9443';
    t = await startTestServer();
    root = await initAndUnseal(t);
  }, 60_000);
  afterAll(async () => {
    if (previousOrigins === undefined) delete process.env['STRONGROOM_CLOUD2_KV_ORIGINS'];
    else process.env['STRONGROOM_CLOUD2_KV_ORIGINS'] = previousOrigins;
    await t?.stop();
  });

  async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const reply = await call(t.url, method, path, { token: root, headers, ...(body !== undefined ? { body } : {}) });
    texts.push(reply.text);
    return reply;
  }
  const patch = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    send('PATCH', path, body, { 'content-type': 'application/merge-patch+json', ...headers });

  it('reads and patches the sync config, in the root namespace only', async () => {
    expect((await send('GET', 'sys/sync/config')).json.data).toEqual({ disabled: false, queue_capacity: 1_000_000 });
    const patched = await patch('sys/sync/config', { disabled: true });
    expect(patched.status).toBe(200);
    expect(patched.json.data).toEqual({ disabled: true, queue_capacity: 1_000_000 });
    expect((await patch('sys/sync/config', { queue_capacity: 10 })).json.data).toEqual({ disabled: true, queue_capacity: 10 });
    const bad = await patch('sys/sync/config', { queue_capacity: -1 });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ errors: [expect.stringContaining('"queue_capacity"')] });
    expect((await send('POST', 'sys/sync/config', { disabled: false })).status).toBe(405);

    expect((await send('POST', 'sys/namespaces/team', {})).status).toBeLessThan(300);
    const inTeam = await send('GET', 'sys/sync/config', undefined, { 'x-vault-namespace': 'team' });
    expect(inTeam.status).toBe(400);
    expect((await patch('sys/sync/config', { disabled: false }, { 'x-vault-namespace': 'team' })).status).toBe(400);
    expect((await send('GET', 'sys/sync/config')).json.data).toEqual({ disabled: true, queue_capacity: 10 });
  });

  it('creates, reads, updates, lists and deletes destinations, credentials always obfuscated', async () => {
    const created = await send('POST', 'sys/sync/destinations/cloud1-sm/aws', {
      access_key_id: 'AKIAHTTPEXAMPLE00001', secret_access_key: SECRET_KEY, region: 'us-east-1', custom_tags: { team: 'web' },
    });
    expect(created.status).toBe(200);
    const read = await send('GET', 'sys/sync/destinations/cloud1-sm/aws');
    expect(read.status).toBe(200);
    expect(read.json.data).toEqual({
      name: 'aws', type: 'cloud1-sm',
      connection_details: { access_key_id: '*****', secret_access_key: '*****', region: 'us-east-1' },
      options: { granularity_level: 'secret-path', secret_name_template: 'vault/{{ .MountAccessor }}/{{ .SecretPath }}', custom_tags: { team: 'web' } },
    });
    expect(created.json.data).toEqual(read.json.data);

    expect((await send('POST', 'sys/sync/destinations/repohost/gh', { access_token: TOKEN, repository_owner: 'acme', repository_name: 'web' })).status).toBe(200);
    expect((await send('POST', 'sys/sync/destinations/repohost/gh', { repository_name: 'api', granularity: 'secret-key' })).status).toBe(200);
    expect((await send('GET', 'sys/sync/destinations/repohost/gh')).json.data.connection_details).toEqual({
      access_token: '*****', repository_owner: 'acme', repository_name: 'api', environment_name: '',
    });
    await send('POST', 'sys/sync/destinations/cloud2-kv/emu', {
      key_vault_uri: 'https://127.0.0.1:9443/', client_id: 'app-1', client_secret: CLIENT_SECRET, tenant_id: 'tenant-1',
    });
    const credentials = JSON.stringify({
      client_email: 'sync@p.iam.gserviceaccount.com', private_key: `-----BEGIN PRIVATE KEY-----\n${PRIVATE_KEY_BODY}\n-----END PRIVATE KEY-----\n`,
    });
    await send('POST', 'sys/sync/destinations/cloud3-sm/gcp', { credentials });
    await send('POST', 'sys/sync/destinations/deployhost-project/web', { access_token: TOKEN, project_id: 'prj_1', deployment_environments: 'production' });
    expect((await send('GET', 'sys/sync/destinations/deployhost-project/web')).json.data.connection_details).toEqual({
      access_token: '*****', project_id: 'prj_1', team_id: '', deployment_environments: ['production'],
    });

    const all = await send('LIST', 'sys/sync/destinations');
    expect(all.json.data).toEqual({
      keys: ['cloud1-sm/', 'cloud2-kv/', 'cloud3-sm/', 'deployhost-project/', 'repohost/'],
      key_info: { 'cloud1-sm/': ['aws'], 'cloud2-kv/': ['emu'], 'cloud3-sm/': ['gcp'], 'repohost/': ['gh'], 'deployhost-project/': ['web'] },
      total_destinations: 5,
    });
    const byType = await send('GET', 'sys/sync/destinations/repohost?list=true');
    expect(byType.json.data).toEqual({ keys: ['gh'], total_destinations: 1 });

    expect((await send('DELETE', 'sys/sync/destinations/repohost/gh?purge=true')).status).toBe(204);
    expect((await send('GET', 'sys/sync/destinations/repohost/gh')).status).toBe(404);
  });

  it('answers bad input with 400 and {"errors": [...]} naming the field and the rule', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['cloud9/x', {}, '"type"'],
      ['repohost/x', { access_token: TOKEN, repository_owner: 'acme' }, 'missing required field "repository_name"'],
      ['repohost/x', { access_token: TOKEN, repository_owner: 'acme', repository_name: 'web', region: 'us-east-1' }, '"region" is a field of destination type cloud1-sm'],
      ['cloud1-sm/x', { secret_name_template: '{{ .SecretPath | shout }}' }, '"secret_name_template": unknown filter'],
      ['cloud1-sm/x', { granularity: 'per-key' }, '"granularity"'],
      ['repohost/x', { access_token: TOKEN, repository_owner: 'acme', repository_name: 'web', custom_tags: { a: 'b' } }, '"custom_tags"'],
      ['cloud3-sm/x', { credentials: JSON.stringify({ private_key: PRIVATE_KEY_BODY }) }, '"client_email"'],
      ['cloud2-kv/x', { key_vault_uri: 'http://169.254.169.254/', client_id: 'a', client_secret: CLIENT_SECRET, tenant_id: 't' }, '"key_vault_uri"'],
      ['cloud1-sm/x', { access_key_id: 'AKIAHTTPEXAMPLE00001' }, '"secret_access_key"'],
    ];
    for (const [where, body, expected] of cases) {
      const reply = await send('POST', `sys/sync/destinations/${where}`, body);
      expect({ where, status: reply.status }).toEqual({ where, status: 400 });
      expect(reply.json).toEqual({ errors: [expect.stringContaining(expected)] });
    }
  });

  it('serves a Vault client (node-vault) and needs a token', async () => {
    const vault = nodeVault({ endpoint: t.url, token: root });
    await vault.write('sys/sync/destinations/repohost/nv', { access_token: TOKEN, repository_owner: 'acme', repository_name: 'nv' });
    const read = await vault.read('sys/sync/destinations/repohost/nv');
    texts.push(JSON.stringify(read));
    expect(read.data.connection_details.access_token).toBe('*****');
    expect(read.data.options.granularity_level).toBe('secret-key');
    await vault.delete('sys/sync/destinations/repohost/nv');
    expect((await call(t.url, 'GET', 'sys/sync/config')).status).toBe(403);
  });

  it('never shows a credential in any reply', () => {
    const all = texts.join('\n');
    expect(texts.length).toBeGreaterThan(20);
    for (const secret of CREDENTIALS) expect(all).not.toContain(secret);
  });
});

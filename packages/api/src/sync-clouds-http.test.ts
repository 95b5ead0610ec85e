import { startCloudEmulators, type CloudEmulators } from './test-support/cloud-emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';
import { eventually, operatorSettings } from './test-support/sync-support';

/**
 * Sync through HTTP on a real server to the cloud2-kv, cloud3-sm and repohost emulators, each
 * through its client (the vendors' SDKs; the repository host's SDK with sealed values).
 */
describe('secret sync to cloud2-kv, cloud3-sm and repohost over HTTP', () => {
  let t: TestServer;
  let root: string;
  let clouds: CloudEmulators;
  let accessor: string;
  const settings = operatorSettings();

  beforeAll(async () => {
    clouds = await startCloudEmulators(settings.set);
    t = await startTestServer();
    root = await initAndUnseal(t);
    accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await clouds?.close();
    settings.restore();
  });

  const send = (method: string, path: string, body?: unknown) => call(t.url, method, path, { token: root, ...(body !== undefined ? { body } : {}) });
  const statusOf = async (dest: string, key: string) => (await send('GET', `sys/sync/destinations/${dest}/associations`)).json.data.associated_secrets[key];

  it('syncs to cloud2-kv: versions per write, a delete purges so the name comes back, remove', async () => {
    const app = clouds.kv.addClient();
    expect((await send('POST', 'sys/sync/destinations/cloud2-kv/az', {
      key_vault_uri: clouds.kv.url, tenant_id: clouds.kv.tenantId, client_id: app.clientId, client_secret: app.clientSecret, custom_tags: { team: 'web' },
    })).status).toBe(200);
    const name = `vault-${accessor.replace(/_/g, '-')}-app-db`;
    const atKv = () => clouds.kv.secrets().find((s) => s.name === name);
    const latest = () => atKv()?.versions.at(-1)?.value;

    await send('POST', 'secret/data/app/db', { data: { password: 'one' } });
    expect((await send('POST', 'sys/sync/destinations/cloud2-kv/az/associations/set', { mount: 'secret', secret_name: 'app/db' })).status).toBe(200);
    await eventually('the first sync', latest, (v) => v === JSON.stringify({ password: 'one' }));
    expect(atKv()?.versions.at(-1)?.tags).toEqual({ team: 'web', 'strongroom-managed': 'true' });
    await eventually('SYNCED', () => statusOf('cloud2-kv/az', `${accessor}/app/db`), (a) => a?.sync_status === 'SYNCED');

    await send('POST', 'secret/data/app/db', { data: { password: 'two' } });
    await eventually('the update', latest, (v) => v === JSON.stringify({ password: 'two' }));
    expect(atKv()?.versions).toHaveLength(2);

    // A KV delete removes the secret for good (purged, not only soft-deleted): the undelete writes it anew.
    await send('DELETE', 'secret/data/app/db');
    await eventually('the delete and purge', atKv, (s) => s === undefined);
    expect((await send('POST', 'secret/undelete/app/db', { versions: [2] })).status).toBe(204);
    await eventually('the undelete', latest, (v) => v === JSON.stringify({ password: 'two' }));
    expect(atKv()).toMatchObject({ deleted: false, versions: [expect.anything()] });

    await send('POST', 'sys/sync/destinations/cloud2-kv/az/associations/remove', { mount: 'secret', secret_name: 'app/db' });
    await eventually('the unsync', atKv, (s) => s === undefined);
    expect((await send('DELETE', 'sys/sync/destinations/cloud2-kv/az')).status).toBe(204);
  });

  it('shows a cloud2-kv credential the directory refuses as a client-side error, the secret masked', async () => {
    const app = clouds.kv.addClient();
    const wrong = `${app.clientSecret}-wrong`;
    await send('POST', 'sys/sync/destinations/cloud2-kv/bad', { key_vault_uri: clouds.kv.url, tenant_id: clouds.kv.tenantId, client_id: app.clientId, client_secret: wrong });
    await send('POST', 'secret/data/bad', { data: { a: 'b' } });
    await send('POST', 'sys/sync/destinations/cloud2-kv/bad/associations/set', { mount: 'secret', secret_name: 'bad' });
    const failed = await eventually('the failure', () => statusOf('cloud2-kv/bad', `${accessor}/bad`), (a) => a?.sync_status.endsWith('_ERROR'));
    expect(failed).toMatchObject({ sync_status: 'CLIENT_SIDE_ERROR' });
    expect(failed.last_error).toMatch(/^cloud2-kv: /);
    expect(failed.last_error).not.toContain(wrong);
    // The right secret is taken up by the retries.
    await send('POST', 'sys/sync/destinations/cloud2-kv/bad', { client_secret: app.clientSecret });
    await send('POST', 'sys/sync/destinations/cloud2-kv/bad/associations/set', { mount: 'secret', secret_name: 'bad' });
    await eventually('SYNCED', () => statusOf('cloud2-kv/bad', `${accessor}/bad`), (a) => a?.sync_status === 'SYNCED');
    await send('DELETE', 'sys/sync/destinations/cloud2-kv/bad?purge=true');
  });

  it('purges a cloud2-kv destination: refused deletes leave it with purge_error, granted ones finish it', async () => {
    const app = clouds.kv.addClient({ permissions: ['get', 'list', 'set'] });
    await send('POST', 'sys/sync/destinations/cloud2-kv/purged', { key_vault_uri: clouds.kv.url, tenant_id: clouds.kv.tenantId, client_id: app.clientId, client_secret: app.clientSecret });
    const name = `vault-${accessor.replace(/_/g, '-')}-purged`;
    await send('POST', 'secret/data/purged', { data: { a: 'b' } });
    await send('POST', 'sys/sync/destinations/cloud2-kv/purged/associations/set', { mount: 'secret', secret_name: 'purged' });
    await eventually('the sync', () => clouds.kv.secrets().find((s) => s.name === name), (s) => s !== undefined);

    expect((await send('DELETE', 'sys/sync/destinations/cloud2-kv/purged?purge=true')).status).toBe(204);
    const held = await eventually('the purge error', () => send('GET', 'sys/sync/destinations/cloud2-kv/purged'), (r) => r.json.data?.purge_error !== '');
    expect(Date.parse(held.json.data.purge_initiated_at)).toBeGreaterThan(0);
    expect(held.json.data.purge_error).toMatch(/^unsyncing purged failed: cloud2-kv: Forbidden/);
    expect((await send('GET', 'sys/sync/destinations/cloud2-kv/purged/associations')).json.data.associated_secrets).toEqual({});
    expect(clouds.kv.secrets().find((s) => s.name === name)).toBeDefined();

    clouds.kv.addClient({ clientId: app.clientId, clientSecret: app.clientSecret });
    await eventually('the destination gone', () => send('GET', 'sys/sync/destinations/cloud2-kv/purged'), (r) => r.status === 404);
    expect(clouds.kv.secrets().find((s) => s.name === name)).toBeUndefined();
  }, 60_000);

  it('syncs to cloud3-sm: one version per KV version, delete, destroy, remove; a foreign key is refused', async () => {
    const account = clouds.sm.createServiceAccount('demo-project');
    expect((await send('POST', 'sys/sync/destinations/cloud3-sm/gcp', { credentials: JSON.stringify(account), custom_tags: { team: 'web' } })).status).toBe(200);
    const name = `projects/demo-project/secrets/vault_${accessor}_app_gcp`;
    const atSm = () => clouds.sm.secrets().find((s) => s.name === name);
    const values = () => (atSm()?.versions ?? []).map((v) => v.value);

    await send('POST', 'secret/data/app/gcp', { data: { password: 'one' } });
    await send('POST', 'sys/sync/destinations/cloud3-sm/gcp/associations/set', { mount: 'secret', secret_name: 'app/gcp' });
    await eventually('the first sync', values, (v) => v.includes(JSON.stringify({ password: 'one' })));
    expect(atSm()?.labels).toEqual({ team: 'web', 'strongroom-managed': 'true' });
    await send('POST', 'secret/data/app/gcp', { data: { password: 'two' } });
    await eventually('the second version', values, (v) => v.length === 2);
    expect(values().sort()).toEqual([JSON.stringify({ password: 'one' }), JSON.stringify({ password: 'two' })].sort());
    await eventually('SYNCED', () => statusOf('cloud3-sm/gcp', `${accessor}/app/gcp`), (a) => a?.sync_status === 'SYNCED');

    expect((await send('POST', 'secret/destroy/app/gcp', { versions: [2] })).status).toBe(204);
    await eventually('the destroy', atSm, (s) => s === undefined);
    await send('POST', 'secret/data/app/gcp', { data: { password: 'three' } });
    await eventually('the write after the destroy', values, (v) => v.length === 1 && v[0] === JSON.stringify({ password: 'three' }));
    await send('POST', 'sys/sync/destinations/cloud3-sm/gcp/associations/remove', { mount: 'secret', secret_name: 'app/gcp' });
    await eventually('the unsync', atSm, (s) => s === undefined);

    // A key of another project reaches nothing here.
    const other = clouds.sm.createServiceAccount('other-project');
    await send('POST', 'sys/sync/destinations/cloud3-sm/gcp', { credentials: JSON.stringify({ ...other, project_id: 'demo-project' }) });
    await send('POST', 'sys/sync/destinations/cloud3-sm/gcp/associations/set', { mount: 'secret', secret_name: 'app/gcp' });
    const failed = await eventually('the refusal', () => statusOf('cloud3-sm/gcp', `${accessor}/app/gcp`), (a) => a?.sync_status === 'CLIENT_SIDE_ERROR');
    expect(failed.last_error).toMatch(/^cloud3-sm: PERMISSION_DENIED/);
    expect(failed.last_error).not.toContain('PRIVATE KEY');
  });

  it('syncs each key to repohost sealed to the repository\'s key, and to an environment\'s', async () => {
    clouds.repohost.createRepository('acme/web');
    const token = clouds.repohost.addToken({ repositories: ['acme/web'] });
    expect((await send('POST', 'sys/sync/destinations/repohost/gh', { access_token: token, repository_owner: 'acme', repository_name: 'web' })).status).toBe(200);
    await send('POST', 'secret/data/ci', { data: { api_key: 'k1', 'db-url': 'postgres://x' } });
    await send('POST', 'sys/sync/destinations/repohost/gh/associations/set', { mount: 'secret', secret_name: 'ci' });
    await eventually('both keys, opened by the host', () => [clouds.repohost.secretValue('acme/web', 'API_KEY'), clouds.repohost.secretValue('acme/web', 'DB_URL')],
      (v) => v[0] === 'k1' && v[1] === 'postgres://x');

    // A rotated key: the client reads the new one and seals again.
    clouds.repohost.rotatePublicKey('acme/web');
    await send('POST', 'secret/data/ci', { data: { api_key: 'k2' } });
    await eventually('the update, the dropped key removed', () => [clouds.repohost.secretValue('acme/web', 'API_KEY'), clouds.repohost.secretValue('acme/web', 'DB_URL')],
      (v) => v[0] === 'k2' && v[1] === undefined);
    await send('POST', 'sys/sync/destinations/repohost/gh/associations/remove', { mount: 'secret', secret_name: 'ci' });
    await eventually('the unsync', () => clouds.repohost.secretValue('acme/web', 'API_KEY'), (v) => v === undefined);

    const made = await fetch(`${clouds.repohost.url}/repos/acme/web/environments/production`, { method: 'PUT', headers: { authorization: `token ${token}`, 'user-agent': 'test' } });
    expect(made.status).toBe(200);
    expect((await send('POST', 'sys/sync/destinations/repohost/gh-prod', {
      access_token: token, repository_owner: 'acme', repository_name: 'web', environment_name: 'production',
    })).status).toBe(200);
    await send('POST', 'sys/sync/destinations/repohost/gh-prod/associations/set', { mount: 'secret', secret_name: 'ci' });
    await eventually('the environment\'s secret', () => clouds.repohost.secretValue('acme/web', 'API_KEY', 'production'), (v) => v === 'k2');
    expect(clouds.repohost.secretValue('acme/web', 'API_KEY')).toBeUndefined();
  });
});

import { Cloud1Emulator, DeployhostProjectEmulator } from '@strongroom/emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';
import { eventually, operatorSettings } from './test-support/sync-support';

/**
 * Associations through HTTP on a real server with the destination emulators: a KV v2 write,
 * update and delete reach each destination, and removing the association removes the secret there.
 */
describe('secret sync associations over HTTP', () => {
  let t: TestServer;
  let root: string;
  let cloud1: Cloud1Emulator;
  let deployhost: DeployhostProjectEmulator;
  const settings = operatorSettings();
  const env = settings.set;

  beforeAll(async () => {
    cloud1 = new Cloud1Emulator();
    const { api } = await cloud1.start({ listen: '127.0.0.1:0' });
    deployhost = await DeployhostProjectEmulator.start();
    // Operator settings, read when the server starts.
    env('AWS_ENDPOINT_URL_SECRETS_MANAGER', api);
    env('STRONGROOM_DEPLOYHOST_API_URL', deployhost.url);
    t = await startTestServer();
    root = await initAndUnseal(t);
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await cloud1?.stop();
    await deployhost?.close();
    settings.restore();
  });

  const send = (method: string, path: string, body?: unknown) => call(t.url, method, path, { token: root, ...(body !== undefined ? { body } : {}) });

  it('syncs a KV secret to cloud1-sm: associate, update, delete, remove', async () => {
    const { accountId } = cloud1.createAccount({});
    const keys = cloud1.issueRootCredentials(accountId);
    const created = await send('POST', 'sys/sync/destinations/cloud1-sm/aws', {
      access_key_id: keys.accessKeyId, secret_access_key: keys.secretAccessKey, region: 'us-east-1', custom_tags: { team: 'web' },
    });
    expect(created.status).toBe(200);
    const accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
    const name = `vault/${accessor}/app/db`;
    const atCloud1 = () => cloud1.secretsManagerSecrets().find((s) => s.name === name);
    const current = () => atCloud1()?.versions.find((v) => v.stages.includes('AWSCURRENT'))?.secretString;

    expect((await send('POST', 'secret/data/app/db', { data: { password: 'one' } })).status).toBe(200);
    const set = await send('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'secret', secret_name: 'app/db' });
    expect(set.status).toBe(200);
    expect(set.json.data.associated_secrets[`${accessor}/app/db`]).toMatchObject({ accessor, secret_name: 'app/db', store_name: 'aws', store_type: 'cloud1-sm' });
    await eventually('the first sync', current, (v) => v === JSON.stringify({ password: 'one' }));
    expect(atCloud1()?.tags).toMatchObject({ team: 'web', 'strongroom-managed': 'true' });
    const view = await eventually('SYNCED', () => send('GET', 'sys/sync/destinations/cloud1-sm/aws/associations'),
      (r) => r.json.data.associated_secrets[`${accessor}/app/db`]?.sync_status === 'SYNCED');
    expect(Date.parse(view.json.data.associated_secrets[`${accessor}/app/db`].updated_at)).toBeGreaterThan(0);

    await send('POST', 'secret/data/app/db', { data: { password: 'two' } });
    await eventually('the update', current, (v) => v === JSON.stringify({ password: 'two' }));
    // One external version per KV version.
    expect(atCloud1()?.versions).toHaveLength(2);

    const bySecret = await send('GET', 'sys/sync/associations/destinations?mount=secret&secret_name=app/db');
    expect(Object.keys(bySecret.json.data.associated_destinations)).toEqual(['cloud1-sm/aws']);
    expect((await send('GET', 'sys/sync/associations/secret/app/db')).json.data).toEqual(bySecret.json.data);
    const list = await send('LIST', 'sys/sync/associations');
    expect(list.json.data).toMatchObject({ total_associations: 1, total_secrets: 1, key_info: { [`${accessor}/`]: ['app/db'] } });
    // The destination cannot go while it manages the association.
    expect((await send('DELETE', 'sys/sync/destinations/cloud1-sm/aws')).status).toBe(400);

    await send('DELETE', 'secret/data/app/db');
    await eventually('the delete', atCloud1, (s) => s === undefined);
    await send('POST', 'secret/data/app/db', { data: { password: 'three' } });
    await eventually('the write after the delete', current, (v) => v === JSON.stringify({ password: 'three' }));

    const removed = await send('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/remove', { mount: 'secret', secret_name: 'app/db' });
    expect(removed.status).toBe(200);
    expect(removed.json.data.associated_secrets).toEqual({});
    await eventually('the unsync', atCloud1, (s) => s === undefined);
    // Removing again is a success.
    expect((await send('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/remove', { mount: 'secret', secret_name: 'app/db' })).status).toBe(200);
    expect((await send('DELETE', 'sys/sync/destinations/cloud1-sm/aws')).status).toBe(204);
  });

  it('syncs each key to deployhost-project as its own variable', async () => {
    const { token } = deployhost.createToken({ teams: ['team_a'] });
    const project = deployhost.createProject({ name: 'web', teamId: 'team_a' });
    expect((await send('POST', 'sys/sync/destinations/deployhost-project/vc', {
      access_token: token, project_id: project.id, team_id: 'team_a', deployment_environments: ['production', 'preview'],
    })).status).toBe(200);
    // The admin view of a team's project (`envs` finds personal projects only).
    const envs = () => deployhost.projects().find((p) => p.id === project.id)?.envs ?? [];
    const vars = () => Object.fromEntries(envs().map((e) => [e.key, e.value]));

    await send('POST', 'secret/data/web', { data: { api_key: 'k1', 'db-url': 'postgres://x' } });
    expect((await send('POST', 'sys/sync/destinations/deployhost-project/vc/associations/set', { mount: 'secret', secret_name: 'web' })).status).toBe(200);
    await eventually('both keys', vars, (v) => v['API_KEY'] === 'k1' && v['DB_URL'] === 'postgres://x');
    expect(envs().find((e) => e.key === 'API_KEY')?.target.sort()).toEqual(['preview', 'production']);
    const view = await eventually('SYNCED per key', () => send('GET', 'sys/sync/destinations/deployhost-project/vc/associations'),
      (r) => Object.values(r.json.data.associated_secrets as Record<string, { sync_status: string }>).every((a) => a.sync_status === 'SYNCED'));
    const accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
    expect(Object.keys(view.json.data.associated_secrets).sort()).toEqual([`${accessor}/web/api_key`, `${accessor}/web/db-url`]);
    expect(view.json.data.associated_secrets[`${accessor}/web/api_key`].sub_key).toBe('api_key');

    await send('POST', 'secret/data/web', { data: { api_key: 'k2' } });
    await eventually('the update, the dropped key removed', vars, (v) => v['API_KEY'] === 'k2' && !('DB_URL' in v));
    await send('POST', 'sys/sync/destinations/deployhost-project/vc/associations/remove', { mount: 'secret', secret_name: 'web' });
    await eventually('the unsync', vars, (v) => Object.keys(v).length === 0);
  });

  it('refuses what is not a KV v2 secret, naming the field', async () => {
    await send('POST', 'sys/mounts/v1', { type: 'kv', options: { version: '1' } });
    await send('POST', 'sys/sync/destinations/deployhost-project/vc2', {
      access_token: 'dh_token_x', project_id: 'prj_x', deployment_environments: ['production'],
    });
    const set = (body: unknown) => send('POST', 'sys/sync/destinations/deployhost-project/vc2/associations/set', body);
    for (const [body, field] of [
      [{ mount: 'v1', secret_name: 'a' }, 'mount'],
      [{ mount: 'nowhere', secret_name: 'a' }, 'mount'],
      [{ secret_name: 'a' }, 'mount'],
      [{ mount: 'secret' }, 'secret_name'],
      [{ mount: 'secret', secret_name: '../a' }, 'secret_name'],
    ] as const) {
      const r = await set(body);
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), 400]);
      expect(r.json.errors[0]).toContain(`"${field}"`);
    }
    const missing = await send('POST', 'sys/sync/destinations/deployhost-project/nope/associations/set', { mount: 'secret', secret_name: 'a' });
    expect(missing.status).toBe(400);
  });
});

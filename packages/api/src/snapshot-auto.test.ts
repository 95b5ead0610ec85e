import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFauxqs, type RunningEmulator } from '../../snapshots/src/test-support/emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** sys/storage/raft/snapshot-auto through HTTP on a real server (a cluster of one). */
describe('automated snapshots', () => {
  let t: TestServer;
  let root: string;
  let dir: string;
  let s3: RunningEmulator;
  const BASE = 'sys/storage/raft/snapshot-auto';

  beforeAll(async () => {
    [t, s3] = await Promise.all([startTestServer(), startFauxqs()]);
    root = await initAndUnseal(t);
    dir = mkdtempSync(join(tmpdir(), 'auto-snapshots-'));
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([t?.stop(), s3?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const put = (path: string, body: unknown, token = root) => call(t.url, 'POST', path, { token, body });
  const get = (path: string, token = root) => call(t.url, 'GET', path, { token });

  async function waitForSnapshot(name: string, after = ''): Promise<Record<string, unknown>> {
    return until(`a snapshot by ${name}`, 15_000, async () => {
      const s = await get(`${BASE}/status/${name}`);
      const d = s.json.data as Record<string, unknown>;
      return d['last_snapshot_url'] && d['last_snapshot_url'] !== after && d['snapshot_url'] === '' ? d : undefined;
    });
  }

  it('needs sudo for the configurations; a token without it is refused', async () => {
    await put('sys/policies/acl/no-sudo', { policy: 'path "sys/storage/raft/snapshot-auto/*" { capabilities = ["create", "read", "update", "delete", "list"] }' });
    await put('sys/policies/acl/with-sudo', { policy: 'path "sys/storage/raft/snapshot-auto/*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }' });
    const plain = (await put('auth/token/create', { policies: ['no-sudo'] })).json.auth.client_token as string;
    const sudo = (await put('auth/token/create', { policies: ['with-sudo'] })).json.auth.client_token as string;
    const body = { interval: 3600, path_prefix: join(dir, 'sudo'), storage_type: 'local', local_max_space: 1_000_000 };
    expect((await put(`${BASE}/config/s`, body, plain)).status).toBe(403);
    expect((await call(t.url, 'LIST', `${BASE}/config`, { token: plain })).status).toBe(403);
    expect((await put(`${BASE}/config/s`, body, sudo)).status).toBe(204);
    expect((await get(`${BASE}/config/s`, plain)).status).toBe(403);
    expect((await get(`${BASE}/config/s`, sudo)).status).toBe(200);
    expect((await call(t.url, 'DELETE', `${BASE}/config/s`, { token: plain })).status).toBe(403);
    expect((await call(t.url, 'DELETE', `${BASE}/config/s`, { token: sudo })).status).toBe(204);
  });

  it('stores a configuration with its defaults, reads it back with interval in seconds, lists it and deletes it', async () => {
    expect((await put(`${BASE}/config/daily`, { interval: '24h', path_prefix: join(dir, 'daily'), storage_type: 'local', local_max_space: '5000000' })).status).toBe(204);
    const read = await get(`${BASE}/config/daily`);
    expect(read.json.data).toEqual({
      interval: 86400, retain: 1, path_prefix: join(dir, 'daily'), file_prefix: 'service-snapshot', storage_type: 'local', local_max_space: 5_000_000,
    });
    // An update changes only what it names.
    expect((await put(`${BASE}/config/daily`, { retain: '7' })).status).toBe(204);
    expect((await get(`${BASE}/config/daily`)).json.data).toMatchObject({ interval: 86400, retain: 7, local_max_space: 5_000_000 });
    const status = await get(`${BASE}/status/daily`);
    expect(status.json.data).toMatchObject({
      consecutive_errors: 0, last_snapshot_error: '', last_snapshot_url: '', snapshot_url: '', last_snapshot_start: '0001-01-01T00:00:00Z',
      snapshot_start: '0001-01-01T00:00:00Z',
    });
    expect(Date.parse(status.json.data.next_snapshot_start as string) - Date.now()).toBeGreaterThan(86_000_000);
    const list = await call(t.url, 'LIST', `${BASE}/config`, { token: root });
    expect(list.json.data.keys).toEqual(['daily']);
    expect((await call(t.url, 'DELETE', `${BASE}/config/daily`, { token: root })).status).toBe(204);
    expect((await get(`${BASE}/config/daily`)).status).toBe(404);
    expect((await get(`${BASE}/status/daily`)).status).toBe(404);
  });

  it.each([
    [{ path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1 }, /missing required field "interval"/],
    [{ interval: '1x', path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1 }, /"interval"/],
    [{ interval: 0, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1 }, /"interval"/],
    [{ interval: 60, storage_type: 'local', local_max_space: 1 }, /missing required field "path_prefix"/],
    [{ interval: 60, path_prefix: '/tmp/x', local_max_space: 1 }, /missing required field "storage_type"/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'aws-s3' }, /"storage_type": must be one of local, cloud1-objstore/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'local' }, /missing required field "local_max_space"/],
    [{ interval: 60, path_prefix: 'relative', storage_type: 'local', local_max_space: 1 }, /absolute directory/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1, retain: 0 }, /"retain"/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1, file_prefix: 'a/b' }, /"file_prefix"/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1, cloud1_objstore_bucket: 'b' }, /"cloud1_objstore_bucket" belongs to storage_type cloud1-objstore/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud1-objstore', cloud1_objstore_region: 'r' }, /"cloud1_objstore_bucket"/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'b', cloud1_objstore_region: 'r', cloud1_access_key_id: 'AK' }, /together/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'b', cloud1_objstore_region: 'r', cloud1_objstore_enable_kms: true, cloud1_objstore_server_side_encryption: true }, /cannot be used with/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'b', cloud1_objstore_region: 'r', cloud1_objstore_kms_key: 'k' }, /only with cloud1_objstore_enable_kms/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'b', cloud1_objstore_region: 'r', cloud1_objstore_endpoint: 'http://127.0.0.1:1' }, /cloud1_objstore_disable_tls/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'a', cloud2_account_key: 'a2V5' }, /must end with "\/"/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c' }, /"cloud2_account_name"/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'acct1', cloud2_account_key: 'a2V5', cloud2_blob_environment: 'Mars' }, /"cloud2_blob_environment"/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'evil.com/x?', cloud2_account_key: 'a2V5' }, /"cloud2_account_name"/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'acct1', cloud2_account_key: 'a2V5', cloud2_endpoint: 'http://blob.example.com/acct1' }, /loopback/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'acct1', cloud2_account_key: 'a2V5', cloud2_endpoint: 'https://blob.example.com/?sig=abc' }, /user info, a query or a fragment/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud2-blob', cloud2_container_name: 'c1c', cloud2_account_name: 'acct1', cloud2_account_key: 'a2V5', cloud2_endpoint: 'https://blob.example.com', cloud2_blob_environment: 'AzureChinaCloud' }, /give one/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'b', cloud1_objstore_region: 'r', cloud1_objstore_endpoint: 'https://user:pass@s3.example.com' }, /user info/],
    [{ interval: 1.5, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1 }, /whole number/],
    [{ interval: '99999999999999', path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1 }, /at most 315360000 seconds/],
    [{ interval: 60, path_prefix: '/tmp/x', storage_type: 'local', local_max_space: 1, file_prefix: 'x'.repeat(101) }, /"file_prefix"/],
    [{ interval: 60, path_prefix: '/tmp/x\nnewline', storage_type: 'local', local_max_space: 1 }, /control characters/],
    [{ interval: 60, path_prefix: 'p', storage_type: 'cloud3-objstore', cloud3_bucket: 'b' }, /must end with "\/"/],
    [{ interval: 60, path_prefix: 'p/', storage_type: 'cloud3-objstore', cloud3_bucket: 'b', cloud3_service_account_key: '{"nope":1}' }, /client_email/],
  ])('refuses %j with a 400 naming the field, and stores nothing', async (body, message) => {
    const r = await put(`${BASE}/config/bad`, body);
    expect(r.status).toBe(400);
    expect((r.json.errors as string[]).join(' ')).toMatch(message);
    expect((await get(`${BASE}/config/bad`)).status).toBe(404);
  });

  it('refuses a second configuration writing the same files as another', async () => {
    const body = { interval: 3600, path_prefix: join(dir, 'shared'), storage_type: 'local', local_max_space: 1000 };
    expect((await put(`${BASE}/config/one`, body)).status).toBe(204);
    const two = await put(`${BASE}/config/two`, { ...body, path_prefix: `${join(dir, 'shared')}/` });
    expect(two.status).toBe(400);
    expect(two.json.errors.join(' ')).toMatch(/configuration "one" already writes/);
    expect((await put(`${BASE}/config/two`, { ...body, file_prefix: 'other' })).status).toBe(204);
    for (const n of ['one', 'two']) await call(t.url, 'DELETE', `${BASE}/config/${n}`, { token: root });
  });

  it('refuses a change of storage type that leaves out the new type\'s required fields, keeping the old configuration', async () => {
    await put(`${BASE}/config/switch`, { interval: 3600, path_prefix: join(dir, 'switch'), storage_type: 'local', local_max_space: 1000 });
    const r = await put(`${BASE}/config/switch`, { storage_type: 'cloud3-objstore', path_prefix: 'p/' });
    expect(r.status).toBe(400);
    expect(r.json.errors.join(' ')).toMatch(/"cloud3_bucket"/);
    expect((await get(`${BASE}/config/switch`)).json.data.storage_type).toBe('local');
    const ok = await put(`${BASE}/config/switch`, { storage_type: 'cloud3-objstore', path_prefix: 'p/', cloud3_bucket: 'b' });
    expect(ok.status).toBe(204);
    const read = (await get(`${BASE}/config/switch`)).json.data;
    expect(read).toMatchObject({ storage_type: 'cloud3-objstore', cloud3_bucket: 'b', interval: 3600 });
    expect(read).not.toHaveProperty('local_max_space');
    await call(t.url, 'DELETE', `${BASE}/config/switch`, { token: root });
  });

  it('writes local snapshots on schedule, keeps `retain`, and a scheduled snapshot restores the data it held', async () => {
    await put('secret/data/app', { data: { v: 'in the snapshot' } });
    const snaps = join(dir, 'local');
    expect((await put(`${BASE}/config/local`, { interval: 1, retain: 2, path_prefix: snaps, storage_type: 'local', local_max_space: 100_000_000 })).status).toBe(204);
    let status = await waitForSnapshot('local');
    const first = status['last_snapshot_url'] as string;
    expect(first).toMatch(/^file:\/\/.*\/service-snapshot-\d{19}\.snap$/);
    for (let i = 0; i < 2; i++) status = await waitForSnapshot('local', status['last_snapshot_url'] as string);
    expect(readdirSync(snaps).filter((f) => f.endsWith('.snap'))).toHaveLength(2);
    expect(readdirSync(snaps).filter((f) => f.startsWith('.'))).toEqual([]);
    expect(status['consecutive_errors']).toBe(0);
    await call(t.url, 'DELETE', `${BASE}/config/local`, { token: root });

    const file = fileURLToPath(status['last_snapshot_url'] as string);
    await put('secret/data/app', { data: { v: 'after the snapshot' } });
    const restored = await call(t.url, 'POST', 'sys/storage/raft/snapshot', {
      token: root, raw: readFileSync(file) as unknown as string, headers: { 'content-type': 'application/octet-stream' },
    });
    expect(restored.status).toBe(204);
    const value = await until('reads after the restore', 15_000, async () => {
      const r = await get('secret/data/app');
      return r.status === 200 ? r.json.data.data.v as string : undefined;
    });
    expect(value).toBe('in the snapshot');
  });

  it('uploads to the S3-API store, shows the object in status, and hides credentials on read', async () => {
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: 't', secretAccessKey: 't' } });
    await client.send(new CreateBucketCommand({ Bucket: 'auto' }));
    const body = {
      interval: '1s', retain: 1, path_prefix: 'cluster-a/', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'auto',
      cloud1_objstore_region: 'us-east-1', cloud1_objstore_endpoint: s3.url, cloud1_objstore_disable_tls: true,
      cloud1_objstore_force_path_style: true, cloud1_access_key_id: 'AKIDEXAMPLE', cloud1_secret_access_key: 'very-secret-key',
      cloud1_session_token: 'very-secret-session',
    };
    expect((await put(`${BASE}/config/s3`, body)).status).toBe(204);
    const read = await get(`${BASE}/config/s3`);
    expect(read.json.data).toMatchObject({ cloud1_access_key_id: 'AKIDEXAMPLE', cloud1_objstore_bucket: 'auto' });
    expect(read.text).not.toMatch(/very-secret/);
    const status = await waitForSnapshot('s3');
    await call(t.url, 'DELETE', `${BASE}/config/s3`, { token: root });
    const url = status['last_snapshot_url'] as string;
    expect(url).toMatch(new RegExp(`^${s3.url}/auto/cluster-a/service-snapshot-\\d{19}\\.snap$`));
    const key = url.slice(`${s3.url}/auto/`.length);
    const object = await client.send(new GetObjectCommand({ Bucket: 'auto', Key: key }));
    const bytes = Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
    expect(bytes.length).toBe(status['last_snapshot_size']);
    // The same format as sys/storage/raft/snapshot returns.
    const direct = await fetch(`${t.url}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': root } });
    const head = Buffer.from(await direct.arrayBuffer()).subarray(0, 8);
    expect(bytes.subarray(0, 8)).toEqual(head);
    client.destroy();
  });

  it('shows a failing destination in status, and keeps running the other configurations', async () => {
    const body = {
      interval: 1, path_prefix: 'p', storage_type: 'cloud1-objstore', cloud1_objstore_bucket: 'no-such-bucket', cloud1_objstore_region: 'us-east-1',
      cloud1_objstore_endpoint: s3.url, cloud1_objstore_disable_tls: true, cloud1_objstore_force_path_style: true,
      cloud1_access_key_id: 'AKIDEXAMPLE', cloud1_secret_access_key: 'another-secret-key',
    };
    expect((await put(`${BASE}/config/failing`, body)).status).toBe(204);
    expect((await put(`${BASE}/config/working`, { interval: 1, path_prefix: join(dir, 'working'), storage_type: 'local', local_max_space: 100_000_000 })).status).toBe(204);
    const failing = await until('two failed attempts', 15_000, async () => {
      const s = (await get(`${BASE}/status/failing`)).json.data;
      return s.consecutive_errors >= 2 ? s : undefined;
    });
    expect(failing.last_snapshot_error).toMatch(/bucket/i);
    expect(JSON.stringify(failing)).not.toMatch(/another-secret-key/);
    await waitForSnapshot('working');
    await call(t.url, 'DELETE', `${BASE}/config/failing`, { token: root });
    await call(t.url, 'DELETE', `${BASE}/config/working`, { token: root });
  });
});

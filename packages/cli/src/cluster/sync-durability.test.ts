import { Cloud1Emulator } from '@strongroom/emulators';
import type { NodeHandle } from '../cluster-launcher';
import { api, launchTestCluster, startAndUnseal, until, type TestCluster } from './test-support/cluster-fixture';

/**
 * Secret sync's durability with real server processes: work queued while the destination is
 * down survives a SIGKILL of the active node and is done by the next one exactly once in effect
 * (one external version per KV version it writes), and `disabled` holds new work as PENDING
 * until re-enabling drains it.
 */

// Ports 25800-25821 for the cluster, 25890 for the cloud1 emulator (its restart needs the same port).
const BASE_PORT = 25800;
const EMULATOR = '127.0.0.1:25890';

jest.setTimeout(180_000);

let tc: TestCluster | undefined;
const cloud1 = new Cloud1Emulator();

beforeAll(async () => {
  await cloud1.start({ listen: EMULATOR });
  // An operator setting of the server processes: where cloud1-sm destinations are reached.
  tc = await launchTestCluster('sync-durability', { nodes: 3, basePort: BASE_PORT, env: { AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://${EMULATOR}` } });
}, 120_000);

afterAll(async () => {
  await tc?.destroy();
  await cloud1.stop();
});

function cluster() {
  if (!tc) throw new Error('the cluster did not start (see beforeAll)');
  return tc.cluster;
}

async function active(): Promise<NodeHandle> {
  return cluster().waitActive(60_000);
}

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const n = await active();
  if (method === 'PATCH') {
    const res = await fetch(`${n.apiAddr}/v1/${path}`, {
      method, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000),
      headers: { 'x-vault-token': cluster().rootToken, 'content-type': 'application/merge-patch+json' },
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  }
  return api(n.apiAddr, method, path, { token: cluster().rootToken, ...(body !== undefined ? { body } : {}) });
}

async function ok(method: string, path: string, body?: unknown): Promise<void> {
  const r = await send(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}\n${tc?.logs(20)}`);
}

const value = (v: string) => JSON.stringify({ password: v });

describe('secret sync across a crash of the active node', () => {
  let accessor = '';
  const external = (secret: string) => cloud1.secretsManagerSecrets().find((s) => s.name === `vault/${accessor}/${secret}`);
  const versions = (secret: string) => (external(secret)?.versions ?? []).map((v) => v.secretString);
  const current = (secret: string) => external(secret)?.versions.find((v) => v.stages.includes('AWSCURRENT'))?.secretString;
  const statuses = async (): Promise<Record<string, string>> => {
    const r = await send('GET', 'sys/sync/destinations/cloud1-sm/aws/associations');
    return Object.fromEntries(Object.entries(r.json.data.associated_secrets as Record<string, { sync_status: string }>).map(([k, a]) => [k.slice(accessor.length + 1), a.sync_status]));
  };

  it('does queued work exactly once after a SIGKILL of the active node with the destination down', async () => {
    const { accountId } = cloud1.createAccount({});
    const keys = cloud1.issueRootCredentials(accountId);
    await ok('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
    await ok('POST', 'sys/sync/destinations/cloud1-sm/aws', { access_key_id: keys.accessKeyId, secret_access_key: keys.secretAccessKey, region: 'us-east-1' });
    await ok('POST', 'secret/data/a', { data: { password: 'a1' } });
    await ok('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'secret', secret_name: 'a' });
    await until('the first sync', 30_000, async () => (current('a') === value('a1') ? true : undefined), 100);

    // The destination goes down; work piles up on the queue, retrying.
    await cloud1.stop();
    for (const v of ['a2', 'a3', 'a4']) await ok('POST', 'secret/data/a', { data: { password: v } });
    await ok('POST', 'secret/data/b', { data: { password: 'b1' } });
    await ok('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'secret', secret_name: 'b' });
    await ok('POST', 'secret/data/b', { data: { password: 'b2' } });
    await until('both failing at the destination', 60_000, async () => {
      const s = await statuses();
      return s['a'] === 'EXTERNAL_SERVICE_ERROR' && s['b'] === 'EXTERNAL_SERVICE_ERROR' ? true : undefined;
    }, 200);

    // A crash of the active node, then the destination comes back.
    const leader = await active();
    await cluster().kill(leader, 'SIGKILL');
    await cloud1.start({ listen: EMULATOR });
    const next = await active();
    expect(next.id).not.toBe(leader.id);
    await startAndUnseal(cluster(), leader);

    // Retries back off to at most 30 s.
    await until('every association synced', 90_000, async () => {
      const s = await statuses();
      return s['a'] === 'SYNCED' && s['b'] === 'SYNCED' ? true : undefined;
    }, 500);
    expect(current('a')).toBe(value('a4'));
    expect(current('b')).toBe(value('b2'));
    // Last write wins: the versions written while it was down become the latest one, written once.
    expect(versions('a')).toEqual([value('a1'), value('a4')]);
    expect(versions('b')).toEqual([value('b2')]);
  });

  it('holds new work as PENDING while disabled, and drains it in order once re-enabled', async () => {
    await ok('PATCH', 'sys/sync/config', { disabled: true });
    await ok('POST', 'secret/data/a', { data: { password: 'a5' } });
    await ok('POST', 'secret/data/c', { data: { password: 'c1' } });
    await ok('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'secret', secret_name: 'c' });
    await ok('POST', 'secret/data/a', { data: { password: 'a6' } });
    await until('the work PENDING', 30_000, async () => {
      const s = await statuses();
      return s['a'] === 'PENDING' && s['c'] === 'PENDING' ? true : undefined;
    }, 200);
    // However long it waits (past the first retry's backoff), nothing reaches the destination.
    await new Promise((r) => setTimeout(r, 3000));
    expect(versions('a')).toEqual([value('a1'), value('a4')]);
    expect(external('c')).toBeUndefined();
    expect(await statuses()).toEqual({ a: 'PENDING', b: 'SYNCED', c: 'PENDING' });

    await ok('PATCH', 'sys/sync/config', { disabled: false });
    await until('the queue drained', 60_000, async () => {
      const s = await statuses();
      return Object.values(s).every((x) => x === 'SYNCED') ? true : undefined;
    }, 200);
    expect(versions('a')).toEqual([value('a1'), value('a4'), value('a6')]);
    expect(versions('c')).toEqual([value('c1')]);
  });
});

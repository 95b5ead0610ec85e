import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { api, runCli, until } from './test-support/cluster-fixture';

/**
 * A fourth server holds the transit key; three servers with `seal "transit"` and `retry_join`
 * become an unsealed cluster from their start and one `operator init`, with no other step. After
 * SIGKILL and restart every node unseals itself, and the seal migrates to Shamir and back with
 * `operator unseal -migrate`, keeping the data.
 */

const BASE_PORT = 25300; // 25300-25339
const BIN = resolve(__dirname, '../../bin/strongroom.js');
const TICK_MS = 50;

jest.setTimeout(300_000);

interface Node { id: string; apiAddr: string; dir: string; child: ChildProcess | null }

let root: string;
const unsealer: Node = { id: 'unsealer', apiAddr: `http://127.0.0.1:${BASE_PORT}`, dir: '', child: null };
const nodes: Node[] = [1, 2, 3].map((i) => ({ id: `node${i}`, apiAddr: `http://127.0.0.1:${BASE_PORT + 10 * i}`, dir: '', child: null }));
const [node1] = nodes as [Node, Node, Node];
let unsealerToken = '';
let rootToken = '';
let recoveryKey = '';

type SealMode = 'transit' | 'transit-disabled' | 'none';

function writeConfig(n: Node, seal: SealMode): void {
  const apiPort = Number(new URL(n.apiAddr).port);
  const lines = [
    'storage "raft" {',
    `  path    = "${join(n.dir, 'data')}"`,
    `  node_id = "${n.id}"`,
    ...(n === unsealer ? [] : ['  retry_join {', `    leader_api_addr = "${node1.apiAddr}"`, '  }']),
    '}',
    'listener "tcp" {',
    `  address         = "127.0.0.1:${apiPort}"`,
    `  cluster_address = "127.0.0.1:${apiPort + 1}"`,
    '  tls_disable     = true',
    '}',
    `api_addr     = "${n.apiAddr}"`,
    `cluster_addr = "https://127.0.0.1:${apiPort + 1}"`,
  ];
  if (seal !== 'none') {
    lines.push(
      'seal "transit" {',
      `  address    = "${unsealer.apiAddr}"`,
      `  token      = "${unsealerToken}"`,
      '  key_name   = "autounseal"',
      '  mount_path = "transit/"',
      ...(seal === 'transit-disabled' ? ['  disabled   = "true"'] : []),
      '}',
    );
  }
  writeFileSync(join(n.dir, 'server.hcl'), `${lines.join('\n')}\n`);
}

async function start(n: Node): Promise<void> {
  const log = openSync(join(n.dir, 'server.log'), 'a');
  const env: NodeJS.ProcessEnv = { ...process.env, STRONGROOM_RAFT_TICK_MS: String(TICK_MS) };
  for (const name of Object.keys(env)) if (name.startsWith('VAULT_')) delete env[name];
  const child = spawn(process.execPath, [BIN, 'server', '--config', join(n.dir, 'server.hcl')], { stdio: ['ignore', log, log], env });
  closeSync(log);
  n.child = child;
  child.on('exit', () => {
    if (n.child === child) n.child = null;
  });
  await until(`${n.id} to answer`, 60_000, async () => ((await api(n.apiAddr, 'GET', 'sys/seal-status')).status === 200 ? true : undefined));
}

function stop(n: Node, signal: NodeJS.Signals): Promise<void> {
  const child = n.child;
  if (!child) return Promise.resolve();
  return new Promise((r) => {
    child.once('exit', () => r());
    child.kill(signal);
  });
}

function logOf(n: Node): string {
  return readFileSync(join(n.dir, 'server.log'), 'utf8');
}

async function sealStatus(n: Node): Promise<Record<string, unknown>> {
  return (await api(n.apiAddr, 'GET', 'sys/seal-status')).json as Record<string, unknown>;
}

async function allUnsealed(what: string): Promise<void> {
  await until(what, 120_000, async () => {
    const states = await Promise.all(nodes.map(async (n) => (await sealStatus(n)).sealed === false));
    return states.every(Boolean) ? true : undefined;
  });
}

async function threeHealthyVoters(): Promise<void> {
  await until('three healthy voters', 120_000, async () => {
    for (const n of nodes) {
      const r = await api(n.apiAddr, 'GET', 'sys/storage/raft/autopilot/state', { token: rootToken });
      if (r.status !== 200) continue;
      const s = r.json.data as { voters: string[]; healthy: boolean };
      return s.healthy && [...s.voters].sort().join() === 'node1,node2,node3' ? true : undefined;
    }
    return undefined;
  });
}

async function readSecret(): Promise<unknown> {
  return until('the secret to be readable', 60_000, async () => {
    for (const n of nodes) {
      const r = await api(n.apiAddr, 'GET', 'kv/app', { token: rootToken });
      if (r.status === 200) return r.json.data as unknown;
    }
    return undefined;
  });
}

async function restartAll(seal: SealMode, signal: NodeJS.Signals): Promise<void> {
  await Promise.all(nodes.map((n) => stop(n, signal)));
  for (const n of nodes) writeConfig(n, seal);
  await Promise.all(nodes.map((n) => start(n)));
}

/** The migration runs on the Raft leader: the others refuse it with a 400 and change nothing. */
async function migrateOnLeader(): Promise<Node> {
  return until('a node to run the migration', 120_000, async () => {
    for (const n of nodes) {
      const r = await runCli(['operator', 'unseal', '-migrate', recoveryKey], { addr: n.apiAddr });
      if (r.code === 0) return n;
    }
    return undefined;
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'strongroom-transit-'));
  for (const n of [unsealer, ...nodes]) {
    n.dir = join(root, n.id);
    mkdirSync(n.dir, { recursive: true });
  }
  writeConfig(unsealer, 'none');
  await start(unsealer);
  const init = await api(unsealer.apiAddr, 'PUT', 'sys/init', { body: { secret_shares: 1, secret_threshold: 1 } });
  await api(unsealer.apiAddr, 'PUT', 'sys/unseal', { body: { key: init.json.keys_base64[0] } });
  const token = init.json.root_token as string;
  await until('the unsealer to be active', 60_000, async () => ((await api(unsealer.apiAddr, 'GET', 'sys/health')).status === 200 ? true : undefined));
  expect((await api(unsealer.apiAddr, 'POST', 'sys/mounts/transit', { token, body: { type: 'transit' } })).status).toBe(204);
  expect((await api(unsealer.apiAddr, 'POST', 'transit/keys/autounseal', { token, body: {} })).status).toBeLessThan(300);
  // A token of its own with a TTL, so that its renewal is exercised too.
  await api(unsealer.apiAddr, 'PUT', 'sys/policies/acl/autounseal', {
    token, body: { policy: 'path "transit/encrypt/autounseal" { capabilities = ["update"] }\npath "transit/decrypt/autounseal" { capabilities = ["update"] }' },
  });
  const created = await api(unsealer.apiAddr, 'POST', 'auth/token/create', { token, body: { policies: ['autounseal'], ttl: '1h', no_parent: true } });
  unsealerToken = created.json.auth.client_token as string;
  for (const n of nodes) writeConfig(n, 'transit');
  await Promise.all(nodes.map((n) => start(n)));
}, 180_000);

afterAll(async () => {
  await Promise.all([unsealer, ...nodes].map((n) => stop(n, 'SIGKILL')));
  if (!process.env['KEEP_CLUSTER_DIRS']) rmSync(root, { recursive: true, force: true });
});

test('three servers and one operator init make an unsealed three-voter cluster, with no other step', async () => {
  const init = await runCli(['operator', 'init', '-recovery-shares=1', '-recovery-threshold=1'], { addr: node1.apiAddr });
  expect(init.code).toBe(0);
  recoveryKey = /Recovery Key 1: (\S+)/.exec(init.out)?.[1] ?? '';
  rootToken = /Initial Root Token: (\S+)/.exec(init.out)?.[1] ?? '';
  expect(recoveryKey).not.toBe('');
  expect(init.out).not.toMatch(/Unseal Key/);
  await allUnsealed('every node to unseal itself');
  await threeHealthyVoters();
  for (const n of nodes) expect(await sealStatus(n)).toMatchObject({ type: 'transit', recovery_seal: true, t: 1, n: 1, sealed: false });
  expect((await api(node1.apiAddr, 'POST', 'sys/mounts/kv', { token: rootToken, body: { type: 'kv' } })).status).toBe(204);
  expect((await api(node1.apiAddr, 'PUT', 'kv/app', { token: rootToken, body: { password: 'kept' } })).status).toBe(204);
});

test('after SIGKILL and restart every node unseals itself', async () => {
  await restartAll('transit', 'SIGKILL');
  await allUnsealed('every restarted node to unseal itself');
  expect(await readSecret()).toEqual({ password: 'kept' });
});

test('the seal migrates to Shamir and back with operator unseal -migrate, keeping the data', async () => {
  // Transit -> Shamir: the transit stanza marked disabled; the recovery key becomes the unseal key.
  await restartAll('transit-disabled', 'SIGTERM');
  expect(await sealStatus(node1)).toMatchObject({ type: 'transit', sealed: true, migration: true });
  const leader = await migrateOnLeader();
  for (const n of nodes.filter((m) => m !== leader)) {
    await until(`${n.id} to see the Shamir seal`, 60_000, async () => ((await sealStatus(n)).type === 'shamir' ? true : undefined));
    expect((await runCli(['operator', 'unseal', recoveryKey], { addr: n.apiAddr })).code).toBe(0);
  }
  await allUnsealed('every node unsealed with the former recovery key');
  for (const n of nodes) expect(await sealStatus(n)).toMatchObject({ type: 'shamir', recovery_seal: false, migration: false });
  expect(await readSecret()).toEqual({ password: 'kept' });

  // Shamir -> transit: the stanza back in use; the unseal key becomes the recovery key again.
  await restartAll('transit', 'SIGTERM');
  expect(await sealStatus(node1)).toMatchObject({ type: 'shamir', sealed: true, migration: true });
  await migrateOnLeader();
  await allUnsealed('every node to unseal itself after the migration');
  for (const n of nodes) expect(await sealStatus(n)).toMatchObject({ type: 'transit', recovery_seal: true });
  expect(await readSecret()).toEqual({ password: 'kept' });
  for (const n of nodes) {
    expect(logOf(n)).not.toContain(unsealerToken);
    expect(logOf(n)).not.toContain(recoveryKey);
    expect(logOf(n)).not.toContain(rootToken);
  }
});

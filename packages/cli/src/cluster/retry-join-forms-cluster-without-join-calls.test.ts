import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { api, runCli, until } from './test-support/cluster-fixture';

/**
 * Three `strongroom server` processes with the same retry_join list (an address where nothing
 * listens, then node1), started before anything is initialized. Only `operator init` and the
 * unseals are done by hand: nodes 2 and 3 find node1 themselves (no sys/storage/raft/join call),
 * are unsealed with the cluster's keys and become voters. A node stopped with SIGTERM while it
 * retries exits cleanly, and a member restarted does not try to join again.
 */

const BASE_PORT = 24800; // 24800-24839 (24839: a port where nothing listens)
const BOGUS = `http://127.0.0.1:${BASE_PORT + 39}`;
const BIN = resolve(__dirname, '../../bin/strongroom.js');
const TICK_MS = 50;
const ATTEMPT_FAILED = 'retry_join: could not join through this leader';

jest.setTimeout(180_000);

interface Node { id: string; apiAddr: string; dir: string; child: ChildProcess | null }

let root: string;
const nodes: Node[] = [1, 2, 3].map((i) => ({ id: `node${i}`, apiAddr: `http://127.0.0.1:${BASE_PORT + 10 * (i - 1)}`, dir: '', child: null }));
const [node1, node2, node3] = nodes as [Node, Node, Node];
let keys: string[] = [];
let rootToken = '';

function writeConfig(n: Node, index: number): string {
  const file = join(n.dir, 'server.hcl');
  const apiPort = BASE_PORT + 10 * index;
  writeFileSync(file, [
    'storage "raft" {',
    `  path    = "${join(n.dir, 'data')}"`,
    `  node_id = "${n.id}"`,
    '  retry_join {',
    `    leader_api_addr = "${BOGUS}"`,
    '  }',
    '  retry_join {',
    `    leader_api_addr = "${node1.apiAddr}"`,
    '  }',
    '}',
    'listener "tcp" {',
    `  address         = "127.0.0.1:${apiPort}"`,
    `  cluster_address = "127.0.0.1:${apiPort + 1}"`,
    '  tls_disable     = true',
    '}',
    `api_addr     = "${n.apiAddr}"`,
    `cluster_addr = "https://127.0.0.1:${apiPort + 1}"`,
    '',
  ].join('\n'));
  return file;
}

async function start(n: Node): Promise<void> {
  const log = openSync(join(n.dir, 'server.log'), 'a');
  const child = spawn(process.execPath, [BIN, 'server', '--config', join(n.dir, 'server.hcl')], {
    stdio: ['ignore', log, log], env: { ...process.env, STRONGROOM_RAFT_TICK_MS: String(TICK_MS) },
  });
  closeSync(log);
  n.child = child;
  child.on('exit', () => {
    if (n.child === child) n.child = null;
  });
  await until(`${n.id} to answer`, 30_000, async () => ((await api(n.apiAddr, 'GET', 'sys/seal-status')).status === 200 ? true : undefined));
}

/** Stops the node with `signal` and resolves with its exit code (null when killed). */
function stop(n: Node, signal: NodeJS.Signals): Promise<number | null> {
  const child = n.child;
  if (!child) return Promise.resolve(null);
  return new Promise((r) => {
    child.once('exit', (code) => r(code));
    child.kill(signal);
  });
}

function logOf(n: Node): string {
  return readFileSync(join(n.dir, 'server.log'), 'utf8');
}

/** The log's JSON records with this message; a line still being written is skipped. */
function records(text: string, message: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (record['@message'] === message) out.push(record);
    } catch {
      // The rest of the line is not flushed yet.
    }
  }
  return out;
}

async function unseal(n: Node): Promise<void> {
  const r = await api(n.apiAddr, 'PUT', 'sys/unseal', { body: { key: keys[0] }, timeoutMs: 60_000 });
  expect({ node: n.id, status: r.status, sealed: r.json?.sealed }).toEqual({ node: n.id, status: 200, sealed: false });
}

async function autopilot() {
  const r = await api(node1.apiAddr, 'GET', 'sys/storage/raft/autopilot/state', { token: rootToken });
  expect(r.status).toBe(200);
  return r.json.data as { voters: string[]; non_voters: string[]; healthy: boolean };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'strongroom-retry-join-'));
  nodes.forEach((n, i) => {
    n.dir = join(root, n.id);
    mkdirSync(n.dir, { recursive: true });
    writeConfig(n, i);
  });
  await Promise.all(nodes.map((n) => start(n)));
}, 120_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => stop(n, 'SIGKILL')));
  if (!process.env['KEEP_CLUSTER_DIRS']) rmSync(root, { recursive: true, force: true });
});

test('before node1 is initialized, the others keep trying each leader in turn, naming the address and the cause', async () => {
  for (const n of [node2, node3]) {
    // node1 may not even listen at the first attempts (all three start at once); then it answers, uninitialized.
    const answered = await until(`${n.id} to have been refused by node1`, 60_000, async () => {
      const failed = records(logOf(n), ATTEMPT_FAILED);
      return failed.length >= 4 ? failed.find((r) => r['leader_api_addr'] === node1.apiAddr && String(r['err']).includes('refused:')) : undefined;
    });
    expect(answered['err']).toBe(`the leader at ${node1.apiAddr} refused: server is not initialized: initialize it through sys/init (strongroom operator init)`);
    const failed = records(logOf(n), ATTEMPT_FAILED);
    expect(failed.slice(0, 4).map((r) => r['leader_api_addr'])).toEqual([BOGUS, node1.apiAddr, BOGUS, node1.apiAddr]);
    expect(failed[0]?.['err']).toMatch(new RegExp(`${BOGUS}.*ECONNREFUSED`));
  }
});

test('SIGTERM while retrying stops the node cleanly, and it retries again once restarted', async () => {
  const code = await stop(node3, 'SIGTERM');
  expect(code).toBe(0);
  expect(logOf(node3)).toMatch(/SIGTERM received, shutting down/);
  const before = records(logOf(node3), ATTEMPT_FAILED).length;
  await start(node3);
  await until('node3 to try again', 60_000, async () => (records(logOf(node3), ATTEMPT_FAILED).length > before ? true : undefined));
});

test('after operator init and unseal of node1, nodes 2 and 3 join by themselves, are unsealed with its keys and become voters', async () => {
  const init = await runCli(['operator', 'init', '-key-shares=1', '-key-threshold=1'], { addr: node1.apiAddr });
  expect(init.code).toBe(0);
  keys = [/Unseal Key 1: (\S+)/.exec(init.out)?.[1] ?? ''];
  rootToken = /Initial Root Token: (\S+)/.exec(init.out)?.[1] ?? '';
  expect(keys[0]).not.toBe('');
  await unseal(node1);
  // node1 itself stops trying once it is initialized.
  await until('node1 to stop retrying', 60_000, async () => (records(logOf(node1), 'retry_join: this node belongs to a cluster; nothing to join').length > 0 ? true : undefined));

  for (const n of [node2, node3]) {
    await until(`${n.id} to have a pending join`, 90_000, async () => (records(logOf(n), 'join pending: unseal this node with the cluster\'s keys').length > 0 ? true : undefined));
    await unseal(n);
  }
  await until('three voters', 90_000, async () => {
    const s = await autopilot();
    return s.healthy && [...s.voters].sort().join() === 'node1,node2,node3' ? true : undefined;
  });
  // This test never calls sys/storage/raft/join: the leader took each node in through retry_join.
  const added = records(logOf(node1), 'added a member as a non-voter; autopilot promotes it once it is healthy and stable').map((r) => r['node_id']);
  expect([...added].sort()).toEqual(['node2', 'node3']);
  const config = await api(node2.apiAddr, 'GET', 'sys/storage/raft/configuration', { token: rootToken });
  expect((config.json.data.config.servers as { node_id: string }[]).map((s) => s.node_id).sort()).toEqual(['node1', 'node2', 'node3']);
  for (const n of nodes) {
    expect(logOf(n)).not.toContain(keys[0]);
    expect(logOf(n)).not.toContain(rootToken);
  }
});

test('a member restarted does not try to join again', async () => {
  expect(await stop(node2, 'SIGTERM')).toBe(0);
  const before = logOf(node2).length;
  await start(node2);
  await unseal(node2);
  await until('node2 to say it is a member', 30_000, async () => (records(logOf(node2).slice(before), 'retry_join: this node belongs to a cluster; nothing to join').length > 0 ? true : undefined));
  const after = logOf(node2).slice(before);
  expect(records(after, ATTEMPT_FAILED)).toEqual([]);
  expect(records(after, 'join pending: unseal this node with the cluster\'s keys')).toEqual([]);
  await until('node2 to be a healthy voter again', 60_000, async () => {
    const s = await autopilot();
    return s.healthy && s.voters.includes('node2') ? true : undefined;
  });
});

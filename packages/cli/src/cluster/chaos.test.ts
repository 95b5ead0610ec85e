import { acknowledgedWritesPresent, checkLinearizability, HistoryRecorder, type RegisterValue } from '../../../raft/src/test-support/linearizability';
import { seededRandom, type Random } from '../../../raft/src/test-support/seeded-random';
import type { LocalCluster, NodeHandle } from '../cluster-launcher';
import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { runKvWorkload } from './test-support/kv-workload';
import { RemoteLinkProxies } from './test-support/remote-link-proxies';

/**
 * Clients read, write and delete through every node of a three-node cluster while nodes are
 * SIGKILLed and restarted and their inbound cluster traffic is cut and healed; afterwards the
 * recorded history must be linearizable and no acknowledged write may be missing.
 *
 * Each node's cluster port sits behind a LinkProxy (in a child process, see RemoteLinkProxies),
 * and the node advertises the proxy: cutting
 * it stops everything the other nodes send to that node (its own messages still go out), which
 * makes a leader that cannot hear its followers, or a follower that hears nobody.
 *
 *   CHAOS_SECONDS=N   seconds of faults (default 20)
 *   CHAOS_LONG=1      the long form: 180 seconds unless CHAOS_SECONDS says otherwise
 *   CHAOS_SEED=N      replays the fault schedule and client choices (timing still varies)
 *   KEEP_CLUSTER_DIRS=1  keeps the servers' data and logs (the path is printed on failure)
 */

const BASE_PORT = 24300; // 24300-24321
const FAULT_SECONDS = Number(process.env['CHAOS_SECONDS'] ?? '') || (process.env['CHAOS_LONG'] ? 180 : 20);
const SEED = Number(process.env['CHAOS_SEED'] ?? '') || (Date.now() % 1_000_000_007);
const CLIENTS = 16;
const KEYS = Array.from({ length: 24 }, (_, i) => `k${i}`);

let tc: TestCluster | undefined;
let proxies: RemoteLinkProxies | undefined;

afterAll(async () => {
  await Promise.allSettled([tc?.destroy()]);
  proxies?.kill();
});

type Fault = { name: string; repair: () => Promise<void> };

/** Applies one random fault (sometimes two at once, losing quorum) and returns how to undo it. */
async function injectFault(cluster: LocalCluster, links: RemoteLinkProxies, random: Random, log: string[]): Promise<Fault[]> {
  const pick = (exclude: NodeHandle[] = []) => random.pick(cluster.nodes.filter((n) => !exclude.includes(n)));
  const kill = async (n: NodeHandle): Promise<Fault> => {
    await cluster.kill(n);
    return { name: `kill ${n.id}`, repair: () => cluster.restart(n) };
  };
  const cut = async (n: NodeHandle): Promise<Fault> => {
    const mode = random.next() < 0.5 ? 'blackhole' : 'refuse';
    await links.cut(n.index, mode);
    return { name: `cut ${n.id} (${mode})`, repair: () => links.heal(n.index) };
  };
  const dice = random.next();
  // Aim at the active node half the time: that is where faults hurt.
  const active = await cluster.waitActive(1_000).catch(() => undefined);
  const target = active && random.next() < 0.5 ? active : pick();
  let faults: Fault[];
  if (dice < 0.4) faults = [await kill(target)];
  else if (dice < 0.8) faults = [await cut(target)];
  else {
    const second = pick([target]);
    faults = [random.next() < 0.5 ? await kill(target) : await cut(target), random.next() < 0.5 ? await kill(second) : await cut(second)];
  }
  log.push(`${new Date().toISOString()} ${faults.map((f) => f.name).join(' + ')}${active ? ` (active was ${active.id})` : ''}`);
  return faults;
}

test(`a history of writes, reads and deletes under ${FAULT_SECONDS}s of crashes and cut links is linearizable and keeps every acknowledged write`, async () => {
  const random = seededRandom(SEED);
  const clientRandom = seededRandom(SEED ^ 0x5eed);
  const links = await RemoteLinkProxies.start([0, 1, 2].map((i) => `127.0.0.1:${BASE_PORT + 10 * i + 1}`));
  proxies = links;
  tc = await launchTestCluster('chaos', {
    nodes: 3, basePort: BASE_PORT, clusterAddrOf: (index) => `https://${links.addresses[index] as string}`,
  });
  const cluster = tc.cluster;
  const token = cluster.rootToken;
  const active = await cluster.waitActive();
  expect((await api(active.apiAddr, 'POST', 'sys/mounts/kv', { token, body: { type: 'kv', options: { version: '1' } } })).status).toBe(204);

  const recorder = new HistoryRecorder();
  // The recorder's times count from here; the servers' logs use wall-clock time.
  const origin = new Date();
  const faultLog: string[] = [];
  const deadline = Date.now() + FAULT_SECONDS * 1000;
  const workload = runKvWorkload({
    recorder, addresses: () => cluster.nodes.map((n) => n.apiAddr), token, mount: 'kv', keys: KEYS,
    clients: CLIENTS, until: deadline, random: clientRandom,
  });

  const faults = (async () => {
    while (Date.now() < deadline) {
      await sleep(300 + random.int(700));
      if (Date.now() >= deadline) break;
      const applied = await injectFault(cluster, links, random, faultLog);
      await sleep(500 + random.int(1500));
      const t0 = Date.now();
      for (const f of applied) await f.repair();
      faultLog.push(`${new Date().toISOString()}   repaired in ${Date.now() - t0} ms`);
    }
  })();
  // Both loops end by themselves; a failed restart surfaces here after the clients are done.
  const [stats, faultResult] = await Promise.allSettled([workload, faults]);
  if (stats.status === 'rejected') throw stats.reason;

  // Heal whatever is left, let the cluster settle, and read where every key ended up.
  await links.healAll();
  for (const n of cluster.nodes) if (!n.process) await cluster.restart(n);
  if (faultResult.status === 'rejected') throw new Error(`the fault loop failed: ${(faultResult.reason as Error).message}\n${tc.logs(20)}`);
  const settled = await until('a settled cluster', 30_000, async () => {
    const a = await cluster.waitActive(5_000);
    const state = await api(a.apiAddr, 'GET', 'sys/storage/raft/autopilot/state', { token });
    return state.json?.data?.healthy === true && state.json.data.voters.length === 3 ? a : undefined;
  });
  const readAll = async (node: NodeHandle): Promise<Map<string, RegisterValue>> => {
    const state = new Map<string, RegisterValue>();
    for (const key of KEYS) {
      const value = await until(`the final value of ${key}`, 15_000, async () => {
        const r = await api(node.apiAddr, 'GET', `kv/${key}`, { token });
        if (r.status === 404) return { v: null };
        return r.status === 200 ? { v: r.json.data.value as string } : undefined;
      });
      state.set(key, value.v);
    }
    return state;
  };
  const servedState = await readAll(settled);
  // Read again from a node that has just become active (activation drops every cached entry),
  // so that the final state is what storage holds, whatever the first node's cache said.
  await cluster.kill(settled);
  const fresh = await cluster.waitActive(15_000);
  const finalState = await readAll(fresh);
  await cluster.restart(settled);
  const disagreements = KEYS.filter((k) => servedState.get(k) !== finalState.get(k))
    .map((k) => `  ${k}: ${settled.id} (active through the run) answered ${JSON.stringify(servedState.get(k))}, ${fresh.id} (newly active) ${JSON.stringify(finalState.get(k))}`);

  const history = recorder.history();
  const summary = `seed ${SEED}, ${FAULT_SECONDS}s, t=0 at ${origin.toISOString()}, ${history.length} operations: ${JSON.stringify(stats.value)}\nfaults:\n  ${faultLog.join('\n  ')}`;
  const linearizable = checkLinearizability(history);
  const kept = acknowledgedWritesPresent(history, finalState);
  if (linearizable.ok !== true || !kept.ok || disagreements.length > 0) {
    throw new Error(`${summary}\n\nlinearizability: ${linearizable.ok === true ? 'ok' : linearizable.explanation}\n` +
      `acknowledged writes: ${kept.ok ? 'ok' : kept.explanation}\n` +
      `final reads after the run: ${disagreements.length === 0 ? 'every node agrees' : `two active nodes disagree, with no write in between:\n${disagreements.join('\n')}`}\n` +
      `\nservers (${tc.dir}):\n${tc.logs(15)}`);
  }
  // Not vacuous: the clients got work done under faults, and faults happened.
  expect(stats.value.ok).toBeGreaterThan(200);
  const { exitedByItself } = await links.close();
  if (process.env['CHAOS_VERBOSE']) console.log(`${summary}\nlink proxy process exited by itself: ${exitedByItself}`);
  expect(faultLog.filter((line) => !line.includes('repaired')).length).toBeGreaterThanOrEqual(Math.floor(FAULT_SECONDS / 6));
}, (FAULT_SECONDS + 150) * 1000);

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

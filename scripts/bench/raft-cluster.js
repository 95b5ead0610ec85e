'use strict';
// `node scripts/bench/run.js raft`: KV v2 writes on a 3-node loopback cluster of real server
// processes, next to what the disk under it can make durable (measured first, on the same
// filesystem) and, when the Debian package etcd-server is installed, a 3-member etcd loaded the
// same way. At 1 and at 64 clients the two clusters are both up and measured in alternating rounds, so
// a change in the machine's speed during the run falls on both sides of each ratio alike.
// Everything started here is stopped in `finally`, and its temp dir removed.
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { measureLoad, clientName } = require('./load');
const { fsyncRate, levelSyncedBatchRate } = require('./disk');
const { findEtcd, startEtcd, etcdPutLoad } = require('./etcd');
const { row, ratio, median } = require('./report');
const { startCpuSample } = require('./cpu-usage');

const ROOT = path.resolve(__dirname, '../..');
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const WARMUP_SECONDS = 1;
const DISK_SECONDS = 2;
const TARGET = { p50AtC1Ms: 3, p99AtC64Ms: 50 };
// A 3-member etcd measured on a 2-core loopback machine (64 clients); used only when etcd is not run here.
const ETCD_REFERENCE_RATE = 3900;
const VALUE = JSON.stringify({ username: 'app', password: 'x'.repeat(32) });
const KV_BODY = JSON.stringify({ data: JSON.parse(VALUE) });
const KV_PATH = '/v1/secret/data/';

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A base port where base + 10*i and the port after are free for i < 3 (the launcher's layout). */
async function freeBasePort(from) {
  for (let base = from; base < from + 2000; base += 100) {
    const ports = [0, 1, 2].flatMap((i) => [base + 10 * i, base + 10 * i + 1]);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error(`no free ports from ${from}`);
}

/**
 * The bench's 3-node cluster with KV v2 at secret/, `env` added to the servers' environment.
 * If anything fails after the launch, the nodes are killed before the error goes on.
 */
async function launchBenchCluster(dir, basePort, env) {
  const { LocalCluster } = require(path.join(ROOT, 'packages/cli/dist/index.js'));
  const cluster = await LocalCluster.launch({ dir, nodes: 3, basePort, ...(env ? { env } : {}) });
  try {
    const active = await cluster.waitActive();
    const headers = { 'x-vault-token': cluster.rootToken };
    const mounted = await fetch(`${active.apiAddr}/v1/sys/mounts/secret`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'kv', options: { version: '2' } }),
    });
    if (mounted.status !== 204 && mounted.status !== 200) throw new Error(`mounting secret/ failed: ${mounted.status} ${await mounted.text()}`);
    return { cluster, active, headers };
  } catch (err) {
    cluster.killAll();
    throw err;
  }
}

/** The bench's write load: a KV v2 write of a fresh key per request, keys named after `run`. */
function kvWrites(urls, headers, run) {
  return { url: urls, method: 'POST', headers, body: KV_BODY, uniquePath: KV_PATH, prefix: `k${run}_` };
}

/** SIGTERM to every node; whatever has not exited after 10 s gets SIGKILL. */
async function stopCluster(cluster) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 10_000); });
  const outcome = await Promise.race([cluster.stop().catch(() => 'failed'), timeout]);
  clearTimeout(timer);
  if (outcome) cluster.killAll();
}

/**
 * Warms up, then measures; each run writes its own keys. With `processes` ({label, pid}) the
 * result carries their CPU time per request by thread (`cpu`), where /proc has it.
 */
async function measure(load, concurrency, seconds, processes = []) {
  await measureLoad({ ...load, prefix: `${load.prefix}w`, concurrency, seconds: WARMUP_SECONDS });
  const sample = startCpuSample(processes);
  const result = await measureLoad({ ...load, concurrency, seconds });
  return { ...result, cpu: sample.perRequest(result.count ?? Math.round(result.rate * seconds)) };
}

/** The CPU line under a row, when there is one. */
function cpuLine(result) {
  if (result.cpu) console.log(`  CPU us per write by thread: ${result.cpu}`);
}

/** Resident set size of `pid` in bytes from /proc (Linux only; NaN elsewhere). */
function residentBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The round whose rate is the median one: its rate, p50 and p99 are reported together. */
function medianRound(results) {
  const sorted = [...results].sort((a, b) => a.rate - b.rate);
  return sorted[(sorted.length - 1) >> 1];
}

async function runRaftBench({ seconds }) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-'));
  let cluster;
  let etcd;
  // Interrupted (Ctrl-C, a timeout's SIGTERM): `finally` will not run, so kill what we started.
  const onSignal = (signal) => {
    cluster?.killAll();
    etcd?.kill();
    fs.rmSync(work, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    console.log(`Raft: KV v2 writes on a 3-node loopback cluster, ${seconds}s per row (after ${WARMUP_SECONDS}s warmup); data in ${work}`);
    console.log(`Load from ${clientName()}`);
    const diskDir = path.join(work, 'disk');
    fs.mkdirSync(diskDir);
    const fsync = fsyncRate(diskDir, DISK_SECONDS);
    row('ceiling: append 64 B + fdatasync, 1 writer', fsync);
    const level = await levelSyncedBatchRate(diskDir, DISK_SECONDS);
    row('ceiling: classic-level synced 1-put batch', level);

    const launched = await launchBenchCluster(path.join(work, 'cluster'), await freeBasePort(18210));
    cluster = launched.cluster;
    const { active } = launched;
    const kvLoad = (urls, run) => kvWrites(urls, launched.headers, run);
    const all = cluster.nodes.map((n) => n.apiAddr);
    // Per-thread CPU under the busiest rows shows which process (and which thread) a row is bound by.
    const nodes = cluster.nodes.filter((n) => n.process).map((n) => ({ label: n === active ? 'active' : 'standby', pid: n.process.pid }));
    const activePid = active.process?.pid;

    const bin = findEtcd();
    let etcdSkipped = bin ? '' : 'skipped, no `etcd` on PATH (install the Debian package: sudo apt-get install etcd-server)';
    if (bin) {
      // A reference that fails to start costs its rows, not the Strongroom numbers.
      etcd = await startEtcd({ bin, dir: path.join(work, 'etcd'), basePort: await freeBasePort(23790) })
        .catch((err) => { etcdSkipped = `${bin} did not start: ${err.message}`; return undefined; });
    }
    const members = etcd ? etcd.pids.map((pid, i) => ({ label: `member ${i + 1}`, pid })) : [];
    const rounds = {};
    const results = {};
    const rss = {};
    // The active node's RSS every 250 ms while a Strongroom row of that concurrency runs.
    const rssUnderLoad = { 1: [], 64: [] };
    const sampledRss = async (c, run) => {
      const timer = activePid ? setInterval(() => rssUnderLoad[c]?.push(residentBytes(activePid)), 250) : undefined;
      try {
        return await run();
      } finally {
        clearInterval(timer);
      }
    };
    /**
     * Each round measures every row once; the order flips from one round to the next, so
     * neither side is always measured first. CPU per write is sampled in the first round.
     * Each Strongroom row is next to the etcd row it is compared with, in either order.
     */
    const inRounds = async (c) => {
      const spreadRow = { key: `spread${c}`, name: `KV v2 write, all 3 nodes, c=${c}`, run: (r, cpu) => sampledRss(c, () => measure(kvLoad(all, `s${c}r${r}`), c, seconds, cpu ? nodes : [])) };
      const activeRow = { key: `active${c}`, name: `KV v2 write, active node only, c=${c}`, run: (r, cpu) => sampledRss(c, () => measure(kvLoad([active.apiAddr], `a${c}r${r}`), c, seconds, cpu ? nodes : [])) };
      const rows = etcd ? [
        spreadRow,
        { key: `etcd${c}`, name: `etcd put via /v3/kv/put, all 3 members, c=${c}`, run: (r, cpu) => measure(etcdPutLoad(etcd.clientUrls, `e${c}r${r}`, VALUE), c, seconds, cpu ? members : []) },
        activeRow,
        { key: `etcdOne${c}`, name: `etcd put via /v3/kv/put, one member, c=${c}`, run: (r, cpu) => measure(etcdPutLoad([etcd.clientUrls[0]], `e1${c}r${r}`, VALUE), c, seconds, cpu ? members : []) },
      ] : [spreadRow, activeRow];
      console.log(`\nc=${c} in ${ROUNDS} rounds${etcd ? ', Strongroom and etcd both up and measured in turn' : ''}`);
      for (const spec of rows) rounds[spec.key] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const spec of r % 2 === 0 ? rows : [...rows].reverse()) {
          const result = await spec.run(r, r === 0);
          rounds[spec.key].push(result);
          row(`${spec.name}, round ${r + 1}`, result, fsync);
          cpuLine(result);
        }
      }
      for (const spec of rows) results[spec.key] = medianRound(rounds[spec.key]);
      // Right after the load, before the heap shrinks back: what the rows above cost in memory.
      if (activePid) rss[c] = residentBytes(activePid);
    };
    await inRounds(1);
    const c = 16;
    results[`spread${c}`] = await measure(kvLoad(all, `s${c}`), c, seconds);
    row(`KV v2 write, all 3 nodes, c=${c}`, results[`spread${c}`], fsync);
    results[`active${c}`] = await measure(kvLoad([active.apiAddr], `a${c}`), c, seconds);
    row(`KV v2 write, active node only, c=${c}`, results[`active${c}`], fsync);
    await inRounds(64);
    await stopCluster(cluster);
    cluster = undefined;
    if (etcd) {
      await etcd.stop();
      etcd = undefined;
    }

    console.log(`\nRatios (percent of ceiling above is against the raw fsync rate; at c=64, the median of ${ROUNDS} rounds)`);
    const spread = results.spread64;
    const direct = results.active64;
    ratio('writes/s at c=64 (all nodes) / raw fsync rate', spread.rate, fsync.rate);
    ratio('writes/s at c=64 (active node) / raw fsync rate', direct.rate, fsync.rate);
    ratio('writes/s at c=64 (all nodes) / classic-level synced batch rate', spread.rate, level.rate);
    ratio('writes/s at c=64 (active node) / classic-level synced batch rate', direct.rate, level.rate);
    const met = (ok) => (ok ? 'target met' : 'target missed');
    ratio(`p50 at c=1 (all nodes) / ${TARGET.p50AtC1Ms} ms target`, results.spread1.p50, TARGET.p50AtC1Ms, met(results.spread1.p50 < TARGET.p50AtC1Ms));
    ratio(`p50 at c=1 (active node) / ${TARGET.p50AtC1Ms} ms target`, results.active1.p50, TARGET.p50AtC1Ms, met(results.active1.p50 < TARGET.p50AtC1Ms));
    const p99 = (key) => median(rounds[key].map((r) => r.p99));
    ratio(`p99 at c=64 (all nodes) / ${TARGET.p99AtC64Ms} ms target`, p99('spread64'), TARGET.p99AtC64Ms, met(p99('spread64') < TARGET.p99AtC64Ms));
    ratio(`p99 at c=64 (active node) / ${TARGET.p99AtC64Ms} ms target`, p99('active64'), TARGET.p99AtC64Ms, met(p99('active64') < TARGET.p99AtC64Ms));
    const under = (c) => rssUnderLoad[c].filter(Number.isFinite);
    if (under(1).length > 0 && under(64).length > 0) {
      // The goal's reading: the median of the readings taken during each concurrency's rows, so
      // that one moment of the garbage collector's slack does not decide it; the peaks beside it.
      const mb = (bytes) => (bytes / 2 ** 20).toFixed(0);
      const [m1, m64] = [median(under(1)), median(under(64))];
      ratio(`active node RSS under c=64 (median ${mb(m64)} MB, peak ${mb(Math.max(...under(64)))}) / under c=1 (median ${mb(m1)} MB, peak ${mb(Math.max(...under(1)))})`,
        m64, m1, met(m64 <= 1.5 * m1));
    }
    if (rss[1] && rss[64]) {
      ratio(`active node RSS right after the c=64 rows (${(rss[64] / 2 ** 20).toFixed(0)} MB) / after the c=1 rows (${(rss[1] / 2 ** 20).toFixed(0)} MB), one reading each`, rss[64], rss[1]);
    }
    if (results.etcd64) {
      // Each round's ratio compares two rows measured one right after the other; their median is the verdict.
      const perRound = (ours, theirs) => rounds[ours].map((r, i) => r.rate / rounds[theirs][i].rate);
      const each = (values) => `rounds: ${values.map((v) => v.toFixed(2)).join(', ')}`;
      for (const c of [1, 64]) {
        const vsAll = perRound(`spread${c}`, `etcd${c}`);
        const vsOne = perRound(`active${c}`, `etcdOne${c}`);
        ratio(`writes/s at c=${c} (all nodes) / etcd 3 members, c=${c}`, median(vsAll), 1, `${met(median(vsAll) >= 1)}; ${each(vsAll)}`);
        ratio(`writes/s at c=${c} (active node) / etcd one member, c=${c}`, median(vsOne), 1, `${met(median(vsOne) >= 1)}; ${each(vsOne)}`);
      }
      const p99s = rounds.spread64.map((r, i) => r.p99 / rounds.etcd64[i].p99);
      ratio('p99 at c=64 (all nodes) / etcd p99, c=64', p99('spread64'), p99('etcd64'), each(p99s));
    } else {
      console.log(`etcd: ${etcdSkipped}`);
      ratio(`writes/s at c=64 (all nodes) / etcd reference (${ETCD_REFERENCE_RATE}/s, not this run)`, spread.rate, ETCD_REFERENCE_RATE);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (cluster) await stopCluster(cluster);
    if (etcd) await etcd.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { runRaftBench, launchBenchCluster, kvWrites, freeBasePort, stopCluster };

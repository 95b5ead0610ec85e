'use strict';
// `node scripts/bench/run.js replication`: DR replication between clusters of real server
// processes on loopback, each number next to the one it is compared with, measured in the same run.
//
// 1. Replication lag: the primary's capacity for KV v2 writes is measured first (closed loop,
//    64 clients); then a steady load of half that rate runs while probe writes are timed from
//    their acknowledgement on the primary to their apply on the secondary. The secondary serves
//    no reads (DR secondary mode), so apply is seen in its sys/replication/dr/status: right after
//    a probe is acknowledged the primary's last_wal is read (the probe's index or a later one),
//    and a poller that reads the secondary's status about every millisecond all along gives the first time
//    its last_remote_wal reached that index. Each lag is thus an upper bound, off by at most one
//    poll. Next to it: the commit latency of the load's own writes on the primary.
// 2. Catch-up: 100,000 KV v1 secrets (one physical key each) are written on the primary; a new
//    secondary is enabled and timed to `stream-wals` (its Merkle diff and sync, then the stream),
//    next to a Raft snapshot of the same primary saved to a file and restored into a fresh node
//    (snapshot-force, unseal with the primary's keys, until it serves the last key written).
//
// Ports 25400-25479 (BENCH_DR_BASE_PORT moves them). Every process started here is stopped in
// `finally` (SIGTERM, then SIGKILL), and its temp dir removed (kept with KEEP_CLUSTER_DIRS=1).
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { runLoad, measureLoad, clientName } = require('./load');
const { row, ratio, line, median } = require('./report');

const ROOT = path.resolve(__dirname, '../..');
const BASE_PORT = Number(process.env.BENCH_DR_BASE_PORT ?? 25400);
const PRIMARY_NODES = Math.max(1, Number(process.env.BENCH_DR_PRIMARY_NODES ?? 1));
const CAPACITY_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LAG_SECONDS = Number(process.env.BENCH_DR_LAG_SECONDS ?? 15);
const KEYS = Number(process.env.BENCH_DR_KEYS ?? 100000);
const FILL_CONCURRENCY = 64;
const FILL_LIMIT_S = 300;
const SYNC_LIMIT_MS = Number(process.env.BENCH_DR_SYNC_LIMIT_S ?? 180) * 1000;
/** Probe writers beside the load, each one probe at a time with a short pause between: enough samples for a p99. */
const PROBERS = 4;
const PROBE_PAUSE_MS = 10;
/** Between two reads of the secondary's status: the lag's resolution, without a busy loop on the secondary. */
const POLL_PAUSE_MS = 1;
/** Writes of the steady load that may wait for an answer at once; past it, the load falls behind its rate. */
const MAX_IN_FLIGHT = 256;
const KV_BODY = JSON.stringify({ data: { username: 'app', password: 'x'.repeat(32) } });

const progress = (msg) => process.stderr.write(`[replication] ${msg}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const fmt = (n, digits = 1) => n.toFixed(digits);
const count = (n) => n.toLocaleString('en-US');

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

async function call(base, method, urlPath, { token, body, raw, timeoutMs = 60_000 } = {}) {
  const res = await fetch(`${base}/v1/${urlPath}`, {
    method,
    headers: { ...(token ? { 'x-vault-token': token } : {}), ...(raw ? { 'content-type': 'application/octet-stream' } : body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(raw ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  if (res.status >= 300) throw new Error(`${method} ${urlPath}: ${res.status} ${buf.toString().slice(0, 300)}`);
  return { buf, json: () => (buf.length ? JSON.parse(buf.toString()) : null) };
}

/** Polls `probe` until it returns something other than undefined; errors count as "not yet". */
async function until(what, timeoutMs, probe, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(intervalMs);
  }
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The launcher's layout: node i of a cluster at base + 10*i (API) and the port after (cluster). */
async function requireFreePorts(bases) {
  const ports = bases.flatMap(({ base, nodes }) => Array.from({ length: nodes }, (_, i) => [base + 10 * i, base + 10 * i + 1]).flat());
  const taken = [];
  for (const port of ports) if (!(await portFree(port))) taken.push(port);
  if (taken.length) throw new Error(`ports in use: ${taken.join(', ')} (set BENCH_DR_BASE_PORT to move the range)`);
}

async function drStatus(base) {
  return (await call(base, 'GET', 'sys/replication/dr/status', { timeoutMs: 10_000 })).json().data;
}

/**
 * Whether the secondary streams and holds everything the primary holds (same WAL index and root);
 * when it does not, throws what each side shows, for the message of a wait that times out.
 */
async function inSync(primaryAddr, secondaryAddr) {
  const [p, s] = await Promise.all([drStatus(primaryAddr), drStatus(secondaryAddr)]);
  if (s.state === 'stream-wals' && s.last_remote_wal >= p.last_wal && p.merkle_root !== '' && s.merkle_root === p.merkle_root) return true;
  throw new Error(`primary last_wal ${p.last_wal} root ${p.merkle_root}; secondary ${s.state}, ${s.connection_state}, `
    + `last_remote_wal ${s.last_remote_wal} root ${s.merkle_root}, Merkle syncs ${s.merkle_sync_count}`);
}

/** A fresh cluster of `nodes` processes, launched and unsealed; `stop` ends them (SIGKILL after 10 s). */
async function launch(LocalCluster, work, name, base, nodes) {
  const started = nowMs();
  const cluster = await LocalCluster.launch({ dir: path.join(work, name), nodes, basePort: base });
  const active = await cluster.waitActive(60_000);
  progress(`${name}: ${nodes} node(s) up in ${fmt((nowMs() - started) / 1000)} s`);
  return { cluster, active, root: cluster.rootToken };
}

async function stopCluster(cluster) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 10_000); });
  const outcome = await Promise.race([cluster.stop().catch(() => 'failed'), timeout]);
  clearTimeout(timer);
  if (outcome) cluster.killAll();
}

/** Makes `secondary` a DR secondary of `primary`; resolves when the enable call returns. */
async function enableSecondary(primary, secondary, id) {
  const issued = await call(primary.active.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: primary.root, body: { id } });
  const token = issued.json().wrap_info.token;
  await call(secondary.active.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: secondary.root, body: { token } });
}

/**
 * An open-loop load: `rate` KV v2 writes a second to fresh keys for `seconds`, sent on schedule
 * whatever the answers do (up to MAX_IN_FLIGHT waiting). The latency of each is from its send.
 */
async function pacedLoad({ url, token, rate, seconds, prefix }) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const latencies = [];
  let errors = 0;
  let firstError;
  let sent = 0;
  let inFlight = 0;
  let late = 0;
  const one = () => new Promise((resolve) => {
    const i = sent++;
    inFlight++;
    const started = nowMs();
    const req = http.request({
      agent, host: target.hostname, port: target.port, path: `/v1/secret/data/${prefix}${i}`, method: 'POST',
      headers: { 'x-vault-token': token, 'content-type': 'application/json', 'content-length': Buffer.byteLength(KV_BODY) },
    }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) {
          errors++;
          firstError ??= `status ${res.statusCode}`;
        }
        latencies.push(nowMs() - started);
        inFlight--;
        resolve();
      });
    });
    req.on('error', (err) => { errors++; firstError ??= err.message; inFlight--; resolve(); });
    req.end(KV_BODY);
  });
  const pending = new Set();
  const start = nowMs();
  const end = start + seconds * 1000;
  while (nowMs() < end) {
    const due = Math.floor(((nowMs() - start) / 1000) * rate);
    while (sent < due) {
      if (inFlight >= MAX_IN_FLIGHT) {
        late++;
        break;
      }
      const p = one();
      pending.add(p);
      p.then(() => pending.delete(p));
    }
    await sleep(2);
  }
  await Promise.all(pending);
  const elapsed = (nowMs() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rate: latencies.length / elapsed, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99), errors, firstError, count: latencies.length, late };
}

/** Reads the secondary's status about every millisecond until `stop`: [time received, last_remote_wal] each. */
function startStatusPoller(secondaryAddr) {
  const seen = [];
  const intervals = [];
  let stopped = false;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(secondaryAddr);
  const get = () => new Promise((resolve) => {
    const req = http.request({ agent, host: target.hostname, port: target.port, path: '/v1/sys/replication/dr/status' }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString()).data.last_remote_wal);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on('error', () => resolve(undefined));
    req.end();
  });
  const running = (async () => {
    let before = nowMs();
    while (!stopped) {
      const wal = await get();
      const at = nowMs();
      intervals.push(at - before);
      before = at;
      if (typeof wal === 'number') seen.push([at, wal]);
      await sleep(POLL_PAUSE_MS);
    }
    agent.destroy();
  })();
  return {
    /** The first time at or after `from` the secondary showed `index` or later. */
    async reached(index, from, timeoutMs = 30_000) {
      const deadline = nowMs() + timeoutMs;
      // Observations are in time order: start at the first one at or after `from`.
      let lo = 0;
      let hi = seen.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (seen[mid][0] < from) lo = mid + 1;
        else hi = mid;
      }
      let i = lo;
      while (nowMs() < deadline) {
        for (; i < seen.length; i++) {
          const [at, wal] = seen[i];
          if (wal >= index) return at;
        }
        await sleep(1);
      }
      throw new Error(`the secondary did not reach WAL ${index} within ${timeoutMs} ms`);
    },
    intervals,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Probe writes until `endAt`, each timed from its acknowledgement to its apply on the secondary. */
async function probeLag({ primaryAddr, token, poller, endAt }) {
  const lags = [];
  const prober = async (p) => {
    for (let i = 0; nowMs() < endAt; i++) {
      await call(primaryAddr, 'POST', `secret/data/probe/p${p}-${i}`, { token, body: { data: { sent: Date.now() } } });
      const acked = nowMs();
      const { last_wal: index } = await drStatus(primaryAddr);
      const applied = await poller.reached(index, acked);
      lags.push(Math.max(0, applied - acked));
      await sleep(PROBE_PAUSE_MS);
    }
  };
  await Promise.all(Array.from({ length: PROBERS }, (_, p) => prober(p)));
  lags.sort((a, b) => a - b);
  return { count: lags.length, p50: pct(lags, 0.5), p99: pct(lags, 0.99), max: lags[lags.length - 1] ?? 0 };
}

async function lagSection(primary, secondary) {
  const primaryAddr = primary.active.apiAddr;
  const secondaryAddr = secondary.active.apiAddr;
  const load = (prefix, seconds) => ({ url: primaryAddr, method: 'POST', headers: { 'x-vault-token': primary.root }, body: KV_BODY, uniquePath: '/v1/secret/data/', prefix, concurrency: 64, seconds });
  await measureLoad(load('warm', 1));
  const capacity = await measureLoad(load('cap', CAPACITY_SECONDS));
  console.log(`\nReplication lag: KV v2 writes on the primary's active node, ${PRIMARY_NODES}-node primary, 1-node secondary; load from ${clientName()}`);
  row('capacity: KV v2 write, c=64, closed loop', capacity);

  // The capacity run may have pushed the secondary out of the window; it must be streaming again first.
  await until('the secondary to catch up after the capacity run', SYNC_LIMIT_MS, async () => ((await inSync(primaryAddr, secondaryAddr)) ? true : undefined), 200);
  const rate = Math.max(1, Math.round(capacity.rate / 2));
  const poller = startStatusPoller(secondaryAddr);
  const started = nowMs();
  const [steady, lag] = await Promise.all([
    pacedLoad({ url: primaryAddr, token: primary.root, rate, seconds: LAG_SECONDS, prefix: 'steady/' }),
    probeLag({ primaryAddr, token: primary.root, poller, endAt: started + LAG_SECONDS * 1000 }),
  ]);
  await poller.stop();
  const pollMs = median(poller.intervals);
  const fellBehind = steady.late ? `; the load fell behind its schedule ${steady.late} times (${MAX_IN_FLIGHT} writes waiting)` : '';
  row(`primary commit at half capacity (${rate}/s)`, steady);
  line(`replication lag, ${lag.count} probes (${PROBERS} writers)`, `p50 ${fmt(lag.p50, 2)} ms  p99 ${fmt(lag.p99, 2)} ms  max ${fmt(lag.max, 2)} ms`);
  console.log(`  lag: from a probe write's acknowledgement on the primary to the first read of the secondary's dr/status whose last_remote_wal`);
  console.log(`  reached the primary's last_wal read right after the ack; the secondary's status was read every ${fmt(pollMs, 2)} ms (median)${fellBehind}`);
  const writesDuring = await drStatus(primaryAddr);
  await until('the secondary to catch up after the load', SYNC_LIMIT_MS, async () => ((await inSync(primaryAddr, secondaryAddr)) ? true : undefined), 200);
  const after = await drStatus(secondaryAddr);
  line('after the load', `secondary at WAL ${after.last_remote_wal} of the primary's ${writesDuring.last_wal} or later, equal Merkle roots; Merkle syncs: ${after.merkle_sync_count}`);
  return { capacity, steady, lag };
}

/** Writes keys [0, KEYS) as KV v1 secrets (one physical key each) at FILL_CONCURRENCY. */
async function fill(primary) {
  await call(primary.active.apiAddr, 'POST', 'sys/mounts/kv1', { token: primary.root, body: { type: 'kv', options: { version: '1' } } });
  const values = Array.from({ length: 256 }, () => JSON.stringify({ value: randomBytes(48).toString('base64') }));
  const step = Math.max(1000, Math.ceil(KEYS / 5));
  const started = nowMs();
  for (let at = 0; at < KEYS; at += step) {
    const n = Math.min(step, KEYS - at);
    const left = FILL_LIMIT_S - (nowMs() - started) / 1000;
    const r = await runLoad({
      url: primary.active.apiAddr, method: 'POST', headers: { 'x-vault-token': primary.root }, concurrency: FILL_CONCURRENCY, seconds: left, count: n,
      path: (i) => `/v1/kv1/k${at + i}`, body: (i) => values[(at + i) % values.length], expect: 204,
    });
    if (r.errors) throw new Error(`filling: ${r.errors} errors, first: ${r.firstError}`);
    if (r.count < n) throw new Error(`filling: only ${at + r.count} of ${KEYS} keys in ${FILL_LIMIT_S} s`);
    progress(`filled ${count(at + n)} keys (${fmt((at + n) / ((nowMs() - started) / 1000), 0)} keys/s)`);
  }
  return (nowMs() - started) / 1000;
}

/** Enables a new secondary and times it to `stream-wals`, then to equal WAL index and root. */
async function catchUp(primary, secondary) {
  const started = nowMs();
  await enableSecondary(primary, secondary, 'bench-new');
  const enabled = nowMs();
  const states = new Set();
  const streaming = await until('the new secondary to reach stream-wals', SYNC_LIMIT_MS, async () => {
    const s = await drStatus(secondary.active.apiAddr);
    states.add(s.state);
    return s.state === 'stream-wals' ? nowMs() : undefined;
  }, 20);
  const synced = await until('the new secondary to hold what the primary holds', SYNC_LIMIT_MS,
    async () => ((await inSync(primary.active.apiAddr, secondary.active.apiAddr)) && nowMs()), 20);
  const s = await drStatus(secondary.active.apiAddr);
  return {
    enableS: (enabled - started) / 1000, streamingS: (streaming - started) / 1000, syncedS: (synced - started) / 1000,
    states: [...states].join(' -> '), syncCount: s.merkle_sync_count,
  };
}

/** Saves a Raft snapshot of the primary to a file, then restores it into a fresh node until it serves the last key. */
async function snapshotRestore(primary, fresh, file) {
  const saveStarted = nowMs();
  const snap = await call(primary.active.apiAddr, 'GET', 'sys/storage/raft/snapshot', { token: primary.root, timeoutMs: 300_000 });
  fs.writeFileSync(file, snap.buf);
  const saveS = (nowMs() - saveStarted) / 1000;
  const started = nowMs();
  await call(fresh.active.apiAddr, 'POST', 'sys/storage/raft/snapshot-force', { token: fresh.root, raw: fs.readFileSync(file), timeoutMs: 300_000 });
  const restored = nowMs();
  // Taken with the primary's keys: the node seals, and opens with those.
  await until('the restored node to seal', 60_000, async () => ((await call(fresh.active.apiAddr, 'GET', 'sys/seal-status')).json().sealed ? true : undefined), 20);
  for (const key of primary.cluster.keys) await call(fresh.active.apiAddr, 'PUT', 'sys/unseal', { body: { key } });
  await until('the restored node to serve the last key', 120_000, async () => {
    const r = await call(fresh.active.apiAddr, 'GET', `kv1/k${KEYS - 1}`, { token: primary.root, timeoutMs: 10_000 });
    return r.json().data ? nowMs() : undefined;
  }, 20);
  return { bytes: snap.buf.length, saveS, restoreS: (restored - started) / 1000, servedS: (nowMs() - started) / 1000 };
}

async function runReplicationBench() {
  const { LocalCluster } = require(path.join(ROOT, 'packages/cli/dist/index.js'));
  const bases = { primary: BASE_PORT, lagSecondary: BASE_PORT + 40, newSecondary: BASE_PORT + 50, restore: BASE_PORT + 60 };
  await requireFreePorts([
    { base: bases.primary, nodes: PRIMARY_NODES }, { base: bases.lagSecondary, nodes: 1 }, { base: bases.newSecondary, nodes: 1 }, { base: bases.restore, nodes: 1 },
  ]);
  if (PRIMARY_NODES > 4) throw new Error('BENCH_DR_PRIMARY_NODES: at most 4 (the ports of the other clusters follow)');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-dr-'));
  const clusters = [];
  const started = nowMs();
  // Interrupted (Ctrl-C, a timeout's SIGTERM): `finally` will not run, so kill what we started.
  const onSignal = (signal) => {
    for (const c of clusters) c.killAll();
    fs.rmSync(work, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const up = async (name, base, nodes) => {
    const c = await launch(LocalCluster, work, name, base, nodes);
    clusters.push(c.cluster);
    return c;
  };
  try {
    console.log(`DR replication between clusters of server processes on loopback; data in ${work}`);
    const primary = await up('primary', bases.primary, PRIMARY_NODES);
    await call(primary.active.apiAddr, 'POST', 'sys/mounts/secret', { token: primary.root, body: { type: 'kv', options: { version: '2' } } });
    await call(primary.active.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: primary.root, body: {} });

    const follower = await up('secondary-lag', bases.lagSecondary, 1);
    await enableSecondary(primary, follower, 'bench-lag');
    await until('the secondary to catch up', SYNC_LIMIT_MS, async () => ((await inSync(primary.active.apiAddr, follower.active.apiAddr)) ? true : undefined), 200);
    const lag = await lagSection(primary, follower);
    // The new secondary and the restore are timed with only the primary running beside them.
    await stopCluster(follower.cluster);

    console.log(`\nA new secondary over ${count(KEYS)} keys (KV v1 secrets, one physical key each), next to a Raft snapshot restore of the same data`);
    const fillS = await fill(primary);
    line(`fill: ${count(KEYS)} KV v1 writes, c=${FILL_CONCURRENCY}`, `${fmt(KEYS / fillS, 0)} keys/s (${fmt(fillS)} s)`);
    const newcomer = await up('secondary-new', bases.newSecondary, 1);
    const sync = await catchUp(primary, newcomer);
    line('new secondary: enable answered', `${fmt(sync.enableS, 2)} s  (activation, and its own data wiped)`);
    line('new secondary: state stream-wals', `${fmt(sync.streamingS, 2)} s  (states seen: ${sync.states})`);
    line('new secondary: equal last_wal and root', `${fmt(sync.syncedS, 2)} s  (merkle_sync_count ${sync.syncCount})`);
    await stopCluster(newcomer.cluster);

    const fresh = await up('restore', bases.restore, 1);
    const snap = await snapshotRestore(primary, fresh, path.join(work, 'primary.snap'));
    line('snapshot: save to a file', `${fmt(snap.saveS, 2)} s  (${fmt(snap.bytes / 1e6)} MB)`);
    line('snapshot: snapshot-force into a fresh node', `${fmt(snap.restoreS, 2)} s`);
    line('snapshot: unsealed, serves the last key', `${fmt(snap.servedS, 2)} s`);

    console.log('\nRatios');
    ratio('replication lag p50 / primary commit p50 at half capacity', lag.lag.p50, lag.steady.p50);
    ratio('replication lag p99 / primary commit p99 at half capacity', lag.lag.p99, lag.steady.p99);
    ratio('half-capacity load achieved / asked', lag.steady.rate, lag.capacity.rate / 2);
    ratio('new secondary to stream-wals / snapshot restore until it serves', sync.streamingS, snap.servedS);
    ratio('new secondary to stream-wals / snapshot save + restore', sync.streamingS, snap.saveS + snap.servedS);
    ratio('new secondary fully in sync / snapshot save + restore', sync.syncedS, snap.saveS + snap.servedS);
    progress(`section took ${fmt((nowMs() - started) / 1000, 0)} s`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const c of clusters) await stopCluster(c);
    if (process.env.KEEP_CLUSTER_DIRS === '1') progress(`kept ${work} (each node's server.log is there)`);
    else fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { runReplicationBench, call, until, requireFreePorts, launch, stopCluster };

'use strict';
// `node scripts/bench/run.js snapshot`: automated snapshots of a dev server holding many KV v2
// keys (BENCH_SNAPSHOT_KEYS, 200,000 by default), written to local disk and to the S3 emulator
// (fauxqs), in MB/s next to how fast the same filesystem takes a file of the same size written
// sequentially and synced, measured in the same run. The server's RSS is sampled throughout:
// a snapshot streams, so its peak over the server's baseline should not grow with the snapshot.
// To show that, the same is measured first at a quarter of the keys, on the way to the full
// count. Everything started here is stopped in `finally`, and its temp dir removed.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { runLoad } = require('./load');
const { sequentialWriteRate } = require('./disk');
const { line, ratio, median } = require('./report');
const { startProcess, stopProcess } = require('./process');

const TOKEN = 'bench-root';
const FILL_CONCURRENCY = 64;
// Each value is 448 base64 characters; with KV v2's metadata and version records, encrypted,
// 200,000 keys make a snapshot of about 200 MB (about 1 KB a key).
const VALUE_BYTES = 336;
const SNAPSHOTS = 3;
const RSS_SAMPLE_MS = 50;
const SETTLE_MS = 3000;
const BASELINE_MS = 2000;
const STATUS_POLL_MS = 100;
const FILL_LIMIT_S = 600;
const SNAPSHOTS_LIMIT_MS = 300_000;
const ZERO_TIME = '0001-01-01T00:00:00Z';
const MB = 1e6;
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times, on every architecture Node runs on. */
const CLOCK_TICKS = 100;

const progress = (msg) => process.stderr.write(`[snapshot] ${msg}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fmt = (n, digits = 1) => n.toFixed(digits);
const count = (n) => n.toLocaleString('en-US');

/** The server's API, with the root token. Throws on an unexpected status. */
function apiClient(base) {
  const api = async (method, urlPath, body) => {
    const res = await fetch(`${base}/v1/${urlPath}`, {
      method, headers: { 'x-vault-token': TOKEN, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${urlPath}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  api.base = base;
  return api;
}

/**
 * Resident set size in bytes, `{ rss, anon }`: from /proc on Linux, where `anon` (RssAnon) is
 * the part not backed by a file (the JS heap, buffers, LevelDB's caches), apart from mapped
 * files such as table files LevelDB reads through mmap; elsewhere from `ps`, without `anon`.
 */
function readRss(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024;
    if (!Number.isNaN(kb('VmRSS'))) return Promise.resolve({ rss: kb('VmRSS'), anon: kb('RssAnon') });
  } catch { /* no /proc: ask ps */ }
  return new Promise((resolve) => {
    execFile('ps', ['-o', 'rss=', '-p', String(pid)], (err, out) => resolve(err ? null : { rss: Number(out.trim()) * 1024, anon: NaN }));
  });
}

/**
 * CPU seconds `pid` has used (user + system), from /proc on Linux; NaN elsewhere. Steadier than
 * wall time on a shared machine, where a snapshot's wall time moves with other work.
 */
function cpuSeconds(pid) {
  try {
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop().split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Samples `pid`'s RSS every RSS_SAMPLE_MS as { t (Unix ms), rss, anon }; `max(from, to)` is the peak of each in a window. */
function startRssSampler(pid) {
  const samples = [];
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    readRss(pid).then((r) => { if (r) samples.push({ t: Date.now(), ...r }); }).finally(() => { busy = false; });
  }, RSS_SAMPLE_MS);
  return {
    samples,
    stop: () => clearInterval(timer),
    cpu: () => cpuSeconds(pid),
    max(from, to) {
      let inside = samples.filter((s) => s.t >= from && s.t <= to);
      // A snapshot quicker than a sample interval: the sample nearest its end stands in.
      if (!inside.length) inside = [samples.reduce((a, s) => (Math.abs(s.t - to) < Math.abs(a.t - to) ? s : a))];
      return { rss: Math.max(...inside.map((s) => s.rss)), anon: Math.max(...inside.map((s) => s.anon)) };
    },
  };
}

/** Writes keys [from, to) as KV v2 secrets, on keep-alive connections, with a progress line every tenth. */
async function fill(base, from, to) {
  // A pool of distinct random values keeps the client's CPU off the measurement; the barrier
  // encrypts each write anyway, so repeats are no easier to store or snapshot.
  const values = Array.from({ length: 256 }, () => JSON.stringify({ data: { value: randomBytes(VALUE_BYTES).toString('base64') } }));
  const step = Math.max(1000, Math.ceil((to - from) / 10));
  const started = Date.now();
  for (let at = from; at < to; at += step) {
    const n = Math.min(step, to - at);
    const left = FILL_LIMIT_S - (Date.now() - started) / 1000;
    const r = await runLoad({
      url: base, method: 'POST', headers: { 'x-vault-token': TOKEN }, concurrency: FILL_CONCURRENCY, seconds: left, count: n,
      path: (i) => `/v1/secret/data/bench/k${at + i}`, body: (i) => values[(at + i) % values.length],
    });
    if (r.errors) throw new Error(`filling: ${r.errors} errors, first: ${r.firstError}`);
    if (r.count < n) throw new Error(`filling: only ${at + r.count - from} of ${to - from} keys in ${FILL_LIMIT_S} s`);
    progress(`filled ${count(at + n)} keys (${fmt((at + n - from) / ((Date.now() - started) / 1000), 0)} keys/s)`);
  }
  return { keys: to - from, seconds: (Date.now() - started) / 1000 };
}

/** The server's RSS once it has been idle a moment: the median of a short run of samples. */
async function baselineRss(sampler) {
  await sleep(SETTLE_MS);
  const from = Date.now();
  await sleep(BASELINE_MS);
  const recent = sampler.samples.filter((s) => s.t >= from);
  return { rss: median(recent.map((s) => s.rss)), anon: median(recent.map((s) => s.anon)) };
}

/**
 * Creates configuration `name` (first snapshot due in one interval, then back to back), waits
 * for SNAPSHOTS of them to complete, and deletes it. Returns each one's size, time and peak RSS.
 */
async function takeSnapshots(api, name, config, sampler) {
  const cpuFrom = sampler.cpu();
  await api('POST', `sys/storage/raft/snapshot-auto/config/${name}`, config);
  const done = [];
  const deadline = Date.now() + SNAPSHOTS_LIMIT_MS;
  let lastEnd = ZERO_TIME;
  try {
    while (done.length < SNAPSHOTS) {
      if (Date.now() > deadline) throw new Error(`${name}: ${done.length} of ${SNAPSHOTS} snapshots in ${SNAPSHOTS_LIMIT_MS / 1000} s`);
      await sleep(STATUS_POLL_MS);
      const s = (await api('GET', `sys/storage/raft/snapshot-auto/status/${name}`)).data;
      if (s.last_snapshot_error) throw new Error(`${name}: snapshot failed: ${s.last_snapshot_error}`);
      if (s.last_snapshot_end === ZERO_TIME || s.last_snapshot_end === lastEnd) continue;
      lastEnd = s.last_snapshot_end;
      const start = Date.parse(s.last_snapshot_start);
      const end = Date.parse(s.last_snapshot_end);
      // RSS is sampled every RSS_SAMPLE_MS, so the window is widened by one sample on each side.
      done.push({ bytes: s.last_snapshot_size, seconds: (end - start) / 1000, peakRss: sampler.max(start - RSS_SAMPLE_MS, end + RSS_SAMPLE_MS) });
      progress(`${name}: snapshot ${done.length}/${SNAPSHOTS}, ${fmt(s.last_snapshot_size / MB)} MB in ${fmt((end - start) / 1000, 2)} s`);
    }
  } finally {
    await api('DELETE', `sys/storage/raft/snapshot-auto/config/${name}`);
  }
  // The server's CPU while they ran, idle polls included (a few ms), per snapshot.
  done.cpu = (sampler.cpu() - cpuFrom) / done.length;
  return done;
}

/**
 * Reads `sys/storage/raft/snapshot` (the stream every destination is fed from) and drops it:
 * how fast the server produces a snapshot when nothing downstream slows it. MB/s.
 */
async function streamRate(base) {
  const started = process.hrtime.bigint();
  const res = await fetch(`${base}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': TOKEN }, signal: AbortSignal.timeout(SNAPSHOTS_LIMIT_MS) });
  if (res.status !== 200) throw new Error(`sys/storage/raft/snapshot: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  let bytes = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) bytes += chunk.value.length;
  return bytes / MB / (Number(process.hrtime.bigint() - started) / 1e9);
}

/** The median of the snapshots by time, and the highest peak RSS among them. */
function summarize(snaps) {
  const seconds = median(snaps.map((s) => s.seconds));
  const bytes = median(snaps.map((s) => s.bytes));
  return {
    seconds, bytes, mbps: bytes / MB / seconds,
    peak: { rss: Math.max(...snaps.map((s) => s.peakRss.rss)), anon: Math.max(...snaps.map((s) => s.peakRss.anon)) },
  };
}

/** At the server's current key count: local snapshots, the raw write of the same size, S3 snapshots. */
async function measureStage({ api, work, s3Url, sampler, keys }) {
  const label = `${count(keys)} keys`;
  progress(`${label}: settling, then the baseline RSS`);
  const baseline = await baselineRss(sampler);
  const localDir = path.join(work, 'snapshots');
  const localSnaps = await takeSnapshots(api, 'bench-local', {
    interval: 1, retain: 1, path_prefix: localDir, storage_type: 'local', local_max_space: 1e12,
  }, sampler);
  const local = summarize(localSnaps);
  // The raw write blocks this process, so it runs between snapshots, never during one.
  const raws = Array.from({ length: SNAPSHOTS }, () => sequentialWriteRate(work, local.bytes).mbps);
  const raw = median(raws);
  const s3 = summarize(await takeSnapshots(api, 'bench-s3', {
    interval: 1, retain: 1, path_prefix: 'bench/', storage_type: 'cloud1-objstore',
    cloud1_objstore_bucket: 'bench', cloud1_objstore_region: 'us-east-1', cloud1_objstore_endpoint: s3Url,
    cloud1_objstore_disable_tls: true, cloud1_objstore_force_path_style: true,
    cloud1_access_key_id: 'bench', cloud1_secret_access_key: 'bench',
  }, sampler));
  const streams = [];
  const streamCpuFrom = sampler.cpu();
  for (let i = 0; i < SNAPSHOTS; i++) streams.push(await streamRate(api.base));
  const streamCpu = (sampler.cpu() - streamCpuFrom) / SNAPSHOTS;
  const stream = median(streams);
  const speed = (r) => `${fmt(r.mbps)} MB/s (${fmt(r.bytes / MB)} MB in ${fmt(r.seconds, 2)} s), raw disk write ${fmt(raw)} MB/s, ratio ${fmt(r.mbps / raw, 2)}`;
  line(`snapshot stream read and dropped, ${label}`, `${fmt(stream)} MB/s (GET sys/storage/raft/snapshot, no destination)`);
  line(`snapshot to local disk, ${label}`, speed(local));
  // Round i's snapshot next to round i's raw write: a machine busy in one round shows up as one outlier.
  line('  per round, local / raw disk write', localSnaps.map((r, i) => fmt(r.bytes / MB / r.seconds / raws[i], 2)).join(', '));
  line('  per round, stream', `${streams.map((r) => fmt(r)).join(', ')} MB/s`);
  line('  server CPU per snapshot', `local ${fmt(localSnaps.cpu, 2)} s, stream ${fmt(streamCpu, 2)} s`);
  line(`snapshot to S3 emulator, ${label}`, speed(s3));
  const over = (r, kind) => (r.peak[kind] - baseline[kind]) / MB;
  line(`peak RSS over baseline, ${label}`,
    `local ${fmt(over(local, 'rss'))} MB, S3 ${fmt(over(s3, 'rss'))} MB (snapshot size ${fmt(local.bytes / MB)} MB, baseline ${fmt(baseline.rss / MB, 0)} MB)`);
  if (!Number.isNaN(baseline.anon)) {
    line('  of which anonymous (not mapped files)', `local ${fmt(over(local, 'anon'))} MB, S3 ${fmt(over(s3, 'anon'))} MB (baseline ${fmt(baseline.anon / MB, 0)} MB)`);
  }
  return {
    keys, local, s3, raw, stream, bytes: local.bytes,
    rss: { local: over(local, 'rss'), s3: over(s3, 'rss') }, anon: { local: over(local, 'anon'), s3: over(s3, 'anon') },
  };
}

/** How the peaks over baseline changed from the smaller stage to the full one, next to the snapshot's growth. */
function growthLine(label, small, full, kind) {
  line(`${label}, ${fmt(full.keys / small.keys, 0)}x the keys`,
    `local ${fmt(small[kind].local)} -> ${fmt(full[kind].local)} MB, S3 ${fmt(small[kind].s3)} -> ${fmt(full[kind].s3)} MB ` +
    `(snapshot ${fmt(small.bytes / MB)} -> ${fmt(full.bytes / MB)} MB)`);
}

async function runSnapshotBench({ keys }) {
  if (!(Number.isInteger(keys) && keys >= 4000)) throw new Error(`BENCH_SNAPSHOT_KEYS must be an integer of at least 4000, not ${keys}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-snapshot-'));
  let server;
  let fauxqs;
  let sampler;
  // Interrupted (Ctrl-C, a timeout's SIGTERM) or crashed (an uncaught error, such as EPIPE when
  // the output is piped to `head`): `finally` will not run, so kill what we started.
  const onExit = () => {
    server?.proc.kill('SIGKILL');
    fauxqs?.proc.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  };
  const onSignal = (signal) => process.exit(signal === 'SIGINT' ? 130 : 143);
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const started = Date.now();
  try {
    console.log(`Snapshots: automated snapshots of a dev server with ${count(keys)} KV v2 keys (${VALUE_BYTES * 4 / 3} B values), ` +
      `median of ${SNAPSHOTS} per destination, at ${count(Math.round(keys / 4))} keys on the way; data in ${work}; MB = 10^6 bytes`);
    fauxqs = await startProcess(['packages/snapshots/src/test-support/start-fauxqs.mjs'], /(http:\/\/127\.0\.0\.1:\d+)\n/, { stdin: 'pipe' });
    const s3Url = fauxqs.match[1];
    // Path-style CreateBucket; the emulator takes any credentials or none.
    const bucket = await fetch(`${s3Url}/bench`, { method: 'PUT' });
    if (bucket.status !== 200) throw new Error(`creating the bucket: ${bucket.status} ${await bucket.text()}`);
    server = await startProcess(['packages/cli/bin/strongroom.js', 'server', '--dev', '--listen', '127.0.0.1:0', '--dev-root-token', TOKEN,
      '--data-dir', path.join(work, 'server')], /Address:\s+(\S+)/);
    const base = server.match[1];
    const api = apiClient(base);
    sampler = startRssSampler(server.proc.pid);

    const stages = [];
    let filled = 0;
    for (const target of [Math.round(keys / 4), keys]) {
      const f = await fill(base, filled, target);
      if (filled) console.log('');
      line(`fill: keys ${count(filled + 1)}-${count(target)}, c=${FILL_CONCURRENCY}`, `${fmt(f.keys / f.seconds, 0)} keys/s (${fmt(f.seconds)} s)`);
      filled = target;
      stages.push(await measureStage({ api, work, s3Url, sampler, keys: target }));
    }

    const [small, full] = stages;
    console.log(`\nRatios (${count(full.keys)} keys; peak RSS is the highest of the ${SNAPSHOTS} snapshots)`);
    ratio('snapshot to local disk MB/s / raw disk write MB/s', full.local.mbps, full.raw);
    ratio('snapshot to S3 emulator MB/s / raw disk write MB/s', full.s3.mbps, full.raw);
    ratio('snapshot to local disk MB/s / snapshot stream read and dropped', full.local.mbps, full.stream);
    // Per byte: a stream that slows as the state grows shows here below 1.
    ratio(`snapshot stream MB/s, ${count(full.keys)} keys / ${count(small.keys)} keys`, full.stream, small.stream);
    ratio('peak RSS over baseline / snapshot size, local', full.rss.local, full.bytes / MB);
    ratio('peak RSS over baseline / snapshot size, S3', full.rss.s3, full.bytes / MB);
    if (!Number.isNaN(full.anon.local)) {
      ratio('peak anonymous RSS over baseline / snapshot size, local', full.anon.local, full.bytes / MB);
      ratio('peak anonymous RSS over baseline / snapshot size, S3', full.anon.s3, full.bytes / MB);
    }
    // Differences, not ratios: a peak over baseline near zero would make any ratio of two of them noise.
    growthLine('peak RSS over baseline', small, full, 'rss');
    if (!Number.isNaN(full.anon.local)) growthLine('peak anon. RSS over baseline', small, full, 'anon');
    progress(`section took ${fmt((Date.now() - started) / 1000, 0)} s`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', onExit);
    sampler?.stop();
    if (server) await stopProcess(server.proc);
    if (fauxqs) await stopProcess(fauxqs.proc);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { runSnapshotBench };

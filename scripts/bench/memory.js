'use strict';
// `node scripts/bench/run.js memory`: where the active node's memory goes as the raft bench's
// load goes from 1 to 64 clients. The same 3-node cluster is loaded with the same KV v2 writes
// (alternating all nodes and the active node only, as the bench's rows do), for
// BENCH_MEMORY_SECONDS per phase; every second the active node's /proc status (VmRSS, RssAnon,
// RssFile) is read, and a preloaded sampler (memory-sampler.js) records its V8 heap spaces,
// external and ArrayBuffer memory and GC time. BENCH_MEMORY_NODE_OPTIONS adds node options to
// the servers, to compare settings in alternating runs. BENCH_MEMORY_HEAP_SNAPSHOT=1 has the
// active node write a V8 heap snapshot into the current directory after the c=64 phase
// (node's --heapsnapshot-signal, no inspector), to see what holds the memory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { measureLoad } = require('./load');
const { line } = require('./report');
const { freeBasePort, stopCluster, launchBenchCluster, kvWrites } = require('./raft-cluster');
const { startProcessCpu } = require('./cpu-usage');

const SECONDS = Number(process.env.BENCH_MEMORY_SECONDS ?? 30);
const HEAP_SNAPSHOT = process.env.BENCH_MEMORY_HEAP_SNAPSHOT === '1';
const MB = 2 ** 20;

function procStatus(pid) {
  const out = {};
  try {
    for (const m of fs.readFileSync(`/proc/${pid}/status`, 'utf8').matchAll(/^(VmRSS|RssAnon|RssFile|RssShmem|VmHWM):\s+(\d+) kB/gm)) out[m[1]] = Number(m[2]) * 1024;
  } catch { /* not Linux, or exited */ }
  return out;
}

/**
 * Resident anonymous memory from /proc/<pid>/smaps: the brk heap, glibc's malloc arenas
 * (a 64 MiB-aligned mapping whose rest up to 64 MiB is reserved, PROT_NONE), and the rest
 * (V8's pages, thread stacks, mmap'd allocations).
 */
function anonByKind(pid) {
  let text;
  try { text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8'); } catch { return {}; }
  const maps = [];
  for (const l of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(l);
    if (head) {
      maps.push({ start: parseInt(head[1], 16), end: parseInt(head[2], 16), perms: head[3], name: head[5].trim(), rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(l);
    if (rss && maps.length) maps[maps.length - 1].rss = Number(rss[1]) * 1024;
  }
  const out = { brk: 0, arenas: 0, arenaCount: 0, other: 0 };
  const ARENA = 64 * MB;
  maps.forEach((m, i) => {
    if (m.name === '[heap]') { out.brk += m.rss; return; }
    if (m.name !== '') return;
    const next = maps[i + 1];
    const arena = m.start % ARENA === 0 && m.perms.startsWith('rw') && (m.end - m.start === ARENA
      || (next && next.start === m.end && next.perms.startsWith('---') && next.end - m.start === ARENA));
    if (arena) { out.arenas += m.rss; out.arenaCount++; } else out.other += m.rss;
  });
  return out;
}

function lastSample(logBase, pid) {
  try {
    const lines = fs.readFileSync(`${logBase}.${pid}`, 'utf8').trim().split('\n');
    return JSON.parse(lines[lines.length - 1]);
  } catch {
    return undefined;
  }
}

const mb = (b) => (b === undefined || Number.isNaN(b) ? '-' : `${(b / MB).toFixed(0)}`);

function snapshot(pid, logBase) {
  return { status: procStatus(pid), anon: anonByKind(pid), v8: lastSample(logBase, pid) };
}

function describe(label, s) {
  const st = s.status;
  const m = s.v8?.mem ?? {};
  const sp = s.v8?.spaces ?? {};
  line(label, `RSS ${mb(st.VmRSS)} MB (anon ${mb(st.RssAnon)}, file ${mb(st.RssFile)}); anon: brk ${mb(s.anon.brk)}, ${s.anon.arenaCount} arenas ${mb(s.anon.arenas)}, other ${mb(s.anon.other)}`);
  line('', `V8 heap ${mb(m.heapTotal)} MB (new ${mb(sp.new_space)}, old ${mb(sp.old_space)}, code ${mb(sp.code_space)}, large ${mb(sp.large_object_space)}); external ${mb(m.external)} (ArrayBuffers ${mb(m.arrayBuffers)})`);
  if (s.v8) line('', `GC so far ${s.v8.gc.ms.toFixed(0)} ms in ${s.v8.gc.count} (${Object.entries(s.v8.gc.byKind).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')})`);
}

/** Signals `pid` to write a heap snapshot and waits (at most two minutes) until its file stops growing. */
async function heapSnapshot(pid) {
  const mine = () => fs.readdirSync('.').filter((f) => f.endsWith('.heapsnapshot') && f.includes(`.${pid}.`));
  const before = new Set(mine());
  process.kill(pid, 'SIGUSR2');
  let last = -1;
  for (let i = 0; i < 120; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const file = mine().find((f) => !before.has(f));
    if (!file) continue;
    const size = fs.statSync(file).size;
    if (size > 0 && size === last) return line('heap snapshot', file);
    last = size;
  }
  line('heap snapshot', 'not written within 120 s');
}

async function runMemoryBench() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-memory-'));
  const logBase = path.join(work, 'memory');
  const extra = `${process.env.BENCH_MEMORY_NODE_OPTIONS ?? ''}${HEAP_SNAPSHOT ? ' --heapsnapshot-signal=SIGUSR2' : ''}`.trim();
  const env = { NODE_OPTIONS: `--require ${path.join(__dirname, 'memory-sampler.js')} ${extra}`.trim(), BENCH_MEMORY_LOG: logBase };
  let cluster;
  const onSignal = () => { cluster?.killAll(); fs.rmSync(work, { recursive: true, force: true }); process.exit(143); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    console.log(`Memory of the active node under KV v2 writes, ${SECONDS}s per phase${extra ? `; server node options: ${extra}` : ''}`);
    const launched = await launchBenchCluster(path.join(work, 'cluster'), await freeBasePort(18510), env);
    cluster = launched.cluster;
    const { active, headers } = launched;
    const pid = active.process.pid;
    const all = cluster.nodes.map((n) => n.apiAddr);
    const peaks = {};
    const phase = async (c) => {
      const cpu = startProcessCpu(pid);
      const gcBefore = lastSample(logBase, pid)?.gc.ms ?? 0;
      const deadline = Date.now() + SECONDS * 1000;
      let count = 0;
      let peak = 0;
      const sampler = setInterval(() => { peak = Math.max(peak, procStatus(pid).VmRSS ?? 0); }, 1000);
      for (let r = 0; Date.now() < deadline; r++) {
        const urls = r % 2 === 0 ? all : [active.apiAddr];
        const result = await measureLoad({ ...kvWrites(urls, headers, `m${c}r${r}`), concurrency: c, seconds: Math.min(5, Math.max(1, (deadline - Date.now()) / 1000)) });
        count += result.count ?? 0;
      }
      clearInterval(sampler);
      await new Promise((r) => setTimeout(r, 1100)); // one more sample from inside the server
      const s = snapshot(pid, logBase);
      peaks[c] = { peak, s };
      const gcMs = (s.v8?.gc.ms ?? 0) - gcBefore;
      line(`c=${c}: ${count} writes`, `${(count / SECONDS).toFixed(0)}/s, CPU ${(cpu.usPerRequest(count) ?? NaN).toFixed(0)} us/write, GC ${(gcMs * 1000 / Math.max(1, count)).toFixed(0)} us/write; peak RSS ${mb(peak)} MB`);
      describe(`after c=${c}`, s);
    };
    describe('idle', snapshot(pid, logBase));
    await phase(1);
    await phase(64);
    if (HEAP_SNAPSHOT) await heapSnapshot(pid);
    const ratio = peaks[64].s.status.VmRSS / peaks[1].s.status.VmRSS;
    line('RSS after c=64 / after c=1', `${ratio.toFixed(2)}x`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (cluster) await stopCluster(cluster);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { runMemoryBench };

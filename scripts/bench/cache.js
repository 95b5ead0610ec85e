'use strict';
// `node scripts/bench/run.js cache`: on the active node of a 3-node cluster (three servers in
// this process, on loopback), how often a KV v2 read of a key that node just wrote still goes to
// the Raft state machine (LevelDB), counted at the storage under the core's cache; and the read
// rate of such keys next to the read rate of keys that were read before (the cached ceiling).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { line, ratio } = require('./report');

const ROOT = path.resolve(__dirname, '../..');
const KEYS = 200;
const READS_PER_KEY = 5;

async function call(base, method, p, token, body) {
  const res = await fetch(`${base}/v1/${p}`, {
    method, headers: token ? { 'x-vault-token': token } : {}, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function startNode(dir, id) {
  const { startServer } = require(path.join(ROOT, 'packages/api/dist'));
  const { silentLogger } = require(path.join(ROOT, 'packages/core/dist'));
  const server = await startServer({
    storage: { type: 'raft', path: path.join(dir, id), nodeId: id },
    listeners: [{
      type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 32 << 20,
      clusterAddress: { host: '127.0.0.1', port: 0 },
    }],
    ui: false, sourceFile: '(bench)', warnings: [],
  }, { logger: silentLogger });
  return { server, url: server.addresses[0] };
}

/** Reads every key `READS_PER_KEY` times; the rate in reads/s. */
async function readAll(base, token, keys) {
  const started = process.hrtime.bigint();
  for (let r = 0; r < READS_PER_KEY; r++) {
    await Promise.all(keys.map((k) => call(base, 'GET', `secret/data/${k}`, token)));
  }
  return (keys.length * READS_PER_KEY) / (Number(process.hrtime.bigint() - started) / 1e9);
}

async function runCacheBench() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-cache-'));
  const nodes = [];
  try {
    const leader = await startNode(dir, 'n1');
    nodes.push(leader);
    const init = await leader.server.core.initialize(1, 1);
    await leader.server.core.unseal(init.keys[0]);
    await leader.server.waitActive();
    const token = init.rootToken;
    await call(leader.url, 'POST', 'sys/mounts/secret', token, { type: 'kv', options: { version: '2' } });
    for (const id of ['n2', 'n3']) {
      const node = await startNode(dir, id);
      nodes.push(node);
      await call(node.url, 'POST', 'sys/storage/raft/join', undefined, { leader_api_addr: leader.url });
      await call(node.url, 'PUT', 'sys/unseal', undefined, { key: init.keys[0].toString('base64') });
    }
    const storage = leader.server.cluster.storage;
    const get = storage.get.bind(storage);
    let logicalReads = 0;
    storage.get = (key) => {
      if (key.startsWith('logical/')) logicalReads++;
      return get(key);
    };

    const warm = Array.from({ length: KEYS }, (_, i) => `warm/${i}`);
    for (const k of warm) await call(leader.url, 'POST', `secret/data/${k}`, token, { data: { v: k } });
    await readAll(leader.url, token, warm); // now read once: cached however they got there
    const written = Array.from({ length: KEYS }, (_, i) => `fresh/${i}`);
    for (const k of written) await call(leader.url, 'POST', `secret/data/${k}`, token, { data: { v: k } });

    // The cached ceiling first, so the JIT and the connections are as warm for the measured side.
    logicalReads = 0;
    const warmRate = await readAll(leader.url, token, warm);
    const warmReads = logicalReads;
    logicalReads = 0;
    const freshRate = await readAll(leader.url, token, written);
    const freshReads = logicalReads;

    console.log(`KV v2 reads on the active node of a 3-node cluster (in this process), ${KEYS} keys x ${READS_PER_KEY} reads`);
    line('LevelDB reads per read of a key it just wrote', `${(freshReads / (KEYS * READS_PER_KEY)).toFixed(2)}  (a KV v2 read needs 2 when nothing is cached)`);
    line('LevelDB reads per read of a key read before', (warmReads / (KEYS * READS_PER_KEY)).toFixed(2));
    ratio('read rate of just-written keys vs keys read before (cached ceiling)', freshRate, warmRate, `${freshRate.toFixed(0)} vs ${warmRate.toFixed(0)} reads/s`);
  } finally {
    for (const n of nodes.reverse()) await n.server.close(1000).catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { runCacheBench };

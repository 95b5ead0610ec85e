'use strict';
// `node scripts/bench/run.js merkle`: replication's Merkle index on 100,000 keys, in this process.
// Applying them as committed changes (10 writes each) next to the hashing alone that any index of
// them needs (two sha256 per key: its leaf and its entry), and a reindex from a storage scan next
// to that hashing plus writing one 32-byte record per key to a LevelDB in batches (its first pass).
// Then writes into a full index, one new key and one rewrite a change, at 10,000 keys and at
// KEYS: what a write costs should not grow with the number of keys.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { hash, randomBytes } = require('node:crypto');
const { line, ratio } = require('./report');

const ROOT = path.resolve(__dirname, '../..');
const KEYS = Number(process.env.BENCH_MERKLE_KEYS ?? 100000);
const PER_CHANGE = 10;

function seconds(started) {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

function makeData() {
  const value = randomBytes(256);
  return Array.from({ length: KEYS }, (_, i) => [`logical/${(i % 97).toString(16).padStart(8, '0')}/secret/k${i}`, value]);
}

function hashCeiling(data) {
  const started = process.hrtime.bigint();
  for (const [key, value] of data) {
    hash('sha256', key, 'buffer');
    hash('sha256', Buffer.concat([Buffer.from(key), value]), 'buffer');
  }
  return seconds(started);
}

async function levelCeiling(dir, data) {
  const { ClassicLevel } = require(require.resolve('classic-level', { paths: [path.join(ROOT, 'packages/replication')] }));
  const db = new ClassicLevel(path.join(dir, 'ceiling'), { keyEncoding: 'utf8', valueEncoding: 'buffer', compression: false });
  await db.open();
  const record = randomBytes(32);
  const started = process.hrtime.bigint();
  for (let i = 0; i < data.length; i += 1024) {
    await db.batch(data.slice(i, i + 1024).map(([key]) => ({ type: 'put', key: `x0000${key}`, value: record })));
  }
  const took = seconds(started);
  await db.close();
  return took;
}

async function applyBench(dir, data) {
  const { MerkleIndexer } = require(path.join(ROOT, 'packages/replication/dist'));
  // A feed that hands the changes over as fast as the indexer takes them, in CommitFeed's batch size.
  const changes = [];
  for (let i = 0; i < data.length; i += PER_CHANGE) {
    changes.push({ index: changes.length + 1, ops: data.slice(i, i + PER_CHANGE).map(([key, value]) => ({ type: 'put', key, value })) });
  }
  const feed = {
    async *follow(from, signal) {
      for (let i = from - 1; i < changes.length; i += 1024) yield changes.slice(i, i + 1024);
      await new Promise((resolve) => signal?.addEventListener('abort', resolve));
    },
  };
  const started = process.hrtime.bigint();
  const indexer = await MerkleIndexer.open({ dir: path.join(dir, 'apply'), feed, scan: () => Promise.reject(new Error('no scan')) });
  await indexer.whenApplied(changes.length);
  await indexer.flush();
  const took = seconds(started);
  await indexer.close();
  return took;
}

/**
 * Seconds to apply `writes` writes (changes of one new key and one rewrite, handed over 64
 * changes at a time, flushed on the indexer's own timer) into an index already holding `data`.
 */
async function steadyBench(dir, data, writes) {
  const { MerkleIndexer } = require(path.join(ROOT, 'packages/replication/dist'));
  const value = randomBytes(256);
  const changes = [];
  for (let i = 0; i < data.length; i += 1024) {
    changes.push({ index: changes.length + 1, ops: data.slice(i, i + 1024).map(([key, v]) => ({ type: 'put', key, value: v })) });
  }
  const filled = changes.length;
  for (let i = 0; i < writes / 2; i++) {
    const ops = [{ type: 'put', key: `logical/fresh/${i}`, value }, { type: 'put', key: data[(i * 7919) % data.length][0], value }];
    changes.push({ index: changes.length + 1, ops });
  }
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const feed = {
    async *follow(from, signal) {
      let i = from - 1;
      for (; i < filled; i += 1024) yield changes.slice(i, Math.min(i + 1024, filled));
      await held;
      for (; i < changes.length; i += 64) yield changes.slice(i, i + 64);
      await new Promise((resolve) => signal?.addEventListener('abort', resolve));
    },
  };
  const indexer = await MerkleIndexer.open({ dir, feed, scan: () => Promise.reject(new Error('no scan')) });
  await indexer.whenApplied(filled);
  await indexer.flush();
  const started = process.hrtime.bigint();
  release();
  await indexer.whenApplied(changes.length);
  await indexer.flush();
  const took = seconds(started);
  await indexer.close();
  return took;
}

async function reindexBench(dir, data) {
  const { MerkleIndexer } = require(path.join(ROOT, 'packages/replication/dist'));
  const sorted = [...data].sort(([a], [b]) => (a < b ? -1 : 1));
  const scan = async () => ({
    index: 1,
    records: (async function* () {
      for (let i = 0; i < sorted.length; i += 1024) yield sorted.slice(i, i + 1024);
    })(),
  });
  const feed = { async *follow(_from, signal) { await new Promise((resolve) => signal?.addEventListener('abort', resolve)); } };
  const indexer = await MerkleIndexer.open({ dir: path.join(dir, 'reindex'), feed, scan });
  const started = process.hrtime.bigint();
  indexer.reindex();
  const deadline = Date.now() + 300_000;
  while (indexer.reindexPending && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  const took = seconds(started);
  const status = indexer.status();
  await indexer.close();
  if (status.reindex?.error || status.applied !== 1) throw new Error(`reindex did not finish: ${status.reindex?.error ?? 'timed out'}`);
  return took;
}

async function runMerkleBench() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-merkle-'));
  try {
    const data = makeData();
    console.log(`Merkle index of ${KEYS.toLocaleString('en')} keys (256-byte values), in this process`);
    const hashing = hashCeiling(data);
    line('ceiling: two sha256 per key', `${hashing.toFixed(2)} s`);
    const apply = await applyBench(dir, data);
    ratio(`apply in changes of ${PER_CHANGE} writes, then flush (keys/s vs ceiling)`, KEYS / apply, KEYS / hashing, `${apply.toFixed(2)} s`);
    const writing = await levelCeiling(dir, data);
    line('ceiling: the hashing, then LevelDB batch writes of a record per key', `${(hashing + writing).toFixed(2)} s`);
    const reindex = await reindexBench(dir, data);
    ratio('reindex from a storage scan (keys/s vs ceiling)', KEYS / reindex, KEYS / (hashing + writing), `${reindex.toFixed(2)} s`);
    const writes = 20000;
    const small = await steadyBench(path.join(dir, 'steady-small'), data.slice(0, 10000), writes);
    line(`ceiling: ${writes.toLocaleString('en')} writes into an index of 10,000 keys`, `${((small * 1e6) / writes).toFixed(1)} us a write`);
    const large = await steadyBench(path.join(dir, 'steady-large'), data, writes);
    ratio(`the same writes into an index of ${KEYS.toLocaleString('en')} keys (writes/s vs 10,000 keys)`, writes / large, writes / small, `${((large * 1e6) / writes).toFixed(1)} us a write`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { runMerkleBench };

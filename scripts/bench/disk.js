'use strict';
// Disk ceilings for a Raft write, measured in the run that uses them: how often this filesystem
// makes a small append durable, raw (write + fdatasync) and through classic-level (a one-put
// batch with { sync: true }, which is how the Raft log store persists). One writer, one record
// at a time: batching several writes into one sync is the server's job, and its ratio to these
// numbers shows how well it does it. For snapshots, the ceiling is instead how fast the same
// filesystem takes a large file written sequentially and synced (sequentialWriteRate).
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { ClassicLevel } = require('classic-level');

function summarize(latencies, elapsedSeconds) {
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
  return { rate: latencies.length / elapsedSeconds, p50: pct(0.5), p99: pct(0.99), errors: 0, count: latencies.length };
}

/** Appends a 64-byte record and fdatasyncs it, in a loop, for `seconds`. Blocks the event loop. */
function fsyncRate(dir, seconds) {
  const file = path.join(dir, 'fsync.bin');
  const fd = fs.openSync(file, 'a');
  const record = Buffer.alloc(64, 1);
  const latencies = [];
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  try {
    for (;;) {
      const t = process.hrtime.bigint();
      if (t >= deadline) break;
      fs.writeSync(fd, record);
      fs.fdatasyncSync(fd);
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
  return summarize(latencies, Number(process.hrtime.bigint() - start) / 1e9);
}

/** One synced single-put batch at a time into a fresh classic-level database, for `seconds`. */
async function levelSyncedBatchRate(dir, seconds) {
  const location = path.join(dir, 'level');
  const db = new ClassicLevel(location, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
  await db.open();
  const value = Buffer.alloc(128, 2);
  const latencies = [];
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  try {
    for (let i = 0; ; i++) {
      const t = process.hrtime.bigint();
      if (t >= deadline) break;
      await db.batch([{ type: 'put', key: `e${String(i).padStart(12, '0')}`, value }], { sync: true });
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  } finally {
    await db.close();
    fs.rmSync(location, { recursive: true, force: true });
  }
  return summarize(latencies, Number(process.hrtime.bigint() - start) / 1e9);
}

/**
 * Writes `bytes` to a new file in 4 MiB writes of random data, then fsyncs it: the speed a
 * snapshot file of that size could reach at best. Blocks the event loop. MB/s with MB = 10^6 bytes.
 */
function sequentialWriteRate(dir, bytes) {
  const file = path.join(dir, 'sequential.bin');
  // Random, so no layer below can compress or deduplicate what a snapshot could not.
  const chunk = randomBytes(4 * 1024 * 1024);
  const fd = fs.openSync(file, 'w');
  const start = process.hrtime.bigint();
  try {
    for (let written = 0; written < bytes;) {
      written += fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - written));
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  fs.rmSync(file, { force: true });
  return { bytes, seconds, mbps: bytes / 1e6 / seconds };
}

module.exports = { fsyncRate, levelSyncedBatchRate, sequentialWriteRate };

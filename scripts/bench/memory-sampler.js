'use strict';
// Preloaded into a server by the `memory` bench section (NODE_OPTIONS=--require): once a second
// it appends the process's own view of its memory and its GC time so far to the file that
// BENCH_MEMORY_LOG names (one file per pid). The server itself has no such endpoint.
const fs = require('node:fs');
const v8 = require('node:v8');
const { PerformanceObserver } = require('node:perf_hooks');
const { isMainThread } = require('node:worker_threads');

// Workers load the preload too; their heaps are their own.
if (isMainThread) start();

function start() {
const file = `${process.env.BENCH_MEMORY_LOG}.${process.pid}`;
const gc = { ms: 0, count: 0, byKind: {} };
const KINDS = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-callbacks' };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.ms += e.duration;
    gc.count++;
    const kind = KINDS[e.detail?.kind] ?? String(e.detail?.kind);
    gc.byKind[kind] = (gc.byKind[kind] ?? 0) + e.duration;
  }
}).observe({ entryTypes: ['gc'] });

setInterval(() => {
  const spaces = {};
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_size > 0) spaces[s.space_name] = s.space_size;
  fs.appendFileSync(file, `${JSON.stringify({ t: Date.now(), mem: process.memoryUsage(), spaces, gc })}\n`);
}, 1000).unref();
}

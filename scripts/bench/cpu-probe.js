'use strict';
// The same fixed piece of CPU work, timed at the start and the end of a bench run. On a shared
// or throttled machine the CPU's speed can change within minutes; rows measured at different
// speeds should not be compared with each other, and the report says so.
const { hash } = require('node:crypto');

const ROUNDS = 3;
const WORK = 20000;

/** Milliseconds for the fixed work: the best of a few tries, so one preemption does not count. */
function probeMs() {
  const block = Buffer.alloc(1024, 7);
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint();
    let x = 0;
    for (let i = 0; i < WORK; i++) x += hash('sha256', block, 'buffer')[0] + (i % 7);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (x < 0) throw new Error('unreachable');
    best = Math.min(best, ms);
  }
  return best;
}

/** One line comparing the probe at the start and end of the run, with a warning past a 20% change. */
function describeDrift(startMs, endMs) {
  const change = (endMs - startMs) / startMs;
  const line = `CPU probe: ${startMs.toFixed(0)} ms at the start, ${endMs.toFixed(0)} ms at the end (${change >= 0 ? '+' : ''}${(change * 100).toFixed(0)}%)`;
  return Math.abs(change) > 0.2 ? `${line}; the machine's speed changed during the run, so rows measured apart are not comparable` : line;
}

module.exports = { probeMs, describeDrift };

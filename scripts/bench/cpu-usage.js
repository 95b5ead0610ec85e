'use strict';
// CPU time of server processes per request, by thread kind, from /proc (Linux only): it shows
// which process and which of its threads a load is bound by. Elsewhere it reports nothing.
const fs = require('node:fs');

const TICK_US = 1e6 / 100; // USER_HZ, 100 on every Linux this runs on

/** User + system ticks per thread name of `pid` (node's main thread, GC helpers, libuv pool). */
function threadTicks(pid) {
  const out = new Map();
  let tasks;
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(name, (out.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]));
  }
  return out;
}

/** Snapshots the threads of `processes` ({label, pid}); `perRequest(count)` then formats the difference. */
function startCpuSample(processes) {
  if (!fs.existsSync('/proc/self/task')) return { perRequest: () => null };
  const before = processes.map((p) => threadTicks(p.pid));
  return {
    perRequest(count) {
      if (count <= 0) return null;
      return processes.map((p, i) => {
        const after = threadTicks(p.pid);
        const parts = [];
        for (const [name, ticks] of after) {
          const us = ((ticks - (before[i].get(name) ?? 0)) * TICK_US) / count;
          if (us >= 1) parts.push(`${name} ${us.toFixed(0)}`);
        }
        return `${p.label}: ${parts.join(', ') || 'idle'}`;
      }).join('; ');
    },
  };
}

/**
 * Snapshots the CPU of one process (all its threads); `usPerRequest(count)` answers the
 * microseconds it spent per request since, or null where /proc is missing.
 */
function startProcessCpu(pid) {
  const total = () => [...threadTicks(pid).values()].reduce((a, b) => a + b, 0);
  if (!fs.existsSync('/proc/self/task')) return { usPerRequest: () => null };
  const before = total();
  return { usPerRequest: (count) => (count > 0 ? ((total() - before) * TICK_US) / count : null) };
}

module.exports = { startCpuSample, startProcessCpu };

'use strict';
// The load generator when the Debian package `wrk` is installed: a C client spends a fraction
// of the CPU our JS client does per request, so on a 2-core machine more of it is left to the
// servers being measured (ours, etcd, the echo ceiling alike). Requests come from a Lua script
// written per run; each target URL gets its own wrk process, and their results are merged.
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { findOnPath } = require('./which');

function findWrk() {
  return process.env.BENCH_CLIENT === 'node' ? undefined : findOnPath('wrk');
}

const luaString = (s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

// Base64 in plain Lua (wrk's LuaJIT has none), for etcd's base64 keys.
const LUA_BASE64 = `
local b64chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
local function b64(data)
  return ((data:gsub('.', function(x)
    local r, b = '', x:byte()
    for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and '1' or '0') end
    return r
  end) .. '0000'):gsub('%d%d%d?%d?%d?%d?', function(x)
    if #x < 6 then return '' end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == '1' and 2 ^ (6 - i) or 0) end
    return b64chars:sub(c + 1, c + 1)
  end) .. ({ '', '==', '=' })[#data % 3 + 1])
end
`;

/**
 * The script for one target. `spec.uniquePath` appends a counter to the path; `spec.etcdPut`
 * sends etcd's /v3/kv/put with key <prefix><counter>; otherwise every request is the same.
 * done() prints the count, errors and latency at many percentiles (us), for merging.
 */
function script(spec, prefix) {
  const headers = Object.entries({ ...(spec.headers ?? {}), ...(spec.body !== undefined ? { 'Content-Type': 'application/json' } : {}) })
    .map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`).join('\n');
  let request = '';
  if (spec.uniquePath) {
    request = `request = function() counter = counter + 1; return wrk.format(nil, ${luaString(spec.uniquePath + prefix)} .. counter) end`;
  } else if (spec.etcdPut) {
    request = `${LUA_BASE64}
local value = b64(${luaString(spec.etcdPut.value)})
request = function()
  counter = counter + 1
  return wrk.format(nil, nil, nil, '{"key":"' .. b64(${luaString(spec.etcdPut.prefix + prefix)} .. counter) .. '","value":"' .. value .. '"}')
end`;
  }
  return `local counter = 0
wrk.method = ${luaString(spec.method ?? 'GET')}
${spec.body !== undefined ? `wrk.body = ${luaString(spec.body)}` : ''}
${headers}
${request}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT count=%d errors=%d status=%d us=%d\\n", summary.requests, e.connect + e.read + e.write + e.timeout, e.status, summary.duration))
  for p = 0.5, 99.5, 0.5 do io.write(string.format("PCT %.1f %d\\n", p, latency:percentile(p))) end
  io.write(string.format("PCT 99.9 %d\\n", latency:percentile(99.9)))
end
`;
}

function runOne(bin, url, spec, prefix, concurrency, dir) {
  const file = path.join(dir, `${prefix}.lua`);
  fs.writeFileSync(file, script(spec, prefix));
  const target = new URL(url);
  const base = `${target.protocol}//${target.host}${target.pathname}${target.search}`;
  return new Promise((resolve, reject) => {
    execFile(bin, ['-t1', `-c${concurrency}`, `-d${Math.max(1, Math.round(spec.seconds))}s`, '--timeout', '10s', '-s', file, base], { timeout: (Math.max(1, Math.round(spec.seconds)) + 30) * 1000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`wrk failed: ${err.message} ${stderr}`));
      const m = /RESULT count=(\d+) errors=(\d+) status=(\d+) us=(\d+)/.exec(stdout);
      if (!m) return reject(new Error(`wrk printed no result: ${stdout} ${stderr}`));
      const pct = [...stdout.matchAll(/PCT ([\d.]+) (\d+)/g)].map((p) => ({ p: Number(p[1]), ms: Number(p[2]) / 1000 }));
      resolve({ count: Number(m[1]), errors: Number(m[2]) + Number(m[3]), seconds: Number(m[4]) / 1e6, pct, status: Number(m[3]) });
    });
  });
}

/**
 * Runs `spec.concurrency` connections split over `spec.url` (one wrk per URL) for
 * `spec.seconds`; answers like load.js's runLoad. With several URLs, p50 and p99 come from the
 * per-process percentiles weighted by request count: close, not exact.
 */
async function runWrk(bin, spec) {
  const urls = Array.isArray(spec.url) ? spec.url : [spec.url];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-wrk-'));
  try {
    const shares = urls.map((_, i) => Math.floor(spec.concurrency / urls.length) + (i < spec.concurrency % urls.length ? 1 : 0));
    const results = await Promise.all(urls.map((u, i) => (shares[i] > 0
      ? runOne(bin, u, spec, `${spec.prefix ?? 'r'}${i}_`, shares[i], dir) : null)));
    const ran = results.filter(Boolean);
    const count = ran.reduce((n, r) => n + r.count, 0);
    const seconds = Math.max(...ran.map((r) => r.seconds));
    // Each process's 0.5%-step percentiles stand for equal shares of its requests.
    const grid = (r) => r.pct.filter((x) => x.p !== 99.9);
    const points = ran.flatMap((r) => grid(r).map((x) => ({ ms: x.ms, w: r.count / grid(r).length }))).sort((a, b) => a.ms - b.ms);
    const total = points.reduce((n, x) => n + x.w, 0);
    const at = (q) => {
      if (ran.length === 1) return ran[0].pct.find((x) => x.p === q * 100)?.ms ?? 0;
      let acc = 0;
      for (const x of points) if ((acc += x.w) >= q * total - 1e-9) return x.ms;
      return points[points.length - 1]?.ms ?? 0;
    };
    const errors = ran.reduce((n, r) => n + r.errors, 0);
    const status = ran.reduce((n, r) => n + r.status, 0);
    return { rate: count / seconds, p50: at(0.5), p99: at(0.99), errors, count, ...(errors ? { firstError: `${status} non-2xx answers, ${errors - status} socket errors` } : {}) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { findWrk, runWrk };

'use strict';
// A closed-loop HTTP load generator: `concurrency` clients on keep-alive connections, each
// sending its next request when the previous answer arrives, for a fixed time.
const http = require('node:http');

/**
 * `url` may list several servers: request i goes to url[i % url.length], so even one client
 * visits them all (its path still comes from the URL unless `path` gives one per request).
 * With `count`, it stops after that many requests, or at `seconds`, whichever comes first.
 * @param {{url: string | string[], path?: (i: number) => string, method?: string, headers?: Record<string,string>,
 *          body?: (i: number) => string, concurrency: number, seconds: number, count?: number, expect?: number}} opts
 */
async function runLoad(opts) {
  const targets = (Array.isArray(opts.url) ? opts.url : [opts.url]).map((u) => new URL(u));
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const deadline = Date.now() + opts.seconds * 1000;
  const latencies = [];
  let errors = 0;
  let firstError;
  let seq = 0;
  const one = () => new Promise((resolve) => {
    const i = seq++;
    const target = targets[i % targets.length];
    const body = opts.body ? opts.body(i) : undefined;
    const started = process.hrtime.bigint();
    const req = http.request({
      agent, host: target.hostname, port: target.port, path: opts.path ? opts.path(i) : target.pathname + target.search, method: opts.method ?? 'GET',
      headers: { ...(opts.headers ?? {}), ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => { if (res.statusCode !== (opts.expect ?? 200)) chunks.push(c); });
      res.on('end', () => {
        if (res.statusCode !== (opts.expect ?? 200)) {
          errors++;
          firstError ??= `${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 200)}`;
        }
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        resolve();
      });
    });
    req.on('error', (err) => { errors++; firstError ??= err.message; resolve(); });
    req.end(body);
  });
  const count = opts.count ?? Infinity;
  const client = async () => { while (Date.now() < deadline && seq < count) await one(); };
  const start = Date.now();
  await Promise.all(Array.from({ length: opts.concurrency }, client));
  const elapsed = (Date.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
  return { rate: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), errors, firstError, count: latencies.length };
}


const { findWrk, runWrk } = require('./wrk');

const WRK = findWrk();

/** Which client `measureLoad` drives the servers with, for the report's header. */
function clientName() {
  return WRK ? `wrk (${WRK})` : 'the built-in node:http client (install the Debian package wrk for a lighter one, or BENCH_CLIENT=node to keep this one)';
}

/**
 * A declarative load that either client can run: `body` a string; `uniquePath` gives request
 * i the path uniquePath + prefix + i; `etcdPut: {prefix, value}` sends etcd puts of fresh keys.
 * @param {{url: string | string[], method?: string, headers?: Record<string,string>, body?: string, uniquePath?: string,
 *          etcdPut?: {prefix: string, value: string}, prefix?: string, concurrency: number, seconds: number}} spec
 */
function measureLoad(spec) {
  if (WRK) return runWrk(WRK, spec);
  const prefix = spec.prefix ?? 'r';
  const b64 = (s) => Buffer.from(s).toString('base64');
  return runLoad({
    url: spec.url, method: spec.method, headers: spec.headers, concurrency: spec.concurrency, seconds: spec.seconds,
    ...(spec.uniquePath ? { path: (i) => `${spec.uniquePath}${prefix}${i}` } : {}),
    ...(spec.etcdPut ? { body: (i) => JSON.stringify({ key: b64(`${spec.etcdPut.prefix}${prefix}${i}`), value: b64(spec.etcdPut.value) }) }
      : spec.body !== undefined ? { body: () => spec.body } : {}),
  });
}

module.exports = { runLoad, measureLoad, clientName };

'use strict';
// Secret sync to the cloud1-sm emulator: the time from a KV write to its value being readable at
// the emulator (p50/p99, polled) next to the KV write's own latency in the same run, and the
// syncs/s of 1,000 secrets into one destination next to the emulator's own ceiling measured in
// the same run (direct SDK CreateSecret calls at the same concurrency, one at a time: the queue
// runs its operations in order, one at a time).
const { CreateSecretCommand, GetSecretValueCommand, SecretsManagerClient } = require('@aws-sdk/client-secrets-manager');
const { line, row } = require('./report');
const { startProcess, stopProcess } = require('./process');

const TOKEN = 'bench-root';
const LATENCY_WRITES = Number(process.env.BENCH_SYNC_WRITES ?? 200);
const SECRETS = Number(process.env.BENCH_SYNC_SECRETS ?? 1000);
const DEADLINE_MS = 120_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

function summary(latencies, seconds) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { rate: latencies.length / seconds, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), errors: 0 };
}

async function runSyncBench() {
  const emulator = await startProcess(['packages/emulators/bin/strongroom-emulator.js', 'cloud1', '--listen', '127.0.0.1:0'],
    /api \(IAM, STS, EC2\): (\S+)[\s\S]*CLOUD1_ACCESS_KEY=(\S+)\s+CLOUD1_SECRET_KEY=(\S+)/, { stdin: 'pipe' });
  const [, api, accessKeyId, secretAccessKey] = emulator.match;
  // An operator setting of the server process, read at its start.
  const previous = process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER;
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = api;
  let server;
  try {
    server = await startProcess(['packages/cli/bin/strongroom.js', 'server', '--dev', '--listen', '127.0.0.1:0', '--dev-root-token', TOKEN], /Address:\s+(\S+)/);
  } finally {
    if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER;
    else process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = previous;
  }
  const base = server.match[1];
  const sm = new SecretsManagerClient({ endpoint: api, region: 'us-east-1', credentials: { accessKeyId, secretAccessKey }, maxAttempts: 1 });
  const call = async (method, path, body, headers = {}) => {
    const res = await fetch(`${base}/v1/${path}`, {
      method, headers: { 'x-vault-token': TOKEN, 'content-type': 'application/json', ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const readAt = async (name) => {
    try {
      return (await sm.send(new GetSecretValueCommand({ SecretId: name }))).SecretString;
    } catch {
      return undefined;
    }
  };
  try {
    await call('POST', 'sys/sync/destinations/cloud1-sm/bench', { access_key_id: accessKeyId, secret_access_key: secretAccessKey, region: 'us-east-1' });
    const accessor = (await call('GET', 'sys/mounts/secret')).data.accessor;
    console.log(`Secret sync to the cloud1-sm emulator (its own process), ${LATENCY_WRITES} writes of one secret, then ${SECRETS} secrets into one destination`);

    // KV write -> readable at the emulator, one write at a time.
    await call('POST', 'secret/data/bench/latency', { data: { v: '0' } });
    await call('POST', 'sys/sync/destinations/cloud1-sm/bench/associations/set', { mount: 'secret', secret_name: 'bench/latency' });
    const name = `vault/${accessor}/bench/latency`;
    const writes = [];
    const visible = [];
    const started = Date.now();
    for (let i = 1; i <= LATENCY_WRITES && Date.now() - started < DEADLINE_MS / 2; i++) {
      const want = JSON.stringify({ v: String(i) });
      const t0 = performance.now();
      await call('POST', 'secret/data/bench/latency', { data: { v: String(i) } });
      writes.push(performance.now() - t0);
      for (let polls = 0; (await readAt(name)) !== want; polls++) {
        if (performance.now() - t0 > 30_000) throw new Error(`write ${i} never reached the emulator`);
        await sleep(1);
      }
      visible.push(performance.now() - t0);
    }
    const seconds = (Date.now() - started) / 1000;
    row('KV v2 write (its own latency), c=1', summary(writes, seconds));
    row('KV v2 write -> readable at cloud1-sm, c=1', summary(visible, seconds));

    // Ceiling: the emulator creating SECRETS secrets through the SDK, one at a time.
    let t0 = performance.now();
    for (let i = 0; i < SECRETS; i++) await sm.send(new CreateSecretCommand({ Name: `ceiling/s${i}`, SecretString: JSON.stringify({ v: String(i) }) }));
    const ceiling = { rate: SECRETS / ((performance.now() - t0) / 1000), p50: 0, p99: 0, errors: 0 };
    row(`ceiling: SDK CreateSecret x${SECRETS}, c=1`, ceiling);

    // SECRETS associations queued while sync is disabled, then drained.
    await call('PATCH', 'sys/sync/config', { disabled: true }, { 'content-type': 'application/merge-patch+json' });
    for (let i = 0; i < SECRETS; i++) {
      await call('POST', `secret/data/bulk/s${i}`, { data: { v: String(i) } });
      await call('POST', 'sys/sync/destinations/cloud1-sm/bench/associations/set', { mount: 'secret', secret_name: `bulk/s${i}` });
    }
    t0 = performance.now();
    await call('PATCH', 'sys/sync/config', { disabled: false }, { 'content-type': 'application/merge-patch+json' });
    // Operations run in order: the last secret readable means every one before it is done.
    const last = `vault/${accessor}/bulk/s${SECRETS - 1}`;
    while ((await readAt(last)) === undefined) {
      if (performance.now() - t0 > DEADLINE_MS) throw new Error(`the ${SECRETS} syncs did not finish in ${DEADLINE_MS / 1000} s`);
      await sleep(20);
    }
    const drained = (performance.now() - t0) / 1000;
    row(`sync of ${SECRETS} secrets, one destination (syncs/s)`, { rate: SECRETS / drained, p50: 0, p99: 0, errors: 0 }, ceiling);
    line('  (each sync of a new secret is two calls:', 'PutSecretValue, refused as not found, then CreateSecret)');
  } finally {
    sm.destroy();
    await stopProcess(server.proc);
    await stopProcess(emulator.proc);
  }
}

module.exports = { runSyncBench };

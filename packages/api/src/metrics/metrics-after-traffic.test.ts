import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DeployhostProjectEmulator } from '@strongroom/emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';
import { eventually, operatorSettings } from '../test-support/sync-support';
import { parseExposition, sumOf, valueOf, type Sample } from './test-support/exposition';

/**
 * `sys/metrics` on a real server (a cluster of one) after traffic of every kind: requests, Raft
 * writes, a replication primary, automated snapshots and secret sync. Each family is there with
 * values that follow from the traffic sent.
 */
describe('metrics after traffic', () => {
  let t: TestServer;
  let root: string;
  let dir: string;
  let deployhost: DeployhostProjectEmulator;
  const settings = operatorSettings();

  beforeAll(async () => {
    deployhost = await DeployhostProjectEmulator.start();
    settings.set('STRONGROOM_DEPLOYHOST_API_URL', deployhost.url);
    t = await startTestServer();
    root = await initAndUnseal(t);
    dir = mkdtempSync(join(tmpdir(), 'metrics-snapshots-'));
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await deployhost?.close();
    settings.restore();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const send = (method: string, path: string, body?: unknown, token: string | undefined = root) =>
    call(t.url, method, path, { ...(token ? { token } : {}), ...(body !== undefined ? { body } : {}) });

  async function scrape(): Promise<{ samples: Sample[]; types: Map<string, string>; text: string }> {
    const r = await fetch(`${t.url}/v1/sys/metrics?format=prometheus`, { headers: { 'x-vault-token': root } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await r.text();
    return { ...parseExposition(text), text };
  }

  it('counts requests and their latency by mount type and operation, failures apart', async () => {
    for (let i = 0; i < 3; i++) expect((await send('POST', `secret/data/app${i}`, { data: { v: `${i}` } })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await send('GET', 'secret/data/app0')).status).toBe(200);
    expect((await send('POST', 'transit/keys/k', undefined)).status).toBe(404);
    expect((await send('POST', 'sys/mounts/transit', { type: 'transit' })).status).toBe(204);
    expect((await send('POST', 'transit/encrypt/k', { plaintext: Buffer.from('hi').toString('base64') })).status).toBe(200);
    const child = (await send('POST', 'auth/token/create', { policies: ['default'] })).json.auth.client_token as string;
    expect((await send('GET', 'auth/token/lookup-self', undefined, child)).status).toBe(200);
    expect((await send('GET', 'secret/data/app0', undefined, child)).status).toBe(403);
    expect((await send('GET', 'secret/data/app0', undefined, 'not-a-token')).status).toBe(403);

    const { samples, types } = await scrape();
    expect(types.get('vault_core_handle_request')).toBe('summary');
    const count = (mountType: string, operation: string) => valueOf(samples, 'vault_core_handle_request_count', { mount_type: mountType, operation }) ?? 0;
    expect(count('kv', 'create')).toBeGreaterThanOrEqual(3);
    expect(count('kv', 'read')).toBeGreaterThanOrEqual(6);
    // An encrypt that creates its key is a `create` to the ACL.
    expect(count('transit', 'create')).toBeGreaterThanOrEqual(1);
    expect(count('token', 'read')).toBeGreaterThanOrEqual(1);
    expect(count('system', 'update')).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'vault_core_handle_request_sum', { mount_type: 'kv', operation: 'create' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_core_handle_request', { mount_type: 'kv', operation: 'read', quantile: '0.5' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'strongroom_core_handle_request_errors', { mount_type: 'kv', operation: 'read' })).toBeGreaterThanOrEqual(2);
    // Before the transit mount existed its path reached no mount.
    expect(sumOf(samples, 'strongroom_core_handle_request_errors', { mount_type: 'none' })).toBeGreaterThanOrEqual(1);
    // The only labels a request carries.
    for (const s of samples.filter((x) => x.name.startsWith('vault_core_handle_request'))) {
      expect(Object.keys(s.labels).filter((k) => k !== 'quantile').sort()).toEqual(['mount_type', 'operation']);
    }
  });

  it('shows the seal status, Raft and the Node process', async () => {
    const { samples, types } = await scrape();
    expect(valueOf(samples, 'vault_core_unsealed')).toBe(1);
    expect(valueOf(samples, 'vault_core_active')).toBe(1);
    expect(valueOf(samples, 'strongroom_raft_leader')).toBe(1);
    expect(valueOf(samples, 'strongroom_raft_term')).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'strongroom_raft_last_index')).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_raft_storage_stats_commit_index')).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_raft_storage_stats_applied_index')).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_raft_peers')).toBe(1);
    expect(valueOf(samples, 'vault_raft_apply')).toBeGreaterThan(3);
    expect(types.get('vault_raft_commitTime')).toBe('summary');
    expect(valueOf(samples, 'vault_raft_commitTime_count')).toBe(valueOf(samples, 'vault_raft_apply'));
    expect(valueOf(samples, 'vault_raft_commitTime_sum')).toBeGreaterThan(0);
    expect(valueOf(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(valueOf(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(1_000_000);
    expect(types.get('nodejs_gc_duration_seconds')).toBe('histogram');
    expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('shows a replication primary\'s WAL and window', async () => {
    expect((await send('POST', 'sys/replication/dr/primary/enable', {})).status).toBe(200);
    await send('POST', 'secret/data/after-enable', { data: { v: 'x' } });
    const { samples } = await scrape();
    const lastWal = valueOf(samples, 'vault_replication_wal_last_wal') ?? 0;
    expect(lastWal).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_replication_wal_last_dr_wal')).toBe(lastWal);
    expect(valueOf(samples, 'vault_replication_wal_last_performance_wal')).toBe(0);
    expect(valueOf(samples, 'vault_replication_fsm_last_remote_wal')).toBe(0);
    expect(valueOf(samples, 'strongroom_replication_wal_window_entries')).toBeGreaterThan(0);
    expect(valueOf(samples, 'strongroom_replication_wal_window_bytes')).toBeGreaterThan(0);
    expect(samples.some((s) => s.name === 'strongroom_replication_merkle_sync_runs')).toBe(false);
    // A secondary token names a secondary, but one never activated is none yet.
    expect(samples.some((s) => s.name === 'strongroom_replication_secondary_last_remote_wal')).toBe(false);
  });

  it('times automated snapshots and counts their failures per configuration', async () => {
    const base = 'sys/storage/raft/snapshot-auto/config';
    expect((await send('POST', `${base}/good`, { interval: 1, retain: 1, path_prefix: join(dir, 'good'), storage_type: 'local', local_max_space: 100_000_000 })).status).toBe(204);
    // Room for no snapshot at all: every attempt fails.
    expect((await send('POST', `${base}/full`, { interval: 1, retain: 1, path_prefix: join(dir, 'full'), storage_type: 'local', local_max_space: 1 })).status).toBe(204);
    const { samples } = await eventually('a snapshot by each configuration', scrape, ({ samples: s }) =>
      (valueOf(s, 'vault_autosnapshots_save_duration_count', { snapshot_config_name: 'good' }) ?? 0) >= 1 &&
      (valueOf(s, 'vault_autosnapshots_save_errors', { snapshot_config_name: 'full' }) ?? 0) >= 1);
    expect(valueOf(samples, 'vault_autosnapshots_save_duration_sum', { snapshot_config_name: 'good' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_autosnapshots_snapshot_size', { snapshot_config_name: 'good' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'vault_autosnapshots_last_success_time', { snapshot_config_name: 'good' })).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(valueOf(samples, 'vault_autosnapshots_save_errors', { snapshot_config_name: 'good' })).toBeUndefined();
    expect((await send('DELETE', `${base}/good`)).status).toBe(204);
    expect((await send('DELETE', `${base}/full`)).status).toBe(204);
    // A deleted configuration is no longer reported.
    const after = (await scrape()).samples;
    expect(after.filter((s) => s.name.startsWith('vault_autosnapshots_') && ['good', 'full'].includes(String(s.labels.snapshot_config_name)))).toEqual([]);
  });

  it('shows the sync queue and counts operations by destination type and status', async () => {
    const { token } = deployhost.createToken({ teams: ['team_a'] });
    const project = deployhost.createProject({ name: 'web', teamId: 'team_a' });
    expect((await send('POST', 'sys/sync/destinations/deployhost-project/vc', {
      access_token: token, project_id: project.id, team_id: 'team_a', deployment_environments: ['production'],
    })).status).toBe(200);
    await send('POST', 'secret/data/web', { data: { api_key: 'k1' } });
    expect((await send('POST', 'sys/sync/destinations/deployhost-project/vc/associations/set', { mount: 'secret', secret_name: 'web' })).status).toBe(200);
    const { samples } = await eventually('a sync operation counted', scrape, ({ samples: s }) =>
      (valueOf(s, 'strongroom_sync_operations_total', { destination_type: 'deployhost-project', status: 'SYNCED' }) ?? 0) >= 1);
    expect(valueOf(samples, 'strongroom_sync_queue_depth')).toBeGreaterThanOrEqual(0);
  });

  it('serves the same registry as Vault\'s JSON without a format', async () => {
    const r = await send('GET', 'sys/metrics');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const body = r.json as { Timestamp: string; Gauges: any[]; Counters: any[]; Samples: any[] };
    expect(Date.parse(body.Timestamp)).toBeGreaterThan(0);
    expect(body.Gauges.find((g) => g.Name === 'vault_core_unsealed')).toEqual({ Name: 'vault_core_unsealed', Value: 1, Labels: {} });
    expect(body.Counters.find((c) => c.Name === 'vault_raft_apply').Count).toBeGreaterThan(0);
    const kvReads = body.Samples.find((s) => s.Name === 'vault_core_handle_request' && s.Labels.mount_type === 'kv' && s.Labels.operation === 'read');
    expect(kvReads.Count).toBeGreaterThanOrEqual(6);
    expect(kvReads.Sum).toBeGreaterThan(0);
    expect(kvReads.Mean).toBeCloseTo(kvReads.Sum / kvReads.Count);
  });

  it('exports every metric the Grafana dashboard queries', async () => {
    const dashboard = JSON.parse(readFileSync(resolve(__dirname, '../../../../deploy/grafana/strongroom-dashboard.json'), 'utf8'));
    expect(dashboard.templating.list.find((v: { name: string }) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const targets = (dashboard.panels as Array<{ type: string; targets?: Array<{ expr: string; datasource: { uid: string } }> }>)
      .filter((p) => p.type !== 'row').flatMap((p) => p.targets ?? []);
    expect(targets.length).toBeGreaterThan(20);
    const { types } = await scrape();
    const exported = (name: string) => types.has(name) ||
      ['_count', '_sum', '_bucket'].some((suffix) => name.endsWith(suffix) && ['summary', 'histogram'].includes(types.get(name.slice(0, -suffix.length)) ?? ''));
    const queried = new Set(targets.flatMap((target) => {
      expect(target.datasource.uid).toBe('${datasource}');
      return [...target.expr.matchAll(/\b(?:vault|strongroom|nodejs|process)_[A-Za-z0-9_]+/g)].map((m) => m[0]);
    }));
    expect([...queried].filter((name) => !exported(name))).toEqual([]);
    // Every family this server exports under our names or Vault's has a panel.
    const ours = [...types.keys()].filter((name) => /^(vault|strongroom)_/.test(name));
    expect(ours.filter((name) => ![...queried].some((q) => q === name || q.startsWith(`${name}_`)))).toEqual([]);
  });

  it('refuses an unknown format, naming the field', async () => {
    const r = await send('GET', 'sys/metrics?format=xml');
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ errors: [expect.stringContaining('"format"')] });
  });
});

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../cluster-launcher';
import type { ClusterDescription, ClusterName, TopologyDescription } from './description';
import { call, errorsOf, expectOk, type Reply } from '../node-api';

/**
 * Brings a described topology from freshly started processes to serving clusters: the transit
 * seal provider, three auto-unsealed clusters, DR and performance replication, and an automated
 * snapshot. Every step first looks at what is already there, so a second run (a restarted
 * compose, a restarted local topology) finishes whatever is missing and changes nothing else.
 *
 * It never prints a key or a token: keys go to the operator's credentials file (0600), seal
 * tokens to the seal-token directory (0600), and messages name steps and fields only.
 */

export interface InitResult {
  root_token: string;
  unseal_keys_b64?: string[];
  recovery_keys_b64?: string[];
}

export type Credentials = Partial<Record<ClusterName, InitResult>>;

export interface BootstrapOptions {
  topology: TopologyDescription;
  operatorDir: string;
  sealTokenDir: string;
  /** Progress, one line per step. */
  log?: (line: string) => void;
  /** How long to wait for any one condition (nodes answering, replication catching up). */
  timeoutMs?: number;
  /**
   * A seal token file was replaced (the token it held had expired or was revoked): the nodes
   * sealed with `key` read the old one at their start and must be restarted to read the new one.
   */
  onSealTokenReplaced?: (key: string) => Promise<void>;
}

export const CREDENTIALS_FILE = 'credentials.json';
/** Activation ids on the primary; fixed so that a re-run finds the ones it made. */
const SECONDARY_IDS = { dr: 'dr', perf: 'perf' } as const;

export function readCredentials(operatorDir: string): Credentials {
  const file = join(operatorDir, CREDENTIALS_FILE);
  if (!existsSync(file)) return {};
  return JSON.parse(readFileSync(file, 'utf8')) as Credentials;
}

function writeSecretFile(file: string, content: string): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

class Bootstrap {
  private readonly log: (line: string) => void;
  private readonly timeoutMs: number;
  private credentials: Credentials;

  constructor(private readonly o: BootstrapOptions) {
    this.log = o.log ?? (() => undefined);
    this.timeoutMs = o.timeoutMs ?? 180_000;
    mkdirSync(o.operatorDir, { recursive: true, mode: 0o700 });
    mkdirSync(o.sealTokenDir, { recursive: true, mode: 0o700 });
    this.credentials = readCredentials(o.operatorDir);
  }

  private cluster(name: ClusterName): ClusterDescription {
    return this.o.topology.clusters[name];
  }

  private saveCredentials(): void {
    writeSecretFile(join(this.o.operatorDir, CREDENTIALS_FILE), `${JSON.stringify(this.credentials, null, 2)}\n`);
  }

  private rootToken(name: ClusterName): string {
    const token = this.credentials[name]?.root_token;
    if (!token) throw new Error(`the credentials file has no root token for the ${name} cluster, though that cluster is initialized: restore the file, or start the topology afresh`);
    return token;
  }

  async run(): Promise<void> {
    await this.unsealNode();
    await this.sealTokens();
    for (const name of ['primary', 'dr', 'perf'] as const) await this.autoUnsealedCluster(name);
    await this.replicationPrimaries();
    await this.drSecondary();
    await this.perfSecondary();
    await this.caughtUp('dr');
    await this.caughtUp('perf');
    await this.snapshot();
    this.log('bootstrap: done');
  }

  // ---- the seal provider ----------------------------------------------------------------

  private async unsealNode(): Promise<void> {
    const addr = this.cluster('unseal').nodes[0]?.api_addr as string;
    let status = await this.waitAnswer(addr);
    if (!status.initialized) {
      this.log('unseal: initializing (1 key share)');
      const init = await expectOk('init of the unseal node', call(addr, 'PUT', 'sys/init', { body: { secret_shares: 1, secret_threshold: 1 } }));
      this.credentials.unseal = { unseal_keys_b64: init.json.keys_base64 as string[], root_token: init.json.root_token as string };
      this.saveCredentials();
      status = await this.waitAnswer(addr);
    }
    if (status.sealed) {
      const keys = this.credentials.unseal?.unseal_keys_b64 ?? [];
      if (keys.length === 0) throw new Error('the unseal node is sealed and the credentials file holds no unseal key for it');
      this.log('unseal: unsealing with the operator\'s key');
      for (const key of keys) await expectOk('unseal of the unseal node', call(addr, 'PUT', 'sys/unseal', { body: { key } }));
    }
    await this.waitFor('the unseal node to be active', async () => ((await call(addr, 'GET', 'sys/health')).status === 200 ? true : undefined));
    const token = this.rootToken('unseal');
    const mounts = await expectOk('listing the unseal node\'s mounts', call(addr, 'GET', 'sys/mounts', { token }));
    if (!(mounts.json.data ?? mounts.json)['transit/']) {
      this.log('unseal: enabling the transit engine');
      await expectOk('enabling transit on the unseal node', call(addr, 'POST', 'sys/mounts/transit', { token, body: { type: 'transit' } }));
    }
    for (const key of this.sealKeys()) {
      if ((await call(addr, 'GET', `transit/keys/${key}`, { token })).status === 200) continue;
      this.log(`unseal: creating the transit key ${key}`);
      await expectOk(`creating the transit key ${key}`, call(addr, 'POST', `transit/keys/${key}`, { token, body: {} }));
    }
  }

  private sealKeys(): string[] {
    return (['primary', 'dr', 'perf'] as const).map((c) => this.cluster(c).seal_key as string);
  }

  /** One periodic orphan token per transit key, allowed only to encrypt and decrypt with it. */
  private async sealTokens(): Promise<void> {
    const addr = this.cluster('unseal').nodes[0]?.api_addr as string;
    const token = this.rootToken('unseal');
    for (const key of this.sealKeys()) {
      const policy = `seal-${key}`;
      await expectOk(`writing the policy ${policy}`, call(addr, 'PUT', `sys/policies/acl/${policy}`, {
        token, body: { policy: sealPolicy(key) },
      }));
      const file = join(this.o.sealTokenDir, `${key}.token`);
      const replacing = existsSync(file);
      if (replacing) {
        const held = readFileSync(file, 'utf8').trim();
        if ((await call(addr, 'POST', 'auth/token/lookup', { token, body: { token: held } })).status === 200) continue;
      }
      this.log(`unseal: issuing the seal token for ${key}${replacing ? ' (the one held is no longer valid)' : ''}`);
      const created = await expectOk(`creating the seal token for ${key}`, call(addr, 'POST', 'auth/token/create-orphan', {
        token, body: { policies: [policy], period: '24h', no_default_policy: true, display_name: `seal-${key}` },
      }));
      writeSecretFile(file, `${created.json.auth.client_token as string}\n`);
      if (replacing) await this.o.onSealTokenReplaced?.(key);
    }
  }

  // ---- the three auto-unsealed clusters --------------------------------------------------

  private async autoUnsealedCluster(name: 'primary' | 'dr' | 'perf'): Promise<void> {
    const cluster = this.cluster(name);
    const first = cluster.nodes[0]?.api_addr as string;
    const status = await this.waitAnswer(first);
    if (!status.initialized) {
      this.log(`${name}: initializing ${cluster.nodes[0]?.name} (1 recovery key share)`);
      const init = await expectOk(`init of ${cluster.nodes[0]?.name}`, call(first, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } }));
      this.credentials[name] = { recovery_keys_b64: init.json.recovery_keys_base64 as string[], root_token: init.json.root_token as string };
      this.saveCredentials();
    }
    this.log(`${name}: waiting for every node to join and unseal itself`);
    await this.waitFor(`every ${name} node to be unsealed`, async () => {
      for (const n of cluster.nodes) {
        const s = await call(n.api_addr, 'GET', 'sys/seal-status');
        if (s.status !== 200 || s.json.sealed !== false || s.json.initialized !== true) return undefined;
      }
      return true;
    });
    if (await this.secondaryMode(name)) return; // its members are the primary's business now
    const token = this.rootToken(name);
    await this.waitFor(`${cluster.nodes.length} voters in the ${name} cluster`, async () => {
      const r = await call(await this.active(name), 'GET', 'sys/storage/raft/configuration', { token });
      const servers = (r.json?.data?.config?.servers ?? []) as { voter: boolean }[];
      return servers.filter((s) => s.voter).length >= cluster.nodes.length ? true : undefined;
    });
  }

  private async secondaryMode(name: ClusterName): Promise<boolean> {
    const kind = name === 'perf' ? 'performance' : 'dr';
    if (name !== 'dr' && name !== 'perf') return false;
    const r = await call(this.cluster(name).nodes[0]?.api_addr as string, 'GET', `sys/replication/${kind}/status`);
    return r.json?.data?.mode === 'secondary';
  }

  // ---- replication -------------------------------------------------------------------

  private async replicationPrimaries(): Promise<void> {
    const token = this.rootToken('primary');
    for (const kind of ['dr', 'performance'] as const) {
      const addr = await this.active('primary');
      const st = await expectOk(`reading the ${kind} status`, call(addr, 'GET', `sys/replication/${kind}/status`));
      if (st.json.data.mode === 'primary') continue;
      this.log(`primary: enabling ${kind} replication as primary`);
      await expectOk(`enabling ${kind} primary`, call(addr, 'POST', `sys/replication/${kind}/primary/enable`, { token, body: {} }));
      await this.waitFor(`the ${kind} primary to be enabled`, async () => {
        const s = await call(await this.active('primary'), 'GET', `sys/replication/${kind}/status`);
        return s.json?.data?.mode === 'primary' ? true : undefined;
      });
    }
  }

  /** A secondary token for `id`; one left by an earlier run that did not finish is revoked first. */
  private async secondaryToken(kind: 'dr' | 'performance', id: string, extra: Record<string, string>): Promise<Reply> {
    const token = this.rootToken('primary');
    const addr = await this.active('primary');
    const st = await call(addr, 'GET', `sys/replication/${kind}/status`);
    const known = (st.json?.data?.known_secondaries ?? []) as string[];
    if (known.includes(id)) {
      await expectOk(`revoking the unfinished ${kind} secondary ${id}`, call(addr, 'POST', `sys/replication/${kind}/primary/revoke-secondary`, { token, body: { id } }));
    }
    return expectOk(`the ${kind} secondary token`, call(addr, 'POST', `sys/replication/${kind}/primary/secondary-token`, { token, body: { id, ...extra } }));
  }

  private async drSecondary(): Promise<void> {
    if (await this.secondaryMode('dr')) return;
    this.log('dr: activating as DR secondary (wrapped secondary token)');
    const issued = await this.secondaryToken('dr', SECONDARY_IDS.dr, {});
    const wrapped = issued.json.wrap_info?.token as string | undefined;
    if (!wrapped) throw new Error('the primary answered the DR secondary token without wrap_info');
    const addr = await this.active('dr');
    await expectOk('enabling the DR secondary', call(addr, 'POST', 'sys/replication/dr/secondary/enable', {
      token: this.rootToken('dr'), body: { token: wrapped, primary_api_addr: await this.active('primary') },
    }));
  }

  /** The performance secondary never calls the primary's API: its token is encrypted to its own key. */
  private async perfSecondary(): Promise<void> {
    if (await this.secondaryMode('perf')) return;
    this.log('perf: activating as performance secondary (secondary_public_key)');
    const addr = await this.active('perf');
    const token = this.rootToken('perf');
    const key = await expectOk('generate-public-key on the performance secondary', call(addr, 'POST', 'sys/replication/performance/secondary/generate-public-key', { token, body: {} }));
    const publicKey = key.json.data?.secondary_public_key as string | undefined;
    if (!publicKey) throw new Error('generate-public-key answered no secondary_public_key');
    const issued = await this.secondaryToken('performance', SECONDARY_IDS.perf, { secondary_public_key: publicKey });
    const activation = issued.json.data?.token as string | undefined;
    if (!activation) throw new Error('the primary answered the performance secondary token without data.token');
    await expectOk('enabling the performance secondary', call(addr, 'POST', 'sys/replication/performance/secondary/enable', { token, body: { token: activation } }));
  }

  private async caughtUp(name: 'dr' | 'perf'): Promise<void> {
    const kind = name === 'perf' ? 'performance' : 'dr';
    this.log(`${name}: waiting for it to stream WALs and catch up`);
    await this.waitFor(`the ${name} secondary to stream and catch up`, async () => {
      const p = await call(await this.active('primary'), 'GET', `sys/replication/${kind}/status`);
      const lastWal = p.json?.data?.last_wal as number | undefined;
      if (lastWal === undefined) return undefined;
      for (const n of this.cluster(name).nodes) {
        const s = (await call(n.api_addr, 'GET', `sys/replication/${kind}/status`).catch(() => null))?.json?.data;
        if (s?.state === 'stream-wals' && (s.last_remote_wal as number) >= lastWal) return true;
      }
      return undefined;
    }, 250);
  }

  // ---- the automated snapshot ------------------------------------------------------------

  private async snapshot(): Promise<void> {
    const s = this.o.topology.snapshot;
    const token = this.rootToken('primary');
    const path = `sys/storage/raft/snapshot-auto/config/${s.name}`;
    // The S3 emulator keeps buckets in memory (a restarted one has none), and the snapshot writer does not make one.
    const bucket = await fetch(`${s.endpoint}/${encodeURIComponent(s.bucket)}`, { method: 'PUT', signal: AbortSignal.timeout(15_000) });
    await bucket.arrayBuffer();
    if (!bucket.ok && bucket.status !== 409) throw new Error(`creating the bucket ${s.bucket} on ${s.endpoint} failed (status ${bucket.status})`);
    if ((await call(await this.active('primary'), 'GET', path, { token })).status !== 200) {
      this.log(`primary: configuring the automated snapshot ${s.name} (every ${s.interval} to ${s.endpoint})`);
      await expectOk(`configuring the automated snapshot ${s.name}`, call(await this.active('primary'), 'POST', path, {
        token,
        body: {
          storage_type: 'cloud1-objstore', interval: s.interval, retain: s.retain, path_prefix: s.path_prefix,
          cloud1_objstore_bucket: s.bucket, cloud1_objstore_region: s.region, cloud1_objstore_endpoint: s.endpoint,
          cloud1_objstore_force_path_style: true, cloud1_objstore_disable_tls: s.endpoint.startsWith('http:'),
          cloud1_access_key_id: s.access_key_id, cloud1_secret_access_key: s.secret_access_key,
        },
      }));
    }
    this.log(`primary: waiting for the first automated snapshot of ${s.name}`);
    await this.waitFor(`the first automated snapshot of ${s.name}`, async () => {
      const r = await call(await this.active('primary'), 'GET', `sys/storage/raft/snapshot-auto/status/${s.name}`, { token });
      const st = r.json?.data;
      if (!st) return undefined;
      if (st.last_snapshot_error) throw new Error(`the snapshot failed: ${st.last_snapshot_error as string}`);
      return st.last_snapshot_url ? true : undefined;
    }, 500, this.timeoutMs + intervalMs(s.interval));
  }

  // ---- waiting ---------------------------------------------------------------------------

  private waitFor<T>(what: string, probe: () => Promise<T | undefined>, intervalMs = 200, timeoutMs = this.timeoutMs): Promise<T> {
    return until(what, timeoutMs, probe, intervalMs);
  }

  private async waitAnswer(addr: string): Promise<{ initialized: boolean; sealed: boolean }> {
    return this.waitFor(`${addr} to answer`, async () => {
      const r = await call(addr, 'GET', 'sys/seal-status');
      if (r.status !== 200) throw new Error(`seal-status answered ${errorsOf(r)}`);
      return { initialized: r.json.initialized === true, sealed: r.json.sealed !== false };
    });
  }

  /** The API address of the cluster's active node (sys/health 200), once it has one. */
  private active(name: ClusterName): Promise<string> {
    return this.waitFor(`an active node in the ${name} cluster`, async () => {
      for (const n of this.cluster(name).nodes) {
        const h = await call(n.api_addr, 'GET', 'sys/health', { timeoutMs: 5_000 }).catch(() => null);
        if (h?.status === 200) return n.api_addr;
      }
      return undefined;
    });
  }
}

/** Encrypt and decrypt with one key, and keep its own (periodic) token alive: nothing else. */
function sealPolicy(key: string): string {
  return [
    `path "transit/encrypt/${key}" {\n  capabilities = ["update"]\n}`,
    `path "transit/decrypt/${key}" {\n  capabilities = ["update"]\n}`,
    'path "auth/token/renew-self" {\n  capabilities = ["update"]\n}',
    'path "auth/token/lookup-self" {\n  capabilities = ["read"]\n}',
    '',
  ].join('\n');
}

function intervalMs(interval: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(interval);
  if (!m) return 0;
  return Number(m[1]) * ({ s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'] ?? 1_000);
}

export async function runBootstrap(options: BootstrapOptions): Promise<void> {
  await new Bootstrap(options).run();
}

import { StrongroomError } from '@strongroom/base';
import type { LogicalChange } from '@strongroom/core';
import { DestinationError, type DestinationClientFactory } from '../clients/destination-client';
import { CHANGES_NOT_RETAINED, type SecretReader, type SecretState, type SyncFeed, type SyncMount, type SyncMounts } from '../host';

export const KV: SyncMount = { namespaceId: 'root', namespacePath: '', path: 'kv/', type: 'kv', accessor: 'kv_1234abcd', options: { version: '2' } };
export const KV1: SyncMount = { namespaceId: 'root', namespacePath: '', path: 'old/', type: 'kv', accessor: 'kv_0000v1v1', options: { version: '1' } };
export const TRANSIT: SyncMount = { namespaceId: 'root', namespacePath: '', path: 'transit/', type: 'transit', accessor: 'transit_99', options: {} };

interface KvSecret {
  version: number;
  createdTime: number;
  data: Record<string, unknown> | null;
}

/** KV v2 mounts and their secrets, with the feed a real server would carry for each change. */
export class FakeKv implements SecretReader, SyncMounts {
  readonly mounts = [KV, KV1, TRANSIT];
  private readonly secrets = new Map<string, KvSecret>();
  reads = 0;

  constructor(private readonly feed?: FakeFeed) {}

  byPath(namespaceId: string, path: string): SyncMount | undefined {
    return this.mounts.find((m) => m.namespaceId === namespaceId && m.path === path);
  }

  byAccessor(accessor: string): SyncMount | undefined {
    return this.mounts.find((m) => m.accessor === accessor);
  }

  async read(mount: SyncMount, name: string): Promise<SecretState> {
    this.reads++;
    const s = this.secrets.get(`${mount.accessor}/${name}`);
    return s?.data ? { live: true, version: s.version, createdTime: s.createdTime, data: s.data } : { live: false };
  }

  write(name: string, data: Record<string, unknown>, mount = KV): void {
    const key = `${mount.accessor}/${name}`;
    const version = (this.secrets.get(key)?.version ?? 0) + 1;
    this.secrets.set(key, { version, createdTime: 1000 + version, data });
    this.feed?.kv(mount, name, version, true);
  }

  delete(name: string, mount = KV): void {
    const key = `${mount.accessor}/${name}`;
    const s = this.secrets.get(key);
    if (!s) return;
    this.secrets.set(key, { ...s, data: null });
    this.feed?.kv(mount, name, s.version, false);
  }
}

/** A commit feed: changes with indexes, a retained window that can be cut, and a live edge. */
export class FakeFeed implements SyncFeed {
  private changes: LogicalChange[] = [];
  private index = 100;
  private firstRetained = 1;
  private readonly waiters = new Set<() => void>();

  applied(): number {
    return this.index;
  }

  /** A change of something else (a policy, a token): advances the index. */
  other(key = 'sys/policy/x'): void {
    this.push({ index: ++this.index, ops: [{ type: 'put', key, area: 'system', relativeKey: key, local: false }] });
  }

  kv(mount: SyncMount, path: string, version: number, live: boolean): void {
    const versions = { [String(version)]: { createdTime: 1, deletionTime: live ? null : 2, destroyed: false } };
    this.push({
      index: ++this.index,
      ops: [{
        type: 'put', key: `logical/uuid/meta/${path}`, area: 'logical', relativeKey: `meta/${path}`, local: false,
        mount: { namespace: '', kind: 'secret', path: mount.path, type: mount.type, accessor: mount.accessor, uuid: 'uuid', local: false, options: mount.options },
        event: { kind: 'kv-secret', path, metadata: { currentVersion: version, versions } },
      }],
    });
  }

  /** Writes made outside this node's sync service (another node, replication), as the feed carries them. */
  system(ops: ReadonlyArray<{ type: 'put' | 'delete'; key: string }>): void {
    this.push({ index: ++this.index, ops: ops.map((op) => ({ type: op.type, key: op.key, area: 'system' as const, relativeKey: op.key, local: false })) });
  }

  /** A snapshot restore: storage was replaced. */
  restored(): void {
    this.push({ index: ++this.index, restored: true });
  }

  /** Forgets every change up to the current index, as a window that moved on does. */
  forget(): void {
    this.firstRetained = this.index + 1;
    this.changes = [];
  }

  private push(change: LogicalChange): void {
    this.changes.push(change);
    for (const w of [...this.waiters]) w();
  }

  async *follow(from: number, signal: AbortSignal): AsyncGenerator<LogicalChange[]> {
    if (from < this.firstRetained) throw new StrongroomError(CHANGES_NOT_RETAINED, 410, `index ${from} is no longer retained`);
    let next = from;
    while (!signal.aborted) {
      const batch = this.changes.filter((c) => c.index >= next);
      if (batch.length > 0) {
        next = (batch[batch.length - 1] as LogicalChange).index + 1;
        yield batch;
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.waiters.add(done);
        signal.addEventListener('abort', done);
      });
    }
  }
}

/** One destination's store: the values by name, every write with its token, and failures on demand. */
export class FakeDestination {
  readonly values = new Map<string, string>();
  /** Each distinct (name, token) written: a destination with versions makes one per token. */
  readonly versions: Array<{ name: string; token: string; value: string }> = [];
  /** Each successful removal with the credential it was made with. */
  readonly removals: Array<{ name: string; credential: string | undefined }> = [];
  calls = 0;
  reads = 0;
  private failures = 0;
  private putFailures = 0;
  private failStatus: DestinationError['status'] = 'EXTERNAL_SERVICE_ERROR';

  /** Only writes fail (reads still answer). */
  failNextPuts(count: number): void {
    this.putFailures = count;
  }

  failNext(count: number, status: DestinationError['status'] = 'EXTERNAL_SERVICE_ERROR'): void {
    this.failures = count;
    this.failStatus = status;
  }

  readonly clients: DestinationClientFactory = (d) => ({
    put: async (name, value, token) => {
      if (this.putFailures > 0) {
        this.putFailures--;
        throw new DestinationError('EXTERNAL_SERVICE_ERROR', 'the service refused the write');
      }
      this.fail();
      this.values.set(name, value);
      if (!this.versions.some((v) => v.name === name && v.token === token)) this.versions.push({ name, token, value });
    },
    read: async (name) => {
      this.fail();
      this.reads++;
      const value = this.values.get(name);
      return value === undefined ? { exists: false } : { exists: true, value };
    },
    remove: async (name) => {
      this.fail(d.connection['access_token'] as string | undefined);
      this.values.delete(name);
      this.removals.push({ name, credential: d.connection['access_token'] as string | undefined });
    },
  });

  private fail(credential?: string): void {
    this.calls++;
    if (this.failures > 0) {
      this.failures--;
      throw new DestinationError(this.failStatus, `the service is unavailable${credential ? ` for token ${credential}` : ''}`);
    }
  }
}

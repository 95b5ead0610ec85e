import {
  BackendHarness, FakeClock, MemoryStorage, silentLogger,
  type LogicalStorage, type MountEntry, type MountSettings, type TxnOp,
} from '@strongroom/core';
import { describeKvChange, type KvSecretChange } from '../describe-change';
import { createKvBackend, type KvBackend } from '../kv-engine';
import { isDeleted, type VersionRecord } from '../secret-store';

export type VersionState = 'live' | 'deleted' | 'destroyed';

/** What the commit feed's logical view says of one change, with each version's state at commit time. */
export interface SecretChange {
  path: string;
  metadata: { currentVersion: number; versions: Record<string, VersionState> } | null;
}

export interface KvTestRig {
  h: BackendHarness;
  clock: FakeClock;
  /** One entry per committed write of a secret's metadata, in commit order. */
  changes: SecretChange[];
  backend: KvBackend;
}

// The view reads a v2 mount's keys whatever the rig mounts, so a v1 mount writing into the v2
// layout would show up here too.
const V2_MOUNT: MountEntry = {
  path: 'secret/', type: 'kv', description: '', accessor: 'kv_1234', uuid: 'kv-test-mount',
  config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false },
  local: false, seal_wrap: false, external_entropy_access: false, options: { version: '2' },
};

function versionState(record: VersionRecord, now: number): VersionState {
  if (record.destroyed) return 'destroyed';
  return isDeleted(record, now) ? 'deleted' : 'live';
}

function summarize(change: KvSecretChange, now: number): SecretChange {
  if (change.metadata === null) return { path: change.path, metadata: null };
  const versions = Object.fromEntries(Object.entries(change.metadata.versions).map(([n, record]) => [n, versionState(record, now)]));
  return { path: change.path, metadata: { currentVersion: change.metadata.currentVersion, versions } };
}

/**
 * Passes each write to `inner` and, once it is stored, hands its ops to `describeKvChange` the
 * way the commit feed's logical view does; a write that fails is never recorded, as it never commits.
 */
class ChangeRecordingStorage implements LogicalStorage {
  constructor(private readonly inner: LogicalStorage, private readonly record: (ops: TxnOp[]) => void) {}

  get(key: string): Promise<Buffer | null> { return this.inner.get(key); }
  list(prefix: string): Promise<string[]> { return this.inner.list(prefix); }

  async put(key: string, value: Buffer): Promise<void> {
    await this.inner.put(key, value);
    this.record([{ type: 'put', key, value }]);
  }

  async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    this.record([{ type: 'delete', key }]);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    await this.inner.txn(ops);
    this.record(ops);
  }
}

/** A KV backend over memory storage and a fake clock, recording the secret changes each write commits. */
export function kvRig(options: { mount?: Partial<MountSettings>; storage?: LogicalStorage; version?: string | null } = {}): KvTestRig {
  const clock = new FakeClock();
  const changes: SecretChange[] = [];
  const storage = new ChangeRecordingStorage(options.storage ?? new MemoryStorage(), (ops) => {
    for (const op of ops) {
      const change = describeKvChange(V2_MOUNT, op.key, () => (op.type === 'put' ? op.value : null)) as KvSecretChange | undefined;
      if (change) changes.push(summarize(change, clock.now()));
    }
  });
  const backend = createKvBackend({ clock, logger: silentLogger });
  const version = options.version === undefined ? '2' : options.version;
  const h = new BackendHarness(
    backend,
    { path: 'secret/', accessor: 'kv_1234', options: version === null ? {} : { version }, ...options.mount },
    storage,
  );
  return { h, clock, changes, backend };
}

export { expectBadRequest as badRequest, expectFailure as failure } from '@strongroom/core';

export const T0 = '2026-01-01T00:00:00Z';

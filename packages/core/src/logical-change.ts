import type { CommittedChange } from '@strongroom/base';
import type { MountEntry, TableKind } from './mounts/mount-table';

/** The mount a physical key belongs to, as the mount tables know it when the change is read. */
export interface MountRef {
  /** The namespace's path, '' for the root namespace. */
  namespace: string;
  kind: TableKind;
  path: string;
  type: string;
  accessor: string;
  uuid: string;
  local: boolean;
  options: Record<string, string>;
}

/** What an engine makes of a change to its own storage, e.g. the state of one KV v2 secret. */
export interface EngineChange {
  kind: string;
  [field: string]: unknown;
}

/**
 * One write of a committed change, as the layers above the barrier see it: which mount's data
 * (or which system area) it is, the key relative to that mount, whether it stays in this cluster
 * (a `local` mount), and the engine's reading of it where the engine gives one.
 */
export interface LogicalOp {
  type: 'put' | 'delete';
  /** The physical key. */
  key: string;
  /** `logical` and `auth` are mounts' data; `system` is everything else (tables, tokens, leases, policies...). */
  area: 'logical' | 'auth' | 'system';
  /** The mount, when the key is a mount's data and the mount still exists. */
  mount?: MountRef;
  /** The key below the mount's data prefix, or the physical key for `system`. */
  relativeKey: string;
  local: boolean;
  /** Computed on first read (it may decrypt the value). */
  readonly event?: EngineChange | undefined;
}

export type LogicalChange = { index: number; ops: LogicalOp[] } | { index: number; restored: true };

/**
 * How an engine reads changes to its mounts' storage. `value` decrypts the written value (null
 * for a delete) and is only worth calling for the keys the engine cares about.
 */
export type DescribeChange = (mount: MountEntry, relativeKey: string, value: () => Buffer | null) => EngineChange | undefined;

/** Where the two kinds of mount keep their data, under the mount's UUID. */
const AREAS: ReadonlyArray<{ prefix: string; area: 'logical' | 'auth' }> = [
  { prefix: 'logical/', area: 'logical' },
  { prefix: 'auth/', area: 'auth' },
];

/** Turns physical changes into logical ones; `resolve` finds a mount by UUID. */
export function describeChange(
  change: CommittedChange,
  resolve: (uuid: string) => { namespace: string; entry: MountEntry; kind: TableKind } | undefined,
  decrypt: (key: string, value: Buffer) => Buffer,
  describers: (kind: TableKind, type: string) => DescribeChange | undefined,
): LogicalChange {
  if ('restored' in change) return { index: change.index, restored: true };
  return {
    index: change.index,
    ops: change.ops.map((op): LogicalOp => {
      const base = { type: op.type, key: op.key };
      for (const { prefix, area } of AREAS) {
        if (!op.key.startsWith(prefix)) continue;
        const slash = op.key.indexOf('/', prefix.length);
        if (slash === -1) break;
        const found = resolve(op.key.slice(prefix.length, slash));
        const relativeKey = op.key.slice(slash + 1);
        if (!found) return { ...base, area, relativeKey, local: false };
        const { namespace, entry, kind } = found;
        const mount: MountRef = {
          namespace, kind, path: entry.path, type: entry.type, accessor: entry.accessor, uuid: entry.uuid, local: entry.local, options: entry.options,
        };
        const describe = describers(kind, entry.type);
        const value = () => (op.type === 'put' ? decrypt(op.key, op.value) : null);
        // Read when asked, once: most readers want it for few keys, and it may decrypt the value.
        let event: EngineChange | undefined | null = null;
        return {
          ...base, area, mount, relativeKey, local: entry.local,
          get event() {
            if (event === null) event = describe?.(entry, relativeKey, value);
            return event;
          },
        };
      }
      return { ...base, area: 'system', relativeKey: op.key, local: false };
    }),
  };
}

import type { Check } from '@strongroom/raft';
import type { ClusterNode } from '@strongroom/cluster';
import { MemoryStorage, silentLogger, systemClock, type Core, type TxnOp } from '@strongroom/core';
import { encryptToSecondary } from './activation/secondary-key';
import { ReplicationRole } from './replication-role';
import type { RoleRuntime } from './role-runtime';
import type { RoleState } from './role-state';
import { classifyKey } from './key-space';

/** A cluster's Raft store as ReplicationRole uses it: every check passes (one writer here). */
class Store extends MemoryStorage {
  async checkAndSet(_checks: readonly Check[], ops: readonly TxnOp[]): Promise<boolean> {
    await this.txn([...ops]);
    return true;
  }
}

function replicatedKeys(storage: Store): string[] {
  return [...storage.data.keys()].filter((key) => classifyKey(key) !== null);
}

it('starts following the primary only once the secondary\'s own data is wiped', async () => {
  const storage = new Store();
  for (const key of ['core/keyring', 'core/mounts', 'logical/abc/secret/k1', 'sys/token/id/t1']) await storage.put(key, Buffer.from('old'));
  const cluster = {
    storage, advert: { api: 'http://127.0.0.1:1', cluster: '127.0.0.1:2' }, refreshActive: async () => {},
  } as unknown as ClusterNode;
  const dr = new ReplicationRole({
    kind: 'dr', core: {} as Core, cluster, logger: silentLogger, clock: systemClock,
    merkle: { status: () => ({ root: '', corrupted: false, lastReindexEpoch: '', lastCheckEpoch: '', reindex: null }), reindex: async () => ({}), check: async () => ({}) },
    operationTokens: { verify: async () => false, revoke: async () => {} },
  });
  // What the runtime sees when told to follow a primary: the data a stream would start from.
  const seenWhenFollowing: string[][] = [];
  const runtime: RoleRuntime = {
    stateChanged: (state: RoleState) => {
      // The runtime streams from a primary only once no wipe is pending.
      if (state.mode === 'secondary' && state.primary && !state.wipe_pending) seenWhenFollowing.push(replicatedKeys(storage));
    },
    lastWal: () => 0, secondaries: () => [], secondaryStatus: () => null, disconnect: () => {},
    activate: async () => {}, pickPrimary: async () => '', pathsFilter: () => null,
    forwardWrite: async () => ({ status: 200, lastWal: 0, warnings: [] }),
  };
  dr.attachRuntime(runtime);

  const publicKey = await dr.generatePublicKey();
  const material = {
    secondary_id: 'dr-east',
    primary: { cluster_id: 'c1', wal_source: 'w1', cluster_addrs: ['127.0.0.1:3'], api_addr: 'http://127.0.0.1:4', ca_cert: 'ca', cert: 'cert', key: 'key' },
  };
  await dr.enableSecondary({ token: encryptToSecondary(publicKey, Buffer.from(JSON.stringify(material))), primaryApiAddr: '', caFile: '', caPath: '' });

  expect(seenWhenFollowing).toEqual([[]]);
  expect(dr.current).toMatchObject({ mode: 'secondary', secondary_id: 'dr-east', primary: { cluster_id: 'c1' } });
  expect(replicatedKeys(storage)).toEqual([]);
});

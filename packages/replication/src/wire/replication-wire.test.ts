import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { status } from '@grpc/grpc-js';
import type { TxnOp } from '@strongroom/base';
import { GrpcTransport, MemberCallError, createClusterTls, type ClusterTls } from '@strongroom/raft';
import type { PeerIdentity } from '../tls/peer-identity';
import { createReplicationCa, issueSecondaryCertificate, type ReplicationCa, type SecondaryCertificate } from '../tls/replication-ca';
import { CredentialRefusedError, NotActiveError, ReplicationCallError, ReplicationUnavailableError } from './errors';
import { ReplicationClient, type ReplicationClientOptions } from './replication-client';
import { ReplicationServer, type ReplicationHandler, type ReplicationServerOptions } from './replication-server';
import type { KeyValue, MerkleDiffRequest, WalStreamItem, WalStreamMessage } from './types';

let cluster: ClusterTls;
let ca: ReplicationCa;
let otherCa: ReplicationCa;
let secondary: SecondaryCertificate;

beforeAll(async () => {
  [cluster, ca, otherCa] = await Promise.all([createClusterTls(), createReplicationCa(), createReplicationCa()]);
  secondary = await issueSecondaryCertificate(ca, 'dr-east', 60 * 60 * 1000);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Items pushed by the test, read by the handler's stream; ends when the stream's signal aborts. */
class Feed<T> {
  private items: T[] = [];
  private wake: (() => void) | null = null;
  aborted = false;

  get pending(): number {
    return this.items.length;
  }

  push(...items: T[]): void {
    this.items.push(...items);
    this.wake?.();
  }

  async *read(signal: AbortSignal): AsyncGenerator<T> {
    const onAbort = () => {
      this.aborted = true;
      this.wake?.();
    };
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        const item = this.items.shift();
        if (item !== undefined) {
          yield item;
          continue;
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = null;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

interface Primary {
  address: string;
  server: ReplicationServer;
  transport: GrpcTransport;
  calls: { method: string; caller: PeerIdentity; page?: MerkleDiffRequest['page'] }[];
  wal: Feed<WalStreamItem>;
  handler: ReplicationHandler;
}

/** A primary's cluster listener (a bare GrpcTransport) serving the replication service with a fake handler. */
async function startPrimary(overrides: Partial<ReplicationHandler> = {}, options: Partial<ReplicationServerOptions> = {}): Promise<Primary> {
  const calls: Primary['calls'] = [];
  const used = new Set<string>();
  const wal = new Feed<WalStreamItem>();
  const handler: ReplicationHandler = {
    activate: async (request, caller) => {
      calls.push({ method: 'activate', caller });
      if (used.has(caller.fingerprint)) throw new CredentialRefusedError('used');
      used.add(caller.fingerprint);
      return { clusterId: 'primary-cluster', clusterAddresses: [`${request.clusterAddress}-seen`, '127.0.0.1:8201'], lastWal: 42 };
    },
    ping: async (request, caller) => {
      calls.push({ method: 'ping', caller });
      expect(typeof request.timeMs).toBe('number');
      return { clusterId: 'primary-cluster', walSource: 'log-1', active: true, activeClusterAddress: null, lastWal: 42 };
    },
    streamWals: (request, caller, signal) => {
      calls.push({ method: 'streamWals', caller });
      return wal.read(signal);
    },
    lastWal: () => 42,
    // One leaf per tree asked about, one leaf per page; each page a WAL later.
    merkleDiff: async (request, caller) => {
      calls.push({ method: 'merkleDiff', caller, page: request.page });
      const leaves = request.trees.map((t, i) => ({ tree: t.tree, leaf: i + 7, entries: t.leafHashes.map((h, j) => ({ key: `${t.tree}/k${j}`, hash: h })) }));
      if (!request.page) return { lastWal: 40, leaves };
      const at = request.page.from;
      return { lastWal: 40 + at, leaves: leaves.slice(at, at + 1), ...(at + 1 < leaves.length ? { next: at + 1 } : {}) };
    },
    merkleSync: async function* (keys, caller) {
      calls.push({ method: 'merkleSync', caller });
      yield keys.map((key): KeyValue => ({ key, value: key.startsWith('gone') ? null : Buffer.from(`value of ${key}`) }));
    },
    forward: async (request, caller) => {
      calls.push({ method: 'forward', caller });
      return { status: 200, body: { data: { echoed: request } }, lastWal: 43 };
    },
    ...overrides,
  };
  const transport = new GrpcTransport({ id: 'p1', listen: '127.0.0.1:0', tls: { ca: cluster.caCert, cert: cluster.cert, key: cluster.key } });
  const server = new ReplicationServer({ handler, ...options });
  server.register(transport);
  server.trustCas([ca.caCert]);
  await transport.start({ message: () => {}, snapshot: async () => {}, unreachable: () => {} });
  cleanups.push(() => transport.close());
  return { address: transport.address, server, transport, calls, wal, handler };
}

function connect(address: string, identity: { cert: string; key: string } = secondary, options: ReplicationClientOptions = {}): ReplicationClient {
  const client = new ReplicationClient(address, { ca: cluster.caCert, cert: identity.cert, key: identity.key }, options);
  cleanups.push(() => client.close());
  return client;
}

const put = (key: string, value: string): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });
const entry = (index: number, ...ops: TxnOp[]) => ({ index, rootBefore: Buffer.from(`root ${index}`), ops });

/** Reads the stream until `until` says stop, keeping what it read. */
async function readUntil(stream: AsyncGenerator<WalStreamMessage>, until: (read: WalStreamMessage[]) => boolean): Promise<WalStreamMessage[]> {
  const read: WalStreamMessage[] = [];
  for await (const m of stream) {
    read.push(m);
    if (until(read)) break;
  }
  return read;
}

describe('replication wire: activation and ping', () => {
  it('activates once per credential, telling the handler which secondary and certificate called', async () => {
    const primary = await startPrimary();
    const client = connect(primary.address);
    expect(await client.activate({ nodeId: 'n1', apiAddress: 'https://s:8200', clusterAddress: 's:8201' })).toEqual({
      clusterId: 'primary-cluster', clusterAddresses: ['s:8201-seen', '127.0.0.1:8201'], lastWal: 42,
    });
    expect(primary.calls[0]).toEqual({ method: 'activate', caller: { secondaryId: 'dr-east', fingerprint: secondary.fingerprint } });
    const again = client.activate({ nodeId: 'n1', apiAddress: 'https://s:8200', clusterAddress: 's:8201' });
    await expect(again).rejects.toBeInstanceOf(CredentialRefusedError);
    await expect(again).rejects.toMatchObject({ reason: 'used' });
  });

  it('answers a ping with the primary\'s time, and a standby\'s ping names the active node', async () => {
    let seen: unknown;
    const primary = await startPrimary({
      ping: async (request) => {
        seen = request;
        return { clusterId: 'c', walSource: 'log-1', active: false, activeClusterAddress: '10.0.0.2:8201', lastWal: 9 };
      },
    });
    const before = Date.now();
    const reply = await connect(primary.address).ping({ nodeId: 'n1', apiAddress: 'http://s', clusterAddress: 's:8201', timeMs: 123, lastRttMs: 7, lastRemoteWal: 41 });
    expect(reply).toMatchObject({ clusterId: 'c', walSource: 'log-1', active: false, activeClusterAddress: '10.0.0.2:8201', lastWal: 9 });
    expect(seen).toEqual({ nodeId: 'n1', apiAddress: 'http://s', clusterAddress: 's:8201', timeMs: 123, lastRttMs: 7, lastRemoteWal: 41 });
    expect(reply.timeMs).toBeGreaterThanOrEqual(before - 1);
    expect(reply.timeMs).toBeLessThanOrEqual(Date.now() + 1);
  });

  it('brings typed refusals back as the same classes, and hides an untyped error\'s message', async () => {
    const primary = await startPrimary({
      activate: async () => {
        throw new NotActiveError('10.0.0.3:8201');
      },
      ping: async () => {
        throw new Error('the barrier key is 0xdeadbeef');
      },
    });
    const client = connect(primary.address);
    await expect(client.activate({ nodeId: 'n', apiAddress: '', clusterAddress: '' })).rejects.toEqual(new NotActiveError('10.0.0.3:8201'));
    const failure = await client.ping().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ReplicationCallError);
    expect(failure).toMatchObject({ code: status.INTERNAL });
    expect((failure as Error).message).not.toMatch(/deadbeef|barrier/);
  });
});

describe('replication wire: WAL stream', () => {
  it('streams batches in order with every kind of operation, and heartbeats while idle', async () => {
    const primary = await startPrimary({}, { heartbeatMs: 50 });
    const stream = connect(primary.address).streamWals({ fromIndex: 3, primaryClusterId: 'primary-cluster', walSource: 'log-1', nodeId: 'n1', apiAddress: 'a', clusterAddress: 'c' });
    primary.wal.push(
      { kind: 'batch', entries: [entry(3, put('logical/a', 'one'), { type: 'delete', key: 'logical/b' })], lastWal: 5 },
      { kind: 'batch', entries: [entry(5, { type: 'put', key: 'logical/empty', value: Buffer.alloc(0) })], lastWal: 5 },
    );
    const read = await readUntil(stream, (r) => r.some((m) => m.kind === 'heartbeat'));
    expect(read.slice(0, 2)).toEqual([
      { kind: 'batch', entries: [entry(3, put('logical/a', 'one'), { type: 'delete', key: 'logical/b' })], lastWal: 5 },
      { kind: 'batch', entries: [entry(5, { type: 'put', key: 'logical/empty', value: Buffer.alloc(0) })], lastWal: 5 },
    ]);
    expect(read[read.length - 1]).toMatchObject({ kind: 'heartbeat', lastWal: 42 });
    // Breaking out of the loop cancelled the call: the handler's signal aborts.
    await waitFor('the handler to see the stream end', () => primary.wal.aborted);
  });

  it('cuts a large batch into messages under the page size, keeping the order', async () => {
    const primary = await startPrimary({}, { maxPageBytes: 4096 });
    const entries = Array.from({ length: 40 }, (_, i) => entry(i + 1, put(`logical/k${i}`, 'x'.repeat(1000))));
    const big = entry(41, put('logical/huge', 'y'.repeat(10_000)));
    primary.wal.push({ kind: 'batch', entries: [...entries, big], lastWal: 41 });
    const read = await readUntil(connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' }), (r) =>
      r.flatMap((m) => (m.kind === 'batch' ? m.entries : [])).length === 41,
    );
    const batches = read.filter((m) => m.kind === 'batch');
    expect(batches.length).toBeGreaterThanOrEqual(10);
    expect(batches.flatMap((b) => b.entries)).toEqual([...entries, big]);
    expect(batches.every((b) => b.lastWal === 41)).toBe(true);
  });

  it('tells how far a filtered stream went: on the last page of a batch only, and in a batch of no entries', async () => {
    const primary = await startPrimary({}, { maxPageBytes: 4096 });
    const entries = Array.from({ length: 8 }, (_, i) => entry(i + 1, put(`logical/k${i}`, 'x'.repeat(1000))));
    primary.wal.push({ kind: 'batch', entries, lastWal: 12, through: 10 }, { kind: 'batch', entries: [], lastWal: 12, through: 12 });
    const read = await readUntil(connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' }), (r) =>
      r.some((m) => m.kind === 'batch' && m.through === 12),
    );
    const batches = read.filter((m) => m.kind === 'batch');
    expect(batches.length).toBeGreaterThanOrEqual(3);
    expect(batches.map((b) => b.through)).toEqual([...batches.slice(0, -2).map(() => undefined), 10, 12]);
    expect(batches.at(-1)).toEqual({ kind: 'batch', entries: [], lastWal: 12, through: 12 });
  });

  it('lets the primary send far more than HTTP/2\'s default window before the secondary reads it, as a far secondary needs', async () => {
    // Throughput over a long link is the window per round trip. A secondary that does not read
    // sends no window updates, so how much the primary could send shows the window the
    // secondary granted: 2 MiB here, which the default 64 KiB window would hold back.
    const primary = await startPrimary();
    const count = 512;
    for (let i = 1; i <= count; i++) primary.wal.push({ kind: 'batch', entries: [entry(i, put(`logical/k${i}`, 'x'.repeat(4096)))], lastWal: count });
    const stream = connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' });
    expect((await stream.next()).value).toMatchObject({ kind: 'batch', entries: [entry(1, put('logical/k1', 'x'.repeat(4096)))] });
    await waitFor('the primary to hand every batch to the wire while the secondary reads none', () => primary.wal.pending === 0);
    await stream.return(undefined);
  });

  it('ends with not_retained when the index left the window', async () => {
    const primary = await startPrimary();
    primary.wal.push({ kind: 'notRetained', lastWal: 1234 });
    const read: WalStreamMessage[] = [];
    for await (const m of connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' })) read.push(m);
    expect(read).toEqual([{ kind: 'notRetained', lastWal: 1234 }]);
  });

  it('ends quietly when the secondary aborts, and the primary\'s handler sees it', async () => {
    const primary = await startPrimary();
    const abort = new AbortController();
    const stream = connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' }, abort.signal);
    primary.wal.push({ kind: 'batch', entries: [entry(1, put('k', 'v'))], lastWal: 1 });
    const first = await stream.next();
    expect(first.value).toMatchObject({ kind: 'batch' });
    abort.abort();
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    await waitFor('the handler to see the stream end', () => primary.wal.aborted);
  });

  it('fails with ReplicationUnavailableError when the primary goes silent, heartbeats included', async () => {
    const primary = await startPrimary({}, { heartbeatMs: 60 * 60 * 1000 });
    const stream = connect(primary.address, secondary, { silenceMs: 300 }).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' });
    await expect(stream.next()).rejects.toThrow(ReplicationUnavailableError);
  });

  it('fails with the server\'s typed error when the handler refuses the stream', async () => {
    const primary = await startPrimary({
      streamWals: () => {
        throw new CredentialRefusedError('revoked');
      },
    });
    const stream = connect(primary.address).streamWals({ fromIndex: 1, primaryClusterId: '', walSource: '', nodeId: '', apiAddress: '', clusterAddress: '' });
    await expect(stream.next()).rejects.toMatchObject({ name: 'CredentialRefusedError', reason: 'revoked' });
  });
});

describe('replication wire: Merkle diff and sync', () => {
  it('round-trips a diff and a sync, pages cut, absent keys as null', async () => {
    const primary = await startPrimary({}, { maxPageBytes: 2048 });
    const client = connect(primary.address, secondary, { diffPageBytes: 1000 });
    const hashes = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const diffPages = [];
    for await (const page of client.merkleDiff({ trees: [{ tree: 'replicated', leafHashes: hashes }, { tree: 'local', leafHashes: [] }] })) diffPages.push(page);
    // The diff comes in pages, each asked for from where the last one ended.
    expect(diffPages).toEqual([
      { lastWal: 40, leaves: [{ tree: 'replicated', leaf: 7, entries: [{ key: 'replicated/k0', hash: hashes[0] }, { key: 'replicated/k1', hash: hashes[1] }] }], next: 1 },
      { lastWal: 41, leaves: [{ tree: 'local', leaf: 8, entries: [] }] },
    ]);
    expect(primary.calls.filter((c) => c.method === 'merkleDiff').map((c) => c.page)).toEqual([{ from: 0, maxBytes: 1000 }, { from: 1, maxBytes: 1000 }]);
    const keys = [...Array.from({ length: 200 }, (_, i) => `logical/key-${i}`), 'gone/1'];
    const pages: KeyValue[][] = [];
    for await (const page of client.merkleSync(keys)) pages.push(page);
    expect(pages.length).toBeGreaterThan(1);
    const all = pages.flat();
    expect(all.map((kv) => kv.key)).toEqual(keys);
    expect(all[0]).toEqual({ key: 'logical/key-0', value: Buffer.from('value of logical/key-0') });
    expect(all[all.length - 1]).toEqual({ key: 'gone/1', value: null });
  });

  it('refuses a sync of an empty key and a diff of too many trees, naming the field', async () => {
    const primary = await startPrimary();
    const client = connect(primary.address);
    const sync = client.merkleSync(['a', '']);
    await expect(sync.next()).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, message: expect.stringMatching(/keys: .*empty/) });
    await expect(client.merkleDiff({ trees: Array.from({ length: 17 }, (_, i) => ({ tree: `t${i}`, leafHashes: [] })) }).next()).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT, message: expect.stringMatching(/trees: at most 16/),
    });
  });

  it('refuses a diff page past the leaves asked about, and a primary whose pages do not move forward', async () => {
    const trees = [{ tree: 'replicated', leafHashes: [Buffer.alloc(32)] }];
    const pastTheEnd = await startPrimary({ merkleDiff: async () => ({ lastWal: 1, leaves: [], next: 5 }) });
    const pages = connect(pastTheEnd.address).merkleDiff({ trees });
    await pages.next();
    await expect(pages.next()).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, message: expect.stringMatching(/page_from: at most .*\(1\)/) });
    const stuck = await startPrimary({ merkleDiff: async () => ({ lastWal: 1, leaves: [], next: 1 }) });
    const again = connect(stuck.address).merkleDiff({ trees });
    await again.next();
    await expect(again.next()).rejects.toThrow(/does not move forward/);
  });
});

describe('replication wire: forwarded writes', () => {
  it('carries a forwarded write and the primary\'s answer as they are, errors included', async () => {
    const primary = await startPrimary();
    const client = connect(primary.address);
    const request = { operation: 'update', path: 'secret/data/x', data: { data: { a: 'b' }, n: [1, null] }, namespace: 'team/', remoteAddress: '10.0.0.9' };
    await expect(client.forward(request, 5_000)).resolves.toEqual({ status: 200, body: { data: { echoed: request } }, lastWal: 43 });
    expect(primary.calls.at(-1)).toMatchObject({ method: 'forward', caller: { secondaryId: 'dr-east' } });

    const refusing = await startPrimary({ forward: async () => ({ status: 403, body: { errors: ['permission denied'] }, lastWal: 7 }) });
    await expect(connect(refusing.address).forward({ operation: 'delete', path: 'secret/data/x', data: {} }, 5_000))
      .resolves.toEqual({ status: 403, body: { errors: ['permission denied'] }, lastWal: 7 });
    const empty = await startPrimary({ forward: async () => ({ status: 204, lastWal: 8 }) });
    await expect(connect(empty.address).forward({ operation: 'delete', path: 'secret/data/x', data: {} }, 5_000)).resolves.toEqual({ status: 204, lastWal: 8 });
  });

  it('refuses a forwarded read or an empty path, naming the field', async () => {
    const primary = await startPrimary();
    const client = connect(primary.address);
    await expect(client.forward({ operation: 'read', path: 'secret/x', data: {} }, 5_000)).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, message: expect.stringMatching(/operation/) });
    await expect(client.forward({ operation: 'update', path: '', data: {} }, 5_000)).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, message: expect.stringMatching(/path/) });
  });
});

describe('replication wire: who may call', () => {
  it('accepts a replication CA trusted at run time and refuses new connections once it is not', async () => {
    const primary = await startPrimary();
    const stranger = await issueSecondaryCertificate(otherCa, 'dr-west', 60 * 60 * 1000);
    await expect(connect(primary.address, stranger).ping()).rejects.toBeInstanceOf(ReplicationUnavailableError);

    primary.server.trustCas([ca.caCert, otherCa.caCert]);
    const west = connect(primary.address, stranger);
    expect(await west.ping()).toMatchObject({ clusterId: 'primary-cluster' });
    expect(primary.calls.at(-1)?.caller.secondaryId).toBe('dr-west');

    primary.server.trustCas([ca.caCert]);
    await expect(connect(primary.address, stranger).ping()).rejects.toBeInstanceOf(ReplicationUnavailableError);
    // The connection opened while the CA was trusted stays up, but no call gets through it.
    await expect(west.ping()).rejects.toMatchObject({ name: 'CredentialRefusedError', reason: 'unknown' });
    expect(await connect(primary.address).ping()).toMatchObject({ clusterId: 'primary-cluster' });
  });

  it('refuses the cluster\'s own certificate on the replication service', async () => {
    const primary = await startPrimary();
    await expect(connect(primary.address, cluster).ping()).rejects.toMatchObject({ name: 'CredentialRefusedError', reason: 'unknown' });
    expect(primary.calls).toEqual([]);
  });

  it('lets a secondary\'s certificate through to the replication service only, never to Raft\'s', async () => {
    const primary = await startPrimary({}, {});
    const member = new GrpcTransport({ id: 'x', listen: '127.0.0.1:0', tls: { ca: cluster.caCert, cert: secondary.cert, key: secondary.key } });
    cleanups.push(() => member.close());
    const refused = await member.call(primary.address, Buffer.from('probe')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(MemberCallError);
    expect((refused as Error).message).toMatch(/PERMISSION_DENIED/);
    expect(await connect(primary.address).ping()).toMatchObject({ clusterId: 'primary-cluster' });
  });

  it('refuses a primary whose certificate is not of the cluster CA the secondary was given', async () => {
    const primary = await startPrimary();
    const otherCluster = await createClusterTls();
    const client = new ReplicationClient(primary.address, { ca: otherCluster.caCert, cert: secondary.cert, key: secondary.key }, { timeoutMs: 2_000 });
    cleanups.push(() => client.close());
    await expect(client.ping()).rejects.toBeInstanceOf(ReplicationUnavailableError);
    expect(primary.calls).toEqual([]);
  });
});

describe('replication wire: unreachable primaries', () => {
  it('fails at once with a clear error when nobody listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const failure = await connect(`127.0.0.1:${port}`, secondary, { timeoutMs: 3_000 }).ping().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ReplicationUnavailableError);
    expect((failure as Error).message).toContain(`127.0.0.1:${port}`);
  });

  it('fails within the timeout when the address accepts connections but never answers', async () => {
    const sockets: Socket[] = [];
    const silent: NetServer = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      silent.close(() => resolve());
    }));
    const address = `127.0.0.1:${(silent.address() as { port: number }).port}`;
    const failure = await connect(address, secondary, { timeoutMs: 1_000 }).ping().catch((err: unknown) => err);
    // The connect timeout's own message: without it the call would wait for gRPC's connection attempt (20 s or more).
    expect(failure).toBeInstanceOf(ReplicationUnavailableError);
    expect((failure as Error).message).toMatch(/could not connect within 1000 ms/);
  });
});

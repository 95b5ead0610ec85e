import { createHash, randomBytes } from 'node:crypto';
import { Client, Metadata, credentials, status, type ClientWritableStream, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Message, NodeId } from '../core/types';
import { CLUSTER_SERVER_NAME } from '../tls/cluster-name';
import { createClusterTls, type ClusterTls } from '../tls/cluster-tls';
import { encodeMessage, type WireBatch } from './codec';
import { SnapshotSendError } from './errors';
import { MemberCallError } from './member-calls';
import { GrpcTransport, type GrpcTransportOptions } from './grpc-transport';
import { FROM_HEADER, TO_HEADER, raftService } from './raft-proto';
import type { TransportHandlers } from './transport';

let tls: ClusterTls;
let foreignTls: ClusterTls;

beforeAll(async () => {
  [tls, foreignTls] = await Promise.all([createClusterTls(), createClusterTls()]);
});

interface TestNode {
  id: NodeId;
  transport: GrpcTransport;
  received: Message[];
  unreachable: NodeId[];
  /** Replaced by tests that receive snapshots. */
  snapshot: TransportHandlers['snapshot'];
}

const started: GrpcTransport[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.close()));
});

async function startNode(id: NodeId, options: Partial<GrpcTransportOptions> = {}): Promise<TestNode> {
  const transport = new GrpcTransport({ id, listen: '127.0.0.1:0', tls: { ca: tls.caCert, cert: tls.cert, key: tls.key }, reconnect: { initialMs: 20, maxMs: 100 }, ...options });
  const node: TestNode = {
    id,
    transport,
    received: [],
    unreachable: [],
    snapshot: () => Promise.reject(new Error('no snapshot expected')),
  };
  started.push(transport);
  await transport.start({
    message: (m) => node.received.push(m),
    unreachable: (peer) => node.unreachable.push(peer),
    snapshot: (m, data) => node.snapshot(m, data),
  });
  return node;
}

function connect(...nodes: TestNode[]): void {
  for (const a of nodes) for (const b of nodes) if (a !== b) a.transport.setPeer(b.id, b.transport.address);
}

/** Messages whose term is their sequence number, so that order is easy to check. */
function numbered(from: NodeId, to: NodeId, first: number, count: number): Message[] {
  return Array.from({ length: count }, (_, i) => ({ type: 'append', from, to, term: first + i, index: first + i, commit: 0, entries: [{ index: first + i, term: 1, type: 'normal', data: Buffer.from(`entry ${first + i}`) }] }));
}

const terms = (messages: Message[]): number[] => messages.map((m) => m.term);
const range = (first: number, count: number): number[] => Array.from({ length: count }, (_, i) => first + i);
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

async function* pieces(data: Buffer, sizes: number[]): AsyncGenerator<Buffer> {
  let offset = 0;
  for (let i = 0; offset < data.length; i++) {
    const size = sizes[i % sizes.length]!;
    yield data.subarray(offset, offset + size);
    offset += size;
  }
}

/** A Stream call made by hand, as a foreign or buggy sender would. */
function rawStream(to: TestNode, from: NodeId): { call: ClientWritableStream<WireBatch>; ended: Promise<void> } {
  return rawStreamAs(tls, to, from);
}

const snapshotMessage = (from: NodeId, to: NodeId): Message => ({ type: 'snapshot', from, to, term: 3, snapshot: { index: 100, term: 2, conf: { voters: [from, to], learners: [] } } });

describe('GrpcTransport messages', () => {
  it('delivers batches between two nodes in order, one write per peer and task', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    for (let turn = 0; turn < 20; turn++) {
      a.transport.send(numbered('a', 'b', turn * 100, 50));
      a.transport.send(numbered('a', 'b', turn * 100 + 50, 50));
      b.transport.send(numbered('b', 'a', turn, 1));
      await nextTurn();
    }
    await waitFor('all messages', () => b.received.length === 2000 && a.received.length === 20);
    expect(terms(b.received)).toEqual(range(0, 2000));
    expect(terms(a.received)).toEqual(range(0, 20));
    expect(b.received[7]).toEqual(numbered('a', 'b', 7, 1)[0]);
    expect(a.transport.stats()).toMatchObject({ sent: 2000, batches: 20 });
    expect(b.transport.stats().received).toBe(2000);
    expect([...a.unreachable, ...b.unreachable]).toEqual([]);
  });

  it('writes what a task sent before the event loop turns, not a turn later', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    a.transport.send(numbered('a', 'b', 0, 3));
    a.transport.send(numbered('a', 'b', 3, 2));
    expect(a.transport.stats().batches).toBe(0);
    // Microtasks only: a flush left for the next turn of the event loop would not have run yet.
    await Promise.resolve();
    expect(a.transport.stats()).toMatchObject({ sent: 5, batches: 1 });
    await waitFor('the messages', () => b.received.length === 5);
    expect(terms(b.received)).toEqual(range(0, 5));
  });

  it('keeps each sender in order between three nodes sending to each other at once', async () => {
    const nodes = [await startNode('n1'), await startNode('n2'), await startNode('n3')];
    connect(...nodes);
    for (let turn = 0; turn < 10; turn++) {
      for (const from of nodes) for (const to of nodes) if (from !== to) from.transport.send(numbered(from.id, to.id, turn * 30, 30));
      await nextTurn();
    }
    await waitFor('all messages', () => nodes.every((n) => n.received.length === 600));
    for (const to of nodes) {
      for (const from of nodes) {
        if (from === to) continue;
        expect({ from: from.id, to: to.id, terms: terms(to.received.filter((m) => m.from === from.id)) }).toEqual({ from: from.id, to: to.id, terms: range(0, 300) });
      }
    }
  });

  it('cuts batches under maxMessageBytes and drops a message too large to send alone', async () => {
    const [a, b] = [await startNode('a', { maxMessageBytes: 64 * 1024 }), await startNode('b', { maxMessageBytes: 64 * 1024 })];
    connect(a, b);
    const big = (term: number, bytes: number): Message => ({ type: 'append', from: 'a', to: 'b', term, entries: [{ index: term, term: 1, type: 'normal', data: Buffer.alloc(bytes, term) }] });
    a.transport.send([big(0, 20_000), big(1, 20_000), big(2, 100_000), big(3, 20_000), big(4, 20_000)]);
    await waitFor('the messages that fit', () => b.received.length === 4);
    expect(terms(b.received)).toEqual([0, 1, 3, 4]);
    expect(a.transport.stats()).toMatchObject({ batches: 2, dropped: { tooLarge: 1 } });
  });

  it('drops the newest messages beyond maxQueuedMessages and reports the peer unreachable', async () => {
    const [a, b] = [await startNode('a', { maxQueuedMessages: 10 }), await startNode('b')];
    connect(a, b);
    a.transport.send(numbered('a', 'b', 0, 25));
    await waitFor('the queued messages', () => b.received.length === 10);
    expect(terms(b.received)).toEqual(range(0, 10));
    expect(a.transport.stats().dropped.queueFull).toBe(15);
    expect(a.unreachable).toEqual(['b']);
  });

  it('counts messages for a node without an address', async () => {
    const a = await startNode('a');
    a.transport.send(numbered('a', 'nobody', 0, 3));
    expect(a.transport.stats().dropped.unknownPeer).toBe(3);
  });

  it('never hands a node a message addressed to another', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    // a believes c lives at b's address: b refuses the stream, and a learns c is unreachable.
    a.transport.setPeer('c', b.transport.address);
    a.transport.send(numbered('a', 'c', 0, 5));
    await waitFor('unreachable', () => a.unreachable.includes('c'));

    // A stream addressed to b that carries a message for someone else: only that one is dropped.
    const stream = rawStream(b, 'x');
    stream.call.write({ messages: [...numbered('x', 'b', 0, 1), ...numbered('x', 'c', 1, 1), ...numbered('x', 'b', 2, 1)].map(encodeMessage) });
    stream.call.end();
    await stream.ended;
    expect(terms(b.received)).toEqual([0, 2]);
    expect(b.received.every((m) => m.to === 'b')).toBe(true);
    expect(b.transport.stats().dropped.misaddressed).toBe(1);
  });

  it('reads only the newest stream of a sender, so that a stale one cannot reorder messages', async () => {
    const b = await startNode('b');
    const older = rawStream(b, 'x');
    older.call.write({ messages: numbered('x', 'b', 0, 1).map(encodeMessage) });
    await waitFor('the first stream', () => b.received.length === 1);
    const newer = rawStream(b, 'x');
    newer.call.write({ messages: numbered('x', 'b', 1, 1).map(encodeMessage) });
    await waitFor('the second stream', () => b.received.length === 2);
    older.call.write({ messages: numbered('x', 'b', 99, 1).map(encodeMessage) });
    await expect(older.ended).rejects.toMatchObject({ code: status.ABORTED });
    newer.call.write({ messages: numbered('x', 'b', 2, 1).map(encodeMessage) });
    newer.call.end();
    await newer.ended;
    expect(terms(b.received)).toEqual([0, 1, 2]);
  });
});

describe('GrpcTransport failures', () => {
  it('reports a peer nobody listens on as unreachable, and drops while backing off', async () => {
    const gone = await startNode('gone');
    const address = gone.transport.address;
    await gone.transport.close();
    const a = await startNode('a', { reconnect: { initialMs: 10_000, maxMs: 10_000 } });
    a.transport.setPeer('gone', address);
    a.transport.send(numbered('a', 'gone', 0, 1));
    await waitFor('unreachable', () => a.unreachable.length > 0);
    expect(a.unreachable).toEqual(['gone']);
    a.transport.send(numbered('a', 'gone', 1, 4));
    expect(a.transport.stats().dropped.peerDown).toBe(4);
  });

  it('reconnects to a peer that restarted at the same address', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    a.transport.send(numbered('a', 'b', 0, 10));
    await waitFor('first messages', () => b.received.length === 10);

    await b.transport.close();
    let term = 10;
    while (!a.unreachable.includes('b')) {
      a.transport.send(numbered('a', 'b', term++, 1));
      await sleep(10);
    }
    const restarted = await startNode('b', { listen: b.transport.address });
    while (restarted.received.length < 5) {
      a.transport.send(numbered('a', 'b', term++, 1));
      await sleep(10);
    }
    const seen = terms(restarted.received);
    expect(seen).toEqual([...seen].sort((x, y) => x - y));
    expect(seen[0]).toBeGreaterThanOrEqual(10);
  });

  it('dials a peer that came back as soon as it opens a stream, not when the backoff runs out', async () => {
    // Backoffs far longer than the test: only the comeback itself can make a dial again.
    const slow = { reconnect: { initialMs: 60_000, maxMs: 60_000 } };
    const [a, b] = [await startNode('a', slow), await startNode('b', slow)];
    connect(a, b);
    const address = b.transport.address;
    await b.transport.close();
    a.transport.send(numbered('a', 'b', 0, 1));
    await waitFor('b to be unreachable', () => a.unreachable.includes('b'));
    const restarted = await startNode('b', { ...slow, listen: address });
    restarted.transport.setPeer('a', a.transport.address);
    let term = 1;
    await waitFor('a message from a to reach the restarted b', () => {
      a.transport.send(numbered('a', 'b', term++, 1));
      return restarted.received.length > 0;
    }, 15_000);
  });

  it('refuses a peer whose certificate another CA signed, in both directions', async () => {
    const a = await startNode('a');
    const mallory = await startNode('m', { tls: { ca: foreignTls.caCert, cert: foreignTls.cert, key: foreignTls.key } });
    let snapshotsOffered = 0;
    a.snapshot = mallory.snapshot = () => {
      snapshotsOffered++;
      return Promise.resolve();
    };
    connect(a, mallory);
    a.transport.send(numbered('a', 'm', 0, 3));
    mallory.transport.send(numbered('m', 'a', 0, 3));
    await waitFor('both to give up', () => a.unreachable.includes('m') && mallory.unreachable.includes('a'));
    await expect(a.transport.sendSnapshot(snapshotMessage('a', 'm'), () => pieces(Buffer.alloc(10), [10]))).rejects.toMatchObject({ reason: 'failed' });
    await expect(mallory.transport.sendSnapshot(snapshotMessage('m', 'a'), () => pieces(Buffer.alloc(10), [10]))).rejects.toMatchObject({ reason: 'failed' });
    expect(a.received).toEqual([]);
    expect(mallory.received).toEqual([]);
    expect(snapshotsOffered).toBe(0);
  });
});

describe('GrpcTransport snapshots', () => {
  it('streams several MiB intact and in order, in chunks of at most 256 KiB', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    const data = randomBytes(6 * 1024 * 1024 + 123);
    let got: { m: Message; sha: string; chunks: number[] } | undefined;
    b.snapshot = async (m, chunks) => {
      const hash = createHash('sha256');
      const sizes: number[] = [];
      for await (const chunk of chunks) {
        hash.update(chunk);
        sizes.push(chunk.length);
      }
      got = { m, sha: hash.digest('hex'), chunks: sizes };
    };
    // Odd piece sizes: some are cut into several chunks, some are smaller than a chunk.
    await a.transport.sendSnapshot(snapshotMessage('a', 'b'), () => pieces(data, [1_000_000, 3, 700_000, 256 * 1024]));
    expect(got?.m).toEqual(snapshotMessage('a', 'b'));
    expect(got?.sha).toBe(createHash('sha256').update(data).digest('hex'));
    expect(Math.max(...(got?.chunks ?? []))).toBe(256 * 1024);
  });

  it('rejects sendSnapshot when the receiver rejects it', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    b.snapshot = async (_m, chunks) => {
      for await (const chunk of chunks) if (chunk.length > 0) throw new Error('disk full');
    };
    const sent = a.transport.sendSnapshot(snapshotMessage('a', 'b'), () => pieces(randomBytes(2 * 1024 * 1024), [64 * 1024]));
    await expect(sent).rejects.toThrow(SnapshotSendError);
    await expect(sent).rejects.toMatchObject({ reason: 'refused', message: expect.stringContaining('disk full') });
  });

  it('rejects when the data source fails, and the receiver sees its stream break', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    let firstChunkSeen = false;
    let receiverError: unknown;
    b.snapshot = async (_m, chunks) => {
      try {
        for await (const _chunk of chunks) firstChunkSeen = true;
      } catch (err) {
        receiverError = err;
        throw err;
      }
    };
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1024);
      await waitFor('the receiver to start', () => firstChunkSeen);
      throw new Error('read error');
    }
    await expect(a.transport.sendSnapshot(snapshotMessage('a', 'b'), failing)).rejects.toMatchObject({ reason: 'failed' });
    await waitFor('the receiver to see the failure', () => receiverError !== undefined);
  });

  it('times out when nothing moves, and stops reading the data', async () => {
    const [a, b] = [await startNode('a', { snapshotIdleTimeoutMs: 200 }), await startNode('b')];
    connect(a, b);
    b.snapshot = () => new Promise<void>(() => {});
    let sourceClosed = false;
    async function* endless(): AsyncGenerator<Buffer> {
      try {
        for (;;) yield Buffer.alloc(256 * 1024);
      } finally {
        sourceClosed = true;
      }
    }
    await expect(a.transport.sendSnapshot(snapshotMessage('a', 'b'), endless)).rejects.toMatchObject({ reason: 'timeout' });
    await waitFor('the source to be closed', () => sourceClosed);
  });

  it('rejects at once for a node without an address', async () => {
    const a = await startNode('a');
    await expect(a.transport.sendSnapshot(snapshotMessage('a', 'b'), () => pieces(Buffer.alloc(1), [1]))).rejects.toMatchObject({ reason: 'unknownPeer' });
  });
});

describe('GrpcTransport.close', () => {
  it('ends open streams and an unfinished snapshot at once', async () => {
    const [a, b] = [await startNode('a'), await startNode('b')];
    connect(a, b);
    b.snapshot = () => new Promise<void>(() => {});
    a.transport.send(numbered('a', 'b', 0, 1));
    b.transport.send(numbered('b', 'a', 0, 1));
    await waitFor('streams to be up', () => a.received.length === 1 && b.received.length === 1);
    const sending = a.transport.sendSnapshot(snapshotMessage('a', 'b'), () => pieces(Buffer.alloc(4 * 1024 * 1024), [1024 * 1024]));
    await sleep(20);
    const begun = Date.now();
    await Promise.all([a.transport.close(), b.transport.close()]);
    await expect(sending).rejects.toMatchObject({ reason: 'closed' });
    expect(Date.now() - begun).toBeLessThan(500);
    a.transport.send(numbered('a', 'b', 1, 1));
    expect(a.transport.stats().sent).toBe(1);
  });
});

describe('GrpcTransport calls between members', () => {
  it('carries concurrent calls on one stream and matches answers that come back out of order', async () => {
    const gates = new Map<string, () => void>();
    const b = await startNode('b', {
      callHandler: () => async (payload) => {
        const text = payload.toString();
        await new Promise<void>((resolve) => gates.set(text, resolve));
        return Buffer.from(`done ${text}`);
      },
    });
    const a = await startNode('a');
    const calls = ['one', 'two', 'three'].map((t) => a.transport.call(b.transport.address, Buffer.from(t)));
    await waitFor('the calls to arrive', () => gates.size === 3);
    for (const t of ['three', 'one', 'two']) gates.get(t)?.();
    expect((await Promise.all(calls)).map(String)).toEqual(['done one', 'done two', 'done three']);
  });

  it('answers a failed handler, or a member with none, with MemberCallError carrying the reason', async () => {
    let serving = false;
    const b = await startNode('b', {
      callHandler: () => (serving ? async () => { throw new Error('the handler broke'); } : null),
    });
    const a = await startNode('a');
    await expect(a.transport.call(b.transport.address, Buffer.from('x'))).rejects.toThrow('this member does not serve calls yet');
    serving = true;
    const failed = a.transport.call(b.transport.address, Buffer.from('x'));
    await expect(failed).rejects.toBeInstanceOf(MemberCallError);
    await expect(failed).rejects.toThrow('the handler broke');
  });

  it('fails the calls in flight when the member goes away, and dials again for the next one', async () => {
    let release: () => void = () => {};
    const b = await startNode('b', { callHandler: () => () => new Promise<Buffer>((resolve) => { release = () => resolve(Buffer.from('late')); }) });
    const a = await startNode('a');
    const waiting = a.transport.call(b.transport.address, Buffer.from('x'));
    await sleep(50);
    await b.transport.close();
    release();
    await expect(waiting).rejects.toBeInstanceOf(MemberCallError);

    const c = await startNode('c', { callHandler: () => async (p) => Buffer.from(`c got ${p.toString()}`) });
    expect((await a.transport.call(c.transport.address, Buffer.from('y'))).toString()).toBe('c got y');
  });

  it('refuses a caller without the cluster certificate', async () => {
    const b = await startNode('b', { callHandler: () => async () => Buffer.from('secret') });
    const stranger = new GrpcTransport({ id: 'x', listen: '127.0.0.1:0', tls: { ca: tls.caCert, cert: foreignTls.cert, key: foreignTls.key } });
    started.push(stranger);
    await expect(stranger.call(b.transport.address, Buffer.from('x'))).rejects.toBeInstanceOf(MemberCallError);
  });
});

describe('GrpcTransport calls past the message limit', () => {
  it('fails only that call, before sending or instead of answering, and the stream carries on', async () => {
    const limit = 64 * 1024;
    const b = await startNode('b', {
      maxMessageBytes: limit,
      callHandler: () => async (payload) => (payload.toString() === 'big answer' ? Buffer.alloc(limit) : Buffer.from(`ok ${payload.length}`)),
    });
    const a = await startNode('a', { maxMessageBytes: limit });
    const waiting = a.transport.call(b.transport.address, Buffer.from('small'));
    await expect(a.transport.call(b.transport.address, Buffer.alloc(limit))).rejects.toThrow(/larger than the 65536-byte message limit/);
    await expect(a.transport.call(b.transport.address, Buffer.from('big answer'))).rejects.toThrow(/answer is larger than/);
    expect((await waiting).toString()).toBe('ok 5');
    expect((await a.transport.call(b.transport.address, Buffer.from('after'))).toString()).toBe('ok 5');
  });
});

describe('GrpcTransport services beside Raft', () => {
  /** A service without a proto: its messages are the raw bytes. */
  const echoService = (name: string): ServiceDefinition => ({
    Echo: {
      path: `/test.${name}/Echo`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    },
  });
  const echo = (name: string): UntypedServiceImplementation => ({
    Echo: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, Buffer.from(`${name}: ${call.request.toString()}`)),
  });

  /** One call over a new connection, presenting `identity`; the server is checked against the cluster CA. */
  async function callEcho(address: string, name: string, identity: ClusterTls): Promise<string> {
    const client = new Client(address, credentials.createSsl(Buffer.from(tls.caCert), Buffer.from(identity.key), Buffer.from(identity.cert)), {
      'grpc.ssl_target_name_override': CLUSTER_SERVER_NAME,
      'grpc.use_local_subchannel_pool': 1,
    });
    const method = echoService(name)['Echo']!;
    try {
      return await new Promise<string>((resolve, reject) => {
        client.makeUnaryRequest<Buffer, Buffer>(method.path, method.requestSerialize, method.responseDeserialize, Buffer.from('hi'), new Metadata(), { deadline: Date.now() + 10_000 }, (err, answer) =>
          err ? reject(err) : resolve(answer!.toString()),
        );
      });
    } finally {
      client.close();
    }
  }

  it('serves services given at construction and added after start, to members', async () => {
    const a = await startNode('a', { services: [{ definition: echoService('First'), implementation: echo('first') }] });
    a.transport.addService(echoService('Second'), echo('second'));
    expect(await callEcho(a.transport.address, 'First', tls)).toBe('first: hi');
    expect(await callEcho(a.transport.address, 'Second', tls)).toBe('second: hi');
  });

  it('accepts clients of a CA trusted at run time on its services but not on Raft\'s, and refuses new connections once it is dropped', async () => {
    const a = await startNode('a', { services: [{ definition: echoService('Echo'), implementation: echo('a') }], callHandler: () => async () => Buffer.from('member answer') });
    const b = await startNode('b');
    // Not trusted yet: refused during the handshake.
    await expect(callEcho(a.transport.address, 'Echo', foreignTls)).rejects.toMatchObject({ code: status.UNAVAILABLE });

    a.transport.trustClientCas([foreignTls.caCert]);
    expect(await callEcho(a.transport.address, 'Echo', foreignTls)).toBe('a: hi');

    // The same client certificate on Raft's services: the connection is accepted, each call refused.
    const stranger = new GrpcTransport({ id: 'x', listen: '127.0.0.1:0', tls: { ca: tls.caCert, cert: foreignTls.cert, key: foreignTls.key } });
    started.push(stranger);
    await expect(stranger.call(a.transport.address, Buffer.from('x'))).rejects.toThrow(/PERMISSION_DENIED/);
    const { call, ended } = rawStreamAs(foreignTls, a, 'b');
    call.write({ messages: [encodeMessage(numbered('b', 'a', 0, 1)[0]!)] });
    await expect(ended).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    const snapshotClient = new GrpcTransport({ id: 'b', listen: '127.0.0.1:0', tls: { ca: tls.caCert, cert: foreignTls.cert, key: foreignTls.key } });
    started.push(snapshotClient);
    snapshotClient.setPeer('a', a.transport.address);
    let snapshotsOffered = 0;
    a.snapshot = () => {
      snapshotsOffered++;
      return Promise.resolve();
    };
    await expect(snapshotClient.sendSnapshot(snapshotMessage('b', 'a'), () => pieces(Buffer.alloc(10), [10]))).rejects.toMatchObject({ reason: 'failed' });
    expect(snapshotsOffered).toBe(0);
    expect(a.received).toEqual([]);

    // Members are unaffected.
    connect(a, b);
    b.transport.send(numbered('b', 'a', 0, 2));
    await waitFor('a to receive from b', () => a.received.length === 2);
    expect((await b.transport.call(a.transport.address, Buffer.from('m'))).toString()).toBe('member answer');

    a.transport.trustClientCas([]);
    await expect(callEcho(a.transport.address, 'Echo', foreignTls)).rejects.toMatchObject({ code: status.UNAVAILABLE });
    expect(await callEcho(a.transport.address, 'Echo', tls)).toBe('a: hi');
  });

  it('refuses a client CA list with something that is not a certificate', async () => {
    const a = await startNode('a');
    expect(() => a.transport.trustClientCas(['not a certificate'])).toThrow(/PEM certificate/);
  });
});

/** A Stream call made by hand with `identity`'s certificate. */
function rawStreamAs(identity: ClusterTls, to: TestNode, from: NodeId): { call: ClientWritableStream<WireBatch>; ended: Promise<void> } {
  const client = new Client(to.transport.address, credentials.createSsl(Buffer.from(tls.caCert), Buffer.from(identity.key), Buffer.from(identity.cert)), {
    'grpc.ssl_target_name_override': CLUSTER_SERVER_NAME,
    'grpc.use_local_subchannel_pool': 1,
  });
  const method = raftService().stream;
  const metadata = new Metadata();
  metadata.set(FROM_HEADER, from);
  metadata.set(TO_HEADER, to.id);
  let call!: ClientWritableStream<WireBatch>;
  const ended = new Promise<void>((resolve, reject) => {
    call = client.makeClientStreamRequest<WireBatch, object>(method.path, method.requestSerialize, method.responseDeserialize, metadata, {}, (err) => (err ? reject(err) : resolve()));
  }).finally(() => client.close());
  return { call, ended };
}

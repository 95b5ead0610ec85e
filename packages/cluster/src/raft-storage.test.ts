import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStorageConformance } from '@strongroom/base';
import { Core, silentLogger } from '@strongroom/core';
import { encodeTxn, MemoryNetwork, RaftNode } from '@strongroom/raft';
import { RaftStorage } from './raft-storage';

const FAST = { tickMs: 10, electionTicks: 10, heartbeatTicks: 1 } as const;
const tempDir = () => mkdtemp(join(tmpdir(), 'strongroom-raft-storage-'));

/** Polls until `found` gives something (bounded: 20 s). */
async function waitFor<T>(found: () => T | undefined | false | Promise<T | undefined | false>, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await found();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

// Elections and the waits for them take a while on a loaded machine.
jest.setTimeout(60_000);

runStorageConformance('RaftStorage on a single-node cluster', async () => {
  const dir = await tempDir();
  const node = await RaftNode.open({
    id: 'solo',
    dataDir: join(dir, 'solo'),
    transport: new MemoryNetwork().transport('solo'),
    bootstrap: { voters: ['solo'], learners: [] },
    ...FAST,
  });
  return { storage: new RaftStorage(node, { ownsNode: true }), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe('RaftStorage', () => {
  it('checks and sets', async () => {
    const dir = await tempDir();
    const node = await RaftNode.open({
      id: 'solo', dataDir: dir, transport: new MemoryNetwork().transport('solo'), bootstrap: { voters: ['solo'], learners: [] }, ...FAST,
    });
    const s = new RaftStorage(node, { ownsNode: true });
    try {
      expect(await s.checkAndSet([{ key: 'lock', value: null }], [{ type: 'put', key: 'lock', value: Buffer.from('me') }])).toBe(true);
      expect(await s.checkAndSet([{ key: 'lock', value: null }], [{ type: 'put', key: 'lock', value: Buffer.from('you') }])).toBe(false);
      expect(await s.checkAndSet([{ key: 'lock', value: Buffer.from('me') }], [{ type: 'delete', key: 'lock' }])).toBe(true);
      expect(await s.get('lock')).toBeNull();
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('RaftStorage on the active node', () => {
  const ids = ['n1', 'n2', 'n3'];
  let dir: string;
  let network: MemoryNetwork;
  let nodes: RaftNode[];

  beforeEach(async () => {
    dir = await tempDir();
    network = new MemoryNetwork();
    const peers = Object.fromEntries(ids.map((id) => [id, id]));
    nodes = [];
    for (const id of ids) {
      nodes.push(await RaftNode.open({
        id, dataDir: join(dir, id), transport: network.transport(id), bootstrap: { voters: ids, learners: [] }, peers, ...FAST,
      }));
    }
  });

  afterEach(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  const leaderOf = (among: RaftNode[]) => waitFor(() => among.find((n) => n.isLeader), 'a leader');
  const put = (key: string, value: string) => encodeTxn([{ type: 'put', key, value: Buffer.from(value) }]);

  it('reads only while it is sure it still leads in the term it serves in; a standby reads its local state', async () => {
    const leader = await leaderOf(nodes);
    let serving: number | null = leader.term;
    const active = new RaftStorage(leader, { activeTerm: () => serving });
    await active.put('k', Buffer.from('v1'));
    expect((await active.get('k'))?.toString()).toBe('v1');
    expect(await active.list('')).toEqual(['k']);

    const follower = nodes.find((n) => n !== leader) as RaftNode;
    const standby = new RaftStorage(follower, { activeTerm: () => null });
    await waitFor(async () => (await standby.get('k'))?.toString() === 'v1', 'the standby to read the write locally');
    // A node that believes it serves but does not lead refuses, before and during a request alike.
    const claiming = new RaftStorage(follower, { activeTerm: () => follower.term });
    await expect(claiming.readBarrier()).rejects.toThrow('this node no longer leads the cluster; retry');
    await expect(claiming.get('k')).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/not \(or no longer\) the leader/) });

    // Leading again in a later term than it was activated in: what it holds may be stale.
    serving = leader.term - 1;
    await expect(active.readBarrier()).rejects.toThrow(/leadership changed/);
    // Inside a request, after writes that may have taken effect, the same refusal says so.
    await expect(active.get('k')).rejects.toThrow(/not \(or no longer\) the leader/);
    serving = leader.term;

    // Cut off, it must not answer from its own state once the others may have moved on.
    network.isolate(leader.id);
    const next = await leaderOf(nodes.filter((n) => n !== leader));
    await next.propose(put('k', 'v2'));
    await expect(active.get('k')).rejects.toMatchObject({ status: 503 });
    await expect(active.readBarrier()).rejects.toMatchObject({ status: 503 });
    network.heal();
  });

  it('confirms its leadership once for every read waiting when a round starts', async () => {
    const leader = await leaderOf(nodes);
    const active = new RaftStorage(leader, { activeTerm: () => leader.term });
    await active.put('k', Buffer.from('v'));
    const before = leader.stats().readRounds;
    const reads = await Promise.all(Array.from({ length: 20 }, () => active.get('k')));
    expect(reads.map((r) => r?.toString())).toEqual(Array(20).fill('v'));
    // While the lease holds there is no round at all; otherwise the reads share a few.
    expect(leader.stats().readRounds - before).toBeLessThanOrEqual(2);
  });

  it('holds a request that a core answers from memory until it is sure it still leads', async () => {
    const leader = await leaderOf(nodes);
    let serving: number | null = null;
    const core = new Core({ storage: new RaftStorage(leader, { activeTerm: () => serving }), logger: silentLogger, engines: [] });
    try {
      const { keys, rootToken } = await core.initialize(1, 1);
      await core.unseal(keys[0] as Buffer);
      serving = leader.term;
      const lookup = () => core.handle({ operation: 'read', path: 'auth/token/lookup-self', token: rootToken, data: {} });
      expect((await lookup()).status).toBe(200);
      serving = leader.term - 1;
      await expect(lookup()).rejects.toThrow(/leadership changed/);
    } finally {
      await core.close();
    }
  });
});

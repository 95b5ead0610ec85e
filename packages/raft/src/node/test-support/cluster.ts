import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryNetwork } from '../memory-transport';
import { RaftNode, type RaftNodeOptions } from '../raft-node';

export async function tempDir(prefix = 'strongroom-raft-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Polls `condition` (real time) until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Fast timings for tests on the real clock: 10 ms ticks, elections after 100-200 ms. */
export const FAST = { tickMs: 10, electionTicks: 10, heartbeatTicks: 1 } as const;

/** Nodes on one MemoryNetwork, each with its own data directory under one temporary root; addresses are the node ids. */
export class TestCluster {
  readonly network = new MemoryNetwork();
  readonly nodes = new Map<string, RaftNode>();

  private constructor(readonly root: string) {}

  static async create(): Promise<TestCluster> {
    return new TestCluster(await tempDir());
  }

  /** Bootstraps `ids` as the voters of a new cluster. */
  static async start(ids: string[], extra: Partial<RaftNodeOptions> = {}): Promise<TestCluster> {
    const cluster = await TestCluster.create();
    const peers = Object.fromEntries(ids.map((id) => [id, id]));
    for (const id of ids) await cluster.open(id, { bootstrap: { voters: ids, learners: [] }, peers, ...extra });
    return cluster;
  }

  /** Opens (or reopens) node `id` in its directory. */
  async open(id: string, extra: Partial<RaftNodeOptions> = {}): Promise<RaftNode> {
    const node = await RaftNode.open({
      id,
      dataDir: join(this.root, id),
      transport: this.network.transport(id),
      address: id,
      ...FAST,
      ...extra,
    });
    this.nodes.set(id, node);
    return node;
  }

  node(id: string): RaftNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`no node ${id}`);
    return node;
  }

  async stop(id: string): Promise<void> {
    await this.nodes.get(id)?.close();
    this.nodes.delete(id);
  }

  /** The single leader that every running node agrees on. */
  async leader(timeoutMs = 10_000): Promise<RaftNode> {
    let found: RaftNode | undefined;
    await waitFor(
      () => {
        const leaders = [...this.nodes.values()].filter((n) => n.isLeader);
        if (leaders.length !== 1) return false;
        const leader = leaders[0]!;
        const agreed = [...this.nodes.values()].every((n) => n.leader === leader.id);
        if (agreed) found = leader;
        return agreed;
      },
      'a leader all nodes agree on',
      timeoutMs,
    );
    return found!;
  }

  async waitApplied(index: number, ids = [...this.nodes.keys()]): Promise<void> {
    await waitFor(() => ids.every((id) => this.node(id).applied >= index), `nodes ${ids.join(',')} to apply ${index}`);
  }

  async close(): Promise<void> {
    for (const id of [...this.nodes.keys()]) await this.stop(id);
    await rm(this.root, { recursive: true, force: true });
  }
}

import type { Message, NodeId } from '../core/types';
import type { Transport, TransportHandlers } from '../transport/transport';

/**
 * An in-process network for tests: transports register under an address, and links between
 * two addresses can be cut and healed. Messages are structured-cloned, as a wire would copy
 * them, and delivered in a later macrotask in send order.
 */
export class MemoryNetwork {
  private readonly endpoints = new Map<string, MemoryTransport>();
  private readonly cut = new Set<string>();

  transport(address: string): MemoryTransport {
    return new MemoryTransport(this, address);
  }

  /** Drops all traffic between `a` and `b`, both ways, until `heal`. */
  partition(a: string, b: string): void {
    this.cut.add(linkKey(a, b));
    this.cut.add(linkKey(b, a));
  }

  /** Cuts `address` off from every other endpoint. */
  isolate(address: string): void {
    for (const other of this.endpoints.keys()) if (other !== address) this.partition(address, other);
  }

  heal(): void {
    this.cut.clear();
  }

  /** @internal */
  register(address: string, t: MemoryTransport): void {
    if (this.endpoints.has(address)) throw new Error(`address ${address} is already in use`);
    this.endpoints.set(address, t);
  }

  /** @internal */
  unregister(address: string, t: MemoryTransport): void {
    if (this.endpoints.get(address) === t) this.endpoints.delete(address);
  }

  /** @internal Returns the receiving endpoint, or undefined when the link is down. */
  route(from: string, to: string | undefined): MemoryTransport | undefined {
    if (to === undefined || this.cut.has(linkKey(from, to))) return undefined;
    return this.endpoints.get(to);
  }
}

export class MemoryTransport implements Transport {
  private handlers: TransportHandlers | undefined;
  private readonly peers = new Map<NodeId, string>();
  private outbox: Message[] = [];
  private flushing = false;
  private closed = false;

  constructor(
    private readonly network: MemoryNetwork,
    readonly address: string,
  ) {}

  async start(handlers: TransportHandlers): Promise<void> {
    this.network.register(this.address, this);
    this.handlers = handlers;
  }

  setPeer(id: NodeId, address: string): void {
    this.peers.set(id, address);
  }

  removePeer(id: NodeId): void {
    this.peers.delete(id);
  }

  send(messages: Message[]): void {
    if (this.closed || messages.length === 0) return;
    for (const m of messages) this.outbox.push(structuredClone(m));
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  async sendSnapshot(m: Message, data: () => AsyncIterable<Buffer>): Promise<void> {
    const target = this.network.route(this.address, this.peers.get(m.to));
    if (this.closed || !target?.handlers) throw new Error(`peer ${m.to} is unreachable`);
    await target.handlers.snapshot(structuredClone(m), copyChunks(data()));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.outbox = [];
    this.network.unregister(this.address, this);
  }

  private flush(): void {
    this.flushing = false;
    const batch = this.outbox;
    this.outbox = [];
    const unreachable = new Set<NodeId>();
    for (const m of batch) {
      const target = this.network.route(this.address, this.peers.get(m.to));
      if (target?.handlers && !target.closed) target.handlers.message(m);
      else unreachable.add(m.to);
    }
    if (!this.closed) for (const id of unreachable) this.handlers?.unreachable(id);
  }
}

function linkKey(from: string, to: string): string {
  return `${from}\u0000${to}`;
}

async function* copyChunks(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const chunk of source) yield Buffer.from(chunk);
}

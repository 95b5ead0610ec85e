import net from 'node:net';

/**
 * A TCP proxy that stands in for one network link, so a multi-process test can cut and heal
 * the link between two nodes without touching either. It forwards bytes untouched (the cluster
 * port speaks TLS end to end through it) and understands nothing of what it carries.
 */

export interface LinkProxyOptions {
  /** Where accepted connections are forwarded, as host:port. */
  target: string;
  /** Where to listen, as host:port; default 127.0.0.1 on a free port. */
  listen?: string;
  /**
   * Added latency in each direction, in milliseconds: every chunk (and the end of a stream) is
   * passed on this long after it arrived, in order, like a long network path. Default 0.
   */
  delayMs?: number;
}

/**
 * How a cut link treats new connections:
 *  - blackhole: accepts them and swallows what they send, never reaching the target, like a
 *    network dropping packets: the peer notices only through its own timeouts.
 *  - refuse: resets them as soon as they are accepted, like a peer that is down. (A true
 *    ECONNREFUSED would need the listener closed, and its port could be taken before `heal`.)
 */
export type CutMode = 'blackhole' | 'refuse';

/** Connections handled since start, for tests to wait on and to confirm a cut took effect. */
export interface LinkProxyStats {
  forwarded: number;
  blackholed: number;
  refused: number;
}

interface Link {
  client: net.Socket;
  /** Absent for a blackholed connection. */
  upstream?: net.Socket;
}

/**
 * One proxy per directed link: put it in front of a node's cluster port and give the peer its
 * address instead. `cut` and `heal` may be called any number of times, in any order.
 */
export class LinkProxy {
  private readonly links = new Set<Link>();
  private mode: CutMode | undefined;
  private readonly counts: LinkProxyStats = { forwarded: 0, blackholed: 0, refused: 0 };

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
    private readonly delayMs: number,
    /** host:port that peers should dial instead of the target (kept after close, for logs). */
    readonly address: string,
  ) {
    server.on('connection', (client) => this.accept(client));
  }

  static async start(options: LinkProxyOptions): Promise<LinkProxy> {
    const target = parseAddress(options.target);
    const listen = parseAddress(options.listen ?? '127.0.0.1:0');
    // Half-open connections stay open so that an end from one side travels to the other as an
    // end, not as a close: the proxy must not change what either peer observes.
    const server = net.createServer({ allowHalfOpen: true, noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Nobody can connect before the port is known, so no connection is missed before the
    // constructor subscribes.
    const bound = server.address() as net.AddressInfo;
    return new LinkProxy(server, target, options.delayMs ?? 0, `${bound.address}:${bound.port}`);
  }

  get stats(): LinkProxyStats {
    return { ...this.counts };
  }

  /**
   * Cuts the link: every current connection is reset at once, and new ones are blackholed or
   * refused until `heal`. Cutting again only changes the mode.
   */
  cut(options: { mode?: CutMode } = {}): void {
    this.mode = options.mode ?? 'blackhole';
    for (const link of this.links) this.drop(link);
  }

  /**
   * New connections pass again. Blackholed connections are reset rather than left hanging:
   * the bytes they sent are gone, so they could never carry a working stream, and a reset lets
   * the peer reconnect now instead of after its keepalive timeout.
   */
  heal(): void {
    this.mode = undefined;
    for (const link of this.links) if (link.upstream === undefined) this.drop(link);
  }

  /** Stops listening and resets every connection; resolves once nothing is left open. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const link of this.links) this.drop(link);
    await closed;
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'refuse') {
      this.counts.refused++;
      client.on('error', ignore);
      client.resetAndDestroy();
      return;
    }
    const link: Link = { client };
    this.links.add(link);
    // Errors only ever mean the link is gone; the 'close' that follows does the bookkeeping.
    client.on('error', ignore);
    if (this.mode === 'blackhole') {
      this.counts.blackholed++;
      client.on('close', () => this.links.delete(link));
      client.resume();
      return;
    }

    this.counts.forwarded++;
    const upstream = net.connect({ ...this.target, allowHalfOpen: true, noDelay: true });
    link.upstream = upstream;
    upstream.on('error', ignore);
    this.carry(client, upstream);
    this.carry(upstream, client);
    // An orderly close of one side (both directions ended) leaves the other to flush and close
    // by itself; resetting it could cut off bytes still queued. A failure on either side
    // (including a target that is down: a killed node) resets the other, as a broken network
    // path would.
    const onClose = (other: net.Socket) => (hadError: boolean) => {
      if (hadError) this.drop(link);
      else if (other.destroyed) this.links.delete(link);
    };
    client.on('close', onClose(upstream));
    upstream.on('close', onClose(client));
  }

  /**
   * Passes bytes one way. With a delay, timers of one duration fire in the order they were set,
   * so chunks keep their order; backpressure is given up, which a test's small traffic can afford.
   */
  private carry(from: net.Socket, to: net.Socket): void {
    if (this.delayMs <= 0) {
      from.pipe(to);
      return;
    }
    from.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, this.delayMs);
    });
    from.on('end', () => {
      setTimeout(() => {
        if (!to.destroyed) to.end();
      }, this.delayMs);
    });
  }

  /** Resets both ends of a link; safe to call more than once. */
  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    reset(link.client);
    if (link.upstream !== undefined) reset(link.upstream);
  }
}

function reset(socket: net.Socket): void {
  if (socket.destroyed) return;
  // Only a connected socket can send a reset; one still connecting is simply abandoned.
  if (socket.pending) socket.destroy();
  else socket.resetAndDestroy();
}

function ignore(): void {}

function parseAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`expected host:port, got ${JSON.stringify(address)}`);
  }
  return { host: address.slice(0, colon), port };
}

import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { LinkProxy } from './link-proxy';

/** A target that greets each connection, then echoes; it remembers its connections. */
class EchoTarget {
  readonly sockets: net.Socket[] = [];
  private constructor(private readonly server: net.Server) {}

  static async start(port = 0): Promise<EchoTarget> {
    const server = net.createServer({ allowHalfOpen: true });
    const target = new EchoTarget(server);
    server.on('connection', (socket) => {
      target.sockets.push(socket);
      socket.on('error', () => {});
      socket.write('hello:');
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return target;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

function connect(address: string): net.Socket {
  const colon = address.lastIndexOf(':');
  return net.connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)), allowHalfOpen: true });
}

/** A connected socket; later errors (resets are expected here) are left to 'close'. */
function dial(address: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(address);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Everything the socket receives, from now on. */
function collect(socket: net.Socket): { bytes(): Buffer; ended: Promise<void> } {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { bytes: () => Buffer.concat(chunks), ended: new Promise((resolve) => socket.once('end', resolve)) };
}

/** Resolves once the socket has closed, whether cleanly or by reset. */
function closed(socket: net.Socket): Promise<void> {
  return socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

/** Waits until `condition` holds; the Jest timeout bounds it. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function roundTrip(address: string, message: string): Promise<string> {
  const socket = await dial(address);
  const received = collect(socket);
  socket.end(message);
  await received.ended;
  socket.destroy();
  return received.bytes().toString();
}

/**
 * How many TCP handles the process holds, once that stops changing: closed handles are released
 * a loop turn or two later, including those of earlier tests.
 */
async function settledTcpHandles(): Promise<number> {
  const count = () => process.getActiveResourcesInfo().filter((name) => name.startsWith('TCP')).length;
  let last = count();
  for (let stable = 0; stable < 5; ) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const now = count();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return last;
}

describe('LinkProxy', () => {
  let target: EchoTarget;
  let proxy: LinkProxy;
  const clients: net.Socket[] = [];

  beforeEach(async () => {
    target = await EchoTarget.start();
    proxy = await LinkProxy.start({ target: target.address });
  });

  afterEach(async () => {
    for (const socket of clients.splice(0)) socket.destroy();
    await proxy.close();
    await target.close();
  });

  async function open(): Promise<net.Socket> {
    const socket = await dial(proxy.address);
    clients.push(socket);
    return socket;
  }

  it('listens on 127.0.0.1 and carries bytes both ways unchanged, half-closes included', async () => {
    expect(proxy.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const socket = await open();
    const received = collect(socket);
    const payload = randomBytes(4 * 1024 * 1024);
    socket.end(payload);
    // The end reaches the target as an end: it echoes everything, then ends in turn.
    await received.ended;
    expect(received.bytes().equals(Buffer.concat([Buffer.from('hello:'), payload]))).toBe(true);
    expect(proxy.stats).toEqual({ forwarded: 1, blackholed: 0, refused: 0 });
  });

  it('cut resets live connections at both ends and blackholes new ones; heal restores the link', async () => {
    const live = await open();
    const liveReceived = collect(live);
    live.write('before');
    await until(() => liveReceived.bytes().toString() === 'hello:before');

    proxy.cut();
    await closed(live);
    await closed(target.sockets[0] as net.Socket);

    const swallowed = await open();
    const swallowedReceived = collect(swallowed);
    swallowed.write('into the void');
    await until(() => proxy.stats.blackholed === 1);
    // Accepted but going nowhere: still open, nothing back, and the target never saw it.
    expect(swallowed.destroyed).toBe(false);
    expect(swallowedReceived.bytes().length).toBe(0);
    expect(target.sockets).toHaveLength(1);

    proxy.heal();
    // Its bytes are lost, so the blackholed connection is reset rather than left hanging.
    await closed(swallowed);
    expect(swallowedReceived.bytes().length).toBe(0);
    expect(await roundTrip(proxy.address, 'after')).toBe('hello:after');
    expect(target.sockets).toHaveLength(2);
    expect(proxy.stats).toEqual({ forwarded: 2, blackholed: 1, refused: 0 });
  });

  it('cut in refuse mode resets new connections straight away', async () => {
    proxy.cut({ mode: 'refuse' });
    // The reset may arrive before or after the client sees its connection complete.
    const refused = connect(proxy.address);
    const error = new Promise<Error>((resolve) => refused.once('error', resolve));
    const received = collect(refused);
    await closed(refused);
    expect((await error).message).toContain('ECONNRESET');
    expect(received.bytes().length).toBe(0);
    expect(target.sockets).toHaveLength(0);
    expect(proxy.stats).toEqual({ forwarded: 0, blackholed: 0, refused: 1 });

    proxy.heal();
    expect(await roundTrip(proxy.address, 'back')).toBe('hello:back');
  });

  it('resets the peer when the target is down, and reaches it again once it is back', async () => {
    const port = target.port;
    await target.close();
    const doomed = await open();
    await closed(doomed);

    target = await EchoTarget.start(port);
    expect(await roundTrip(proxy.address, 'again')).toBe('hello:again');
  });
});

describe('LinkProxy.close', () => {
  it('ends every connection and leaves no open handles', async () => {
    const before = await settledTcpHandles();
    const target = await EchoTarget.start();
    const proxy = await LinkProxy.start({ target: target.address });
    const forwarded = await dial(proxy.address);
    const forwardedReceived = collect(forwarded);
    await until(() => forwardedReceived.bytes().length > 0);
    proxy.cut();
    const blackholed = await dial(proxy.address);
    await until(() => proxy.stats.blackholed === 1);

    await proxy.close();
    await Promise.all([closed(forwarded), closed(blackholed)]);
    await expect(dial(proxy.address)).rejects.toThrow('ECONNREFUSED');
    await target.close();
    expect(await settledTcpHandles()).toBe(before);
  });
});

describe('LinkProxy with a delay', () => {
  it('carries bytes unchanged and in order, each way no sooner than the delay', async () => {
    const target = await EchoTarget.start();
    const proxy = await LinkProxy.start({ target: target.address, delayMs: 80 });
    try {
      const socket = await dial(proxy.address);
      const received = collect(socket);
      const started = Date.now();
      // The greeting crosses once; the echo crosses twice, so the whole exchange spans at least two delays.
      const payload = randomBytes(256 * 1024);
      socket.end(payload);
      await received.ended;
      expect(Date.now() - started).toBeGreaterThanOrEqual(2 * 80);
      expect(received.bytes().equals(Buffer.concat([Buffer.from('hello:'), payload]))).toBe(true);
      socket.destroy();
    } finally {
      await proxy.close();
      await target.close();
    }
  });
});

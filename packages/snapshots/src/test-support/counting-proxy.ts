import * as net from 'node:net';

/**
 * A loopback TCP proxy that counts the bytes clients send upstream (what a destination has
 * received) and keeps the start of each connection's traffic, where request headers are.
 */
export interface CountingProxy {
  url: string;
  sent(): number;
  /** The first 64 KiB each client connection sent, as text. */
  captured(): string;
  close(): Promise<void>;
}

export function startCountingProxy(upstream: string): Promise<CountingProxy> {
  const target = new URL(upstream);
  let sent = 0;
  const heads: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(Number(target.port), target.hostname);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); up.destroy(); });
    }
    const head = heads.push('') - 1;
    client.on('data', (d: Buffer) => {
      sent += d.length;
      const room = 64 * 1024 - (heads[head] as string).length;
      if (room > 0) heads[head] += d.subarray(0, room).toString('latin1');
    });
    client.pipe(up);
    up.pipe(client);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        sent: () => sent,
        captured: () => heads.join('\n'),
        close: () => new Promise((done) => {
          for (const s of sockets) s.destroy();
          server.close(() => done());
        }),
      });
    });
  });
}

import * as net from 'node:net';

/** A loopback TCP proxy that counts the bytes clients send upstream: what a destination has received. */
export interface CountingProxy {
  url: string;
  sent(): number;
  close(): Promise<void>;
}

export function startCountingProxy(upstream: string): Promise<CountingProxy> {
  const target = new URL(upstream);
  let sent = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(Number(target.port), target.hostname);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); up.destroy(); });
    }
    client.on('data', (d: Buffer) => { sent += d.length; });
    client.pipe(up);
    up.pipe(client);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        sent: () => sent,
        close: () => new Promise((done) => {
          for (const s of sockets) s.destroy();
          server.close(() => done());
        }),
      });
    });
  });
}

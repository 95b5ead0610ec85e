import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';
import { lingerAfter } from './linger';

interface Outcome {
  status: number;
  body: string;
  /** The error the request ended with, if any (EPIPE, ECONNRESET). */
  error?: string;
}

/**
 * Sends `total` bytes of body the way most HTTP libraries do: all of it written at once, without
 * waiting for drain or for an answer. Resolves once the request is over, with what it read.
 */
function streamBody(port: number, path: string, headers: Record<string, string>, total: number, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    let status = 0;
    let body = '';
    let error: string | undefined;
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path, agent: false,
      headers: { 'content-type': 'application/json', ...headers, ...(chunked ? {} : { 'content-length': String(total) }) },
    }, (res) => {
      status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('error', () => {});
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
    });
    req.on('close', () => setImmediate(() => resolve({ status, body, ...(error ? { error } : {}) })));
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let sent = 0; sent < total; sent += chunk.length) req.write(chunk.subarray(0, Math.min(chunk.length, total - sent)));
    req.end();
  });
}

describe('a body over max_request_size', () => {
  let t: TestServer;
  let root: string;

  beforeAll(async () => {
    t = await startTestServer({ maxRequestSize: 4096 });
    root = await initAndUnseal(t);
  });
  afterAll(() => t.stop());

  it.each([['with a Content-Length', false], ['chunked', true]])('gets a 413 that a client still sending its body reads (%s)', async (_name, chunked) => {
    const got = await streamBody(Number(new URL(t.url).port), '/v1/secret/data/big', { 'x-vault-token': root }, 16 * 1024 * 1024, chunked);
    expect(got.error).toBeUndefined();
    expect(got.status).toBe(413);
    expect(JSON.parse(got.body)).toEqual({ errors: ['request body is larger than the limit of 4096 bytes'] });
  });

  it('does the same on a connection whose LIST put it behind the rewriting socket', async () => {
    const sock = net.connect(Number(new URL(t.url).port), '127.0.0.1');
    let answer = '';
    let error: string | undefined;
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => { answer += d; });
    sock.on('error', (err: NodeJS.ErrnoException) => { error ??= err.code ?? err.message; });
    const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
    sock.write(`LIST /v1/secret/metadata/ HTTP/1.1\r\nHost: x\r\nX-Vault-Token: ${root}\r\n\r\n`);
    const deadline = Date.now() + 20_000;
    while (!/^HTTP\/1\.1 \d{3} [^]*\r\n\r\n/.test(answer) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    answer = '';
    const total = 8 * 1024 * 1024;
    sock.write(`POST /v1/secret/data/big HTTP/1.1\r\nHost: x\r\nX-Vault-Token: ${root}\r\nContent-Length: ${total}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let sent = 0; sent < total; sent += chunk.length) sock.write(chunk);
    sock.end();
    await closed;
    expect(error).toBeUndefined();
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('request body is larger than the limit of 4096 bytes');
  });
});

describe('the lingering close after a refused body', () => {
  let server: http.Server;
  let port: number;
  let closed: Array<Promise<void>>;

  beforeAll(async () => {
    closed = [];
    server = http.createServer((req, res) => {
      closed.push(new Promise((resolve) => req.socket.once('close', () => resolve())));
      res.setHeader('connection', 'close');
      // One bound at a time: the other one far out of reach.
      if (req.url === '/bytes') lingerAfter(req, res, 1024 * 1024, 600_000);
      else lingerAfter(req, res, 1024 * 1024 * 1024, 300);
      res.writeHead(413, { 'content-type': 'application/json' });
      res.end('{"errors":["too large"]}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function drainedOrClosed(sock: net.Socket): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        sock.off('drain', done);
        sock.off('close', done);
        resolve();
      };
      sock.on('drain', done);
      sock.on('close', done);
    });
  }

  /** A client that never closes its side (even after the server's FIN) and reads whatever comes. */
  function client(path: string): { sock: net.Socket; answer: () => string } {
    const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let answer = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => { answer += d; });
    sock.on('error', () => {});
    sock.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    return { sock, answer: () => answer };
  }

  it('stops reading once it has dropped its byte bound', async () => {
    const { sock, answer } = client('/bytes');
    const chunk = `10000\r\n${'a'.repeat(0x10000)}\r\n`;
    let sent = 0;
    // Keeps sending, for at most 64 MiB, until the server cuts the connection.
    while (sent < 64 * 1024 * 1024 && !sock.destroyed && sock.writable) {
      if (!sock.write(chunk)) await drainedOrClosed(sock);
      sent += 0x10000;
    }
    await closed.pop();
    expect(answer()).toMatch(/^HTTP\/1\.1 413 /);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    sock.destroy();
  });

  it('closes the connection once its time is up when the client sends nothing more', async () => {
    const { sock, answer } = client('/time');
    // A body begun and never finished.
    sock.write('7\r\npartial\r\n');
    // The server's side of the connection closes by itself; the client's never would.
    await new Promise<void>((resolve) => sock.once('end', () => resolve()));
    await closed.pop();
    expect(answer()).toMatch(/^HTTP\/1\.1 413 /);
    sock.destroy();
  });
});

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import NodeVault from 'node-vault';
import { isListRequest } from './list-method';
import { attachHttpServer, refusedListRequest, unknownMethod } from './list-server';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  list: boolean;
  body: string;
  encrypted: boolean;
}

interface Harness {
  port: number;
  listener: net.Server;
  httpServer: http.Server;
  seen: Seen[];
  /** Whether each request arrived on the accepted socket itself, which node's parser reads natively. */
  plain: boolean[];
}

const harnesses: Harness[] = [];

function echoHandler(seen: Seen[], plain: boolean[]): http.RequestListener {
  return (req, res) => {
    plain.push(req.socket instanceof net.Socket);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const entry: Seen = {
        method: req.method,
        url: req.url,
        list: isListRequest(req),
        body: body.length > 1000 ? `<${body.length} bytes>` : body.toString(),
        encrypted: (req.socket as tls.TLSSocket).encrypted === true,
      };
      seen.push(entry);
      if (req.url === '/big-response') {
        res.end(Buffer.alloc(8 * 1024 * 1024, 'x'));
        return;
      }
      const reply = entry.list ? { data: { keys: ['alpha', 'beta/'] }, echo: entry } : { echo: entry };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(reply));
    });
  };
}

let tlsCredentials: { key: Buffer; cert: Buffer } | undefined;

function credentials(): { key: Buffer; cert: Buffer } {
  if (tlsCredentials === undefined) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-list-'));
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
        { stdio: 'ignore' },
      );
      tlsCredentials = { key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return tlsCredentials;
}

async function start(options: { tls?: boolean; http?: http.ServerOptions; configure?: (server: http.Server) => void } = {}): Promise<Harness> {
  const seen: Seen[] = [];
  const plain: boolean[] = [];
  const httpServer = http.createServer(options.http ?? {}, echoHandler(seen, plain));
  options.configure?.(httpServer);
  const listener = options.tls === true ? tls.createServer(credentials()) : net.createServer();
  attachHttpServer(listener, httpServer, { tls: options.tls === true });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const harness: Harness = { port: (listener.address() as net.AddressInfo).port, listener, httpServer, seen, plain };
  harnesses.push(harness);
  return harness;
}

afterEach(async () => {
  const closing = harnesses.splice(0).map(
    ({ listener, httpServer }) =>
      new Promise<void>((resolve) => {
        listener.close(() => resolve());
        httpServer.closeAllConnections();
      }),
  );
  await Promise.all(closing);
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Minimal response reader for raw sockets; node always frames these replies with Content-Length. */
function readResponses(socket: net.Socket, count: number): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const responses: RawResponse[] = [];
    let buffered = Buffer.alloc(0);
    const onData = (data: Buffer): void => {
      buffered = Buffer.concat([buffered, data]);
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const [statusLine = '', ...lines] = buffered.toString('latin1', 0, headEnd).split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        responses.push({ status: Number(statusLine.split(' ')[1]), headers, body: buffered.subarray(headEnd + 4, headEnd + 4 + length) });
        buffered = buffered.subarray(headEnd + 4 + length);
        if (responses.length === count) {
          socket.off('data', onData);
          socket.off('close', onClose);
          resolve(responses);
          return;
        }
      }
    };
    const onClose = (): void => reject(new Error(`connection closed after ${responses.length} of ${count} responses`));
    socket.on('data', onData);
    socket.on('error', reject);
    socket.on('close', onClose);
  });
}

function echoOf(response: RawResponse): Seen {
  return (JSON.parse(response.body.toString()) as { echo: Seen }).echo;
}

const pipelined =
  'GET /v1/sys/health HTTP/1.1\r\nHost: a\r\n\r\n' +
  'LIST /v1/secret/metadata/ HTTP/1.1\r\nHost: a\r\nX-Vault-Token: t\r\n\r\n' +
  'POST /v1/secret/data/a HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 31\r\n\r\n{"data":{"LIST /x HTTP/1.1":1}}' +
  'LIST /v1/secret/metadata/a/ HTTP/1.1\r\nHost: a\r\n\r\n';

function expectPipelinedEchoes(responses: RawResponse[], encrypted: boolean): void {
  expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  expect(responses.map(echoOf)).toEqual([
    { method: 'GET', url: '/v1/sys/health', list: false, body: '', encrypted },
    { method: 'GET', url: '/v1/secret/metadata/', list: true, body: '', encrypted },
    { method: 'POST', url: '/v1/secret/data/a', list: false, body: '{"data":{"LIST /x HTTP/1.1":1}}', encrypted },
    { method: 'GET', url: '/v1/secret/metadata/a/', list: true, body: '', encrypted },
  ]);
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

describe('refusedListRequest', () => {
  const refusal = (raw: string, bytesParsed: number, code = 'HPE_INVALID_METHOD') =>
    refusedListRequest(Object.assign(new Error('Parse Error'), { code, bytesParsed, rawPacket: Buffer.from(raw, 'latin1') }))?.toString('latin1') ?? null;

  it('finds the LIST request where node refused it, also after requests already parsed', () => {
    expect(refusal('LIST /a HTTP/1.1\r\n\r\n', 2)).toBe('LIST /a HTTP/1.1\r\n\r\n');
    expect(refusal('GET / HTTP/1.1\r\n\r\nLIST /a HTTP/1.1\r\n\r\n', 20)).toBe('LIST /a HTTP/1.1\r\n\r\n');
  });

  it('restores the part of the method that came in an earlier read', () => {
    expect(refusal('IST /a HTTP/1.1\r\n\r\n', 1)).toBe('LIST /a HTTP/1.1\r\n\r\n');
    expect(refusal('ST /a HTTP/1.1\r\n\r\n', 0)).toBe('LIST /a HTTP/1.1\r\n\r\n');
  });

  it('leaves every other refusal to node', () => {
    expect(refusal('LIX /a HTTP/1.1\r\n\r\n', 2)).toBeNull();
    expect(refusal('PRIS /a HTTP/1.1\r\n\r\n', 3)).toBeNull();
    expect(refusal('XIST /a HTTP/1.1\r\n\r\n', 0)).toBeNull();
    expect(refusal('LIST /a HTTP/1.1\r\n\r\n', 2, 'HPE_HEADER_OVERFLOW')).toBeNull();
    expect(refusal('LIST', 9)).toBeNull();
    expect(refusedListRequest(Object.assign(new Error('timeout'), { code: 'HPE_INVALID_METHOD' }))).toBeNull();
  });
});

describe('unknownMethod', () => {
  const unknown = (raw: string, bytesParsed: number, code = 'HPE_INVALID_METHOD') =>
    unknownMethod(Object.assign(new Error('Parse Error'), { code, bytesParsed, rawPacket: Buffer.from(raw, 'latin1') }));

  it('tells a request line with a method node does not know', () => {
    expect(unknown('PATCHY /v1/x HTTP/1.1\r\n\r\n', 5)).toBe(true);
    expect(unknown('BREW /v1/x HTTP/1.1\r\n\r\n', 1)).toBe(true);
    expect(unknown('list /v1/x HTTP/1.1\r\n\r\n', 0)).toBe(true);
    expect(unknown('GET / HTTP/1.1\r\n\r\nX-1 /a HTTP/1.1\r\n\r\n', 18)).toBe(true);
  });

  it('from bytes that are no request line', () => {
    expect(unknown('\x16\x03\x01 /v1/x HTTP/1.1\r\n\r\n', 0)).toBe(false);
    expect(unknown('PAT(HY /v1/x HTTP/1.1\r\n\r\n', 3)).toBe(false);
    expect(unknown('GET / HTTP/1.1\r\n\r\n x FOO /a HTTP/1.1\r\n\r\n', 22)).toBe(false);
    expect(unknown('PATCHY', 5)).toBe(false);
    expect(unknown('PATCHY /v1/x HTTP/1.1\r\n\r\n', 5, 'HPE_INVALID_URL')).toBe(false);
    expect(unknownMethod(Object.assign(new Error('timeout'), { code: 'HPE_INVALID_METHOD' }))).toBe(false);
  });
});

describe('attachHttpServer', () => {
  it('reads a connection natively until its first LIST, then through the rewriter', async () => {
    const { port, plain, seen } = await start();
    const socket = await connect(port);
    socket.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    socket.write('POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi');
    await readResponses(socket, 1);
    socket.write('LIST /c HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    socket.write('GET /d HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    expect(seen.map((s) => [s.method, s.url, s.list])).toEqual([['GET', '/a', false], ['POST', '/b', false], ['GET', '/c', true], ['GET', '/d', false]]);
    expect(plain).toEqual([true, true, false, false]);
    socket.destroy();
  });

  it.each([
    ['L', 'IST /v1/x/ HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['LI', 'ST /v1/x/ HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['LIS', 'T /v1/x/ HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['LIST', ' /v1/x/ HTTP/1.1\r\nHost: a\r\n\r\n'],
  ])('takes a LIST split after %j, first on a connection or after another request', async (first, rest) => {
    const { port, seen } = await start();
    for (const before of ['', 'GET /warm HTTP/1.1\r\nHost: a\r\n\r\n']) {
      const socket = await connect(port);
      socket.setNoDelay(true);
      if (before) {
        socket.write(before);
        await readResponses(socket, 1);
      }
      const reply = readResponses(socket, 1);
      socket.write(first);
      await new Promise((resolve) => setTimeout(resolve, 20));
      socket.write(rest);
      expect(echoOf((await reply)[0]!)).toMatchObject({ method: 'GET', url: '/v1/x/', list: true });
      socket.destroy();
    }
    expect(seen.filter((s) => s.list)).toHaveLength(2);
  });

  it('takes the connection out of the request timeouts of the parser it leaves', async () => {
    const { port } = await start({ http: { connectionsCheckingInterval: 50, headersTimeout: 200, requestTimeout: 400 } });
    const socket = await connect(port);
    socket.write('LIST /a HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    await new Promise((resolve) => setTimeout(resolve, 700));
    socket.write('LIST /b HTTP/1.1\r\nHost: a\r\n\r\n');
    expect(echoOf((await readResponses(socket, 1))[0]!)).toMatchObject({ url: '/b', list: true });
    socket.destroy();
  });

  it('refuses an oversized head with 431 and an errors body', async () => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(`GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    await closed;
    const reply = Buffer.concat(received).toString('latin1');
    expect(reply).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toEqual({ errors: [expect.stringContaining('headers are larger')] });
    expect(seen).toEqual([]);
  });

  it('answers pipelined GET, LIST, POST, LIST on one keep-alive connection in order', async () => {
    const { port } = await start();
    const socket = await connect(port);
    socket.write(pipelined);
    expectPipelinedEchoes(await readResponses(socket, 4), false);
    // The connection is still usable afterwards, even when the next request trickles in.
    const next = readResponses(socket, 1);
    socket.setNoDelay(true);
    for (const piece of ['LI', 'ST /v1/b/ HTTP/1.1\r', '\nHost: a\r\n', '\r\n']) {
      socket.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(echoOf((await next)[0]!)).toMatchObject({ method: 'GET', url: '/v1/b/', list: true });
    socket.destroy();
  });

  it('does the same over TLS', async () => {
    const { port } = await start({ tls: true });
    const socket = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', ca: credentials().cert }, () => resolve(s));
      s.on('error', reject);
    });
    socket.write(pipelined);
    expectPipelinedEchoes(await readResponses(socket, 4), true);
    socket.destroy();
  });

  it('serves node-vault list()', async () => {
    const { port, seen } = await start();
    const vault = NodeVault({ endpoint: `http://127.0.0.1:${port}`, token: 't' });
    const reply = (await vault.list('secret/metadata/')) as { data: { keys: string[] } };
    expect(reply.data.keys).toEqual(['alpha', 'beta/']);
    expect(seen).toEqual([{ method: 'GET', url: '/v1/secret/metadata/', list: true, body: '', encrypted: false }]);
  });

  it('streams large bodies both ways and keeps framing afterwards', async () => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const body = Buffer.alloc(5 * 1024 * 1024, 'LIST / HTTP/1.1\r\n\r\n');
    const replies = readResponses(socket, 3);
    socket.write(`PUT /upload HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body);
    socket.write('GET /big-response HTTP/1.1\r\nHost: a\r\n\r\nLIST /after HTTP/1.1\r\nHost: a\r\n\r\n');
    const [upload, download, after] = await replies;
    expect(echoOf(upload!)).toMatchObject({ method: 'PUT', list: false, body: `<${body.length} bytes>` });
    expect(download!.body.length).toBe(8 * 1024 * 1024);
    expect(echoOf(after!)).toMatchObject({ method: 'GET', url: '/after', list: true });
    expect(seen).toHaveLength(3);
    socket.destroy();
  });

  it('survives a pipelined flood from a client that is slow to read', async () => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const count = 3000;
    let flood = '';
    for (let i = 0; i < count; i++) flood += `LIST /v1/k/${i}/ HTTP/1.1\r\nHost: a\r\n\r\n`;
    socket.pause();
    socket.write(flood);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const responses = readResponses(socket, count);
    socket.resume();
    const echoes = (await responses).map(echoOf);
    expect(echoes.every((echo, i) => echo.list && echo.url === `/v1/k/${i}/`)).toBe(true);
    expect(seen).toHaveLength(count);
    socket.destroy();
  });

  it('supports Expect: 100-continue', async () => {
    const { port } = await start();
    const body = Buffer.alloc(1024 * 1024, 'b');
    const echo = await new Promise<Seen>((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'PUT', path: '/v1/put', headers: { expect: '100-continue', 'content-length': body.length } });
      req.on('continue', () => req.end(body));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve((JSON.parse(Buffer.concat(chunks).toString()) as { echo: Seen }).echo));
      });
      req.on('error', reject);
    });
    expect(echo).toMatchObject({ method: 'PUT', body: `<${body.length} bytes>` });
  });

  it.each([
    ['garbage', '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n'],
    ['a body framing node refuses', 'POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nLIST / HTTP/1.1\r\n\r\n'],
  ])('lets node reject %s with 400 and close', async (_name, request) => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(request);
    await closed;
    expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\{"errors":\["malformed HTTP request"\]\}$/);
    expect(seen).toEqual([]);
  });

  it.each([
    ['an unknown method', 'PATCHY /v1/x HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['lower-case list', 'list /v1/secret/metadata/ HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['a method that only starts like LIST', 'LISTEN /a HTTP/1.1\r\nHost: a\r\n\r\n'],
  ])('answers %s with 405 and an errors body, and closes', async (_name, request) => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(request);
    await closed;
    const answer = Buffer.concat(received).toString('latin1');
    expect(answer).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(answer).toMatch(/\r\nConnection: close\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).errors[0]).toMatch(/^unsupported HTTP method/);
    expect(seen).toEqual([]);
  });

  it('answers a bad method on a connection already behind the rewriter with 405', async () => {
    const { port, seen } = await start();
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('LIST /a HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    received.length = 0;
    socket.write('LISX /b HTTP/1.1\r\nHost: a\r\n\r\n');
    await closed;
    expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(seen.map((s) => s.url)).toEqual(['/a']);
  });

  it('honours keepAliveTimeout', async () => {
    const { port } = await start({
      configure: (server) => {
        server.keepAliveTimeout = 150;
        Object.assign(server, { keepAliveTimeoutBuffer: 0 });
      },
    });
    const socket = await connect(port);
    socket.write('LIST /a HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(socket, 1);
    const started = Date.now();
    await new Promise((resolve) => socket.on('close', resolve));
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(100);
    expect(elapsed).toBeLessThan(2000);
  });

  it('closes idle keep-alive connections on demand, and closes the http.Server with its listener', async () => {
    const { port, listener, httpServer } = await start();
    const idle = await connect(port);
    const busy = await connect(port);
    idle.write('LIST /b HTTP/1.1\r\nHost: a\r\n\r\n');
    await readResponses(idle, 1);
    busy.write('PUT /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12345');
    await new Promise((resolve) => setTimeout(resolve, 20));

    const idleClosed = new Promise((resolve) => idle.on('close', resolve));
    const listenerClosed = new Promise((resolve) => listener.close(resolve));
    const httpClosed = new Promise((resolve) => httpServer.once('close', resolve));
    const begun = Date.now();
    httpServer.closeIdleConnections();
    await idleClosed;
    expect(Date.now() - begun).toBeLessThan(100);

    // The connection in the middle of a request is not idle: it completes normally.
    expect(busy.destroyed).toBe(false);
    const reply = readResponses(busy, 1);
    busy.write('67890');
    expect(echoOf((await reply)[0]!)).toMatchObject({ method: 'PUT', body: '1234567890' });
    const busyClosed = new Promise((resolve) => busy.on('close', resolve));
    httpServer.closeIdleConnections();
    await Promise.all([busyClosed, listenerClosed, httpClosed]);
  });

  it('enforces headersTimeout on a client that never finishes its head', async () => {
    const { port } = await start({ http: { connectionsCheckingInterval: 50, headersTimeout: 200, requestTimeout: 400 } });
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('LIST /v1/secret/metadata/ HTTP/1.1\r\nHost: a\r\n');
    await closed;
    expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  it('finishes a Connection: close response before closing', async () => {
    const { port } = await start();
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET /big-response HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    await closed;
    expect(Buffer.concat(received).length).toBeGreaterThan(8 * 1024 * 1024);
  });
});

import * as http from 'node:http';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { silentLogger, type Core } from '@strongroom/core';
import { MemberCallError } from '@strongroom/raft';
import { createApp } from '../app';
import {
  decodeForwardedRequest, decodeForwardedResponse, encodeForwardedRequest, encodeForwardedResponse, ForwardingAuth, NOT_ACTIVE,
  type ClusterRouting,
} from '@strongroom/cluster';

/**
 * A standby's dispatcher over a scripted ClusterRouting, whose calls answer in turn with the
 * replies a test lines up: what the standby sends to the active node over the cluster
 * connection, and what it makes of the answers and failures that come back.
 */
describe('a standby handing requests to the active node', () => {
  let server: http.Server;
  let url: string;
  let answers: Array<(payload: Buffer) => Promise<Buffer>>;
  let sent: Buffer[];
  let waitedForActive: number;

  beforeAll(async () => {
    const standby = { active: false, sealed: false, isLocalPath: () => false } as unknown as Core;
    const routing: ClusterRouting = {
      activeAddress: () => 'http://127.0.0.1:1',
      awaitActive: async () => {
        waitedForActive++;
        return 'http://127.0.0.1:1';
      },
      auth: new ForwardingAuth(Buffer.alloc(32, 1)),
      apiCa: () => undefined,
      call: (payload) => {
        sent.push(payload);
        const next = answers.shift();
        return next ? next(payload) : null;
      },
      serveCalls: () => {},
    };
    const { listener } = createApp(standby, { maxRequestSize: 1024, logger: silentLogger, cluster: routing });
    server = http.createServer(listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    answers = [];
    sent = [];
    waitedForActive = 0;
  });

  const ok = async () => encodeForwardedResponse({ status: 200, headers: [['content-type', 'application/json']], body: Buffer.from('{"data":{"ok":true}}') });

  it('sends the method, URL, headers, body and client address, and relays the answer', async () => {
    answers.push(ok);
    const res = await fetch(`${url}/v1/secret/data/a?x=1`, { method: 'POST', headers: { 'x-vault-token': 't', 'x-strongroom-forwarded-for': 'forged' }, body: '{"data":{}}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { ok: true } });
    const request = decodeForwardedRequest(sent[0] as Buffer);
    expect(request).toMatchObject({ method: 'POST', url: '/v1/secret/data/a?x=1', remoteAddress: '127.0.0.1' });
    expect(request.body.toString()).toBe('{"data":{}}');
    expect(request.headers).toContainEqual(['x-vault-token', 't']);
    expect(request.headers.map(([name]) => name)).not.toContain('x-strongroom-forwarded-for');
  });

  it('sends once more, to the new active node, when the one it reached had just lost the lead', async () => {
    answers.push(() => Promise.reject(new MemberCallError(NOT_ACTIVE, '127.0.0.1:2')), ok);
    const res = await fetch(`${url}/v1/secret/data/a`, { headers: { 'x-vault-token': 't' } });
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(2);
    expect(waitedForActive).toBe(1);
  });

  it('answers 503 without sending again when no answer came (the request may have run)', async () => {
    answers.push(() => Promise.reject(new MemberCallError('no answer from 127.0.0.1:2: stream reset', '127.0.0.1:2')), ok);
    const res = await fetch(`${url}/v1/secret/data/a`, { method: 'POST', headers: { 'x-vault-token': 't' }, body: '{}' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/could not reach the active node/);
    expect(sent).toHaveLength(1);
  });

  it('refuses a body over the limit itself, with 413, before sending anything', async () => {
    answers.push(ok);
    const res = await fetch(`${url}/v1/secret/data/a`, { method: 'POST', headers: { 'x-vault-token': 't' }, body: 'x'.repeat(2048) });
    expect(res.status).toBe(413);
    expect(sent).toHaveLength(0);
  });
});

describe('a standby that cannot use the cluster connection', () => {
  let active: http.Server;
  let server: http.Server;
  let url: string;
  let received: Array<{ method: string; url: string; body: string }>;

  beforeAll(async () => {
    received = [];
    active = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"data":{"ok":true}}');
      });
    });
    await new Promise<void>((resolve) => active.listen(0, '127.0.0.1', resolve));
    const activeUrl = `http://127.0.0.1:${(active.address() as AddressInfo).port}`;
    const standby = { active: false, sealed: false, isLocalPath: () => false } as unknown as Core;
    // The active node's cluster address is not known (yet): every call answers null.
    const routing: ClusterRouting = {
      activeAddress: () => activeUrl, awaitActive: async () => activeUrl, auth: new ForwardingAuth(Buffer.alloc(32, 1)),
      apiCa: () => undefined, call: () => null, serveCalls: () => {},
    };
    const jsonLimits = { maxDepth: 3, maxStringLength: 64, maxObjectEntries: 10, maxArrayElements: 10 };
    const { listener } = createApp(standby, { maxRequestSize: 1024, jsonLimits, logger: silentLogger, cluster: routing });
    server = http.createServer(listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => active.close(() => resolve()));
  });
  beforeEach(() => {
    received = [];
  });

  it('forwards over HTTP with the body it already read', async () => {
    const res = await fetch(`${url}/v1/secret/data/a`, { method: 'POST', headers: { 'x-vault-token': 't' }, body: '{"data":{"v":1}}' });
    expect(res.status).toBe(200);
    expect(received).toEqual([{ method: 'POST', url: '/v1/secret/data/a', body: '{"data":{"v":1}}' }]);
  });

  it('judges the body by its own listener\'s limits first', async () => {
    const res = await fetch(`${url}/v1/secret/data/a`, { method: 'POST', headers: { 'x-vault-token': 't' }, body: '{"data":{"v":{"w":{"x":1}}}}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: string[] }).errors).toEqual(['JSON input is nested deeper than max_json_depth (3) allows']);
    expect(received).toEqual([]);
  });
});

describe('the active node serving a standby\'s call', () => {
  function serving(core: Partial<Core> & { active: boolean }) {
    let handler: ((payload: Buffer) => Promise<Buffer>) | undefined;
    const routing = {
      activeAddress: () => null, awaitActive: async () => null, auth: new ForwardingAuth(Buffer.alloc(32, 1)),
      apiCa: () => undefined, call: () => null,
      serveCalls: (h: (payload: Buffer) => Promise<Buffer>) => { handler = h; },
    } satisfies ClusterRouting;
    createApp({ sealed: false, isLocalPath: () => false, ...core } as unknown as Core, { maxRequestSize: 1024, logger: silentLogger, cluster: routing });
    return (request: Parameters<typeof encodeForwardedRequest>[0]) => (handler as (p: Buffer) => Promise<Buffer>)(encodeForwardedRequest(request));
  }

  it('runs LIST as a list with the client address and token it was given', async () => {
    const handled: Array<Record<string, unknown>> = [];
    const call = serving({
      active: true,
      handle: async (request: Record<string, unknown>) => {
        handled.push(request);
        return { status: 200, body: { data: { keys: ['a'] } } };
      },
    } as unknown as Partial<Core> & { active: boolean });
    const answer = decodeForwardedResponse(await call({
      method: 'LIST', url: '/v1/secret/metadata/dir', remoteAddress: '10.0.0.9',
      headers: [['x-vault-token', 't'], ['constructor', 'c'], ['X-Vault-Namespace', 'team/']], body: Buffer.alloc(0),
    }));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString())).toEqual({ data: { keys: ['a'] } });
    expect(handled[0]).toMatchObject({ operation: 'list', path: 'secret/metadata/dir/', token: 't', remoteAddress: '10.0.0.9', headers: { 'x-vault-namespace': 'team/' } });
  });

  it('refuses before running anything once it is no longer active, and never answers with a stream', async () => {
    const handle = jest.fn();
    await expect(serving({ active: false, handle } as unknown as Partial<Core> & { active: boolean })({ method: 'GET', url: '/v1/x', headers: [], body: Buffer.alloc(0) }))
      .rejects.toThrow(NOT_ACTIVE);
    expect(handle).not.toHaveBeenCalled();

    const stream = Readable.from(['data']);
    const call = serving({ active: true, handle: async () => ({ status: 200, body: stream }) } as unknown as Partial<Core> & { active: boolean });
    const answer = decodeForwardedResponse(await call({ method: 'GET', url: '/v1/sys/storage/raft/snapshot', headers: [], body: Buffer.alloc(0) }));
    expect(answer.status).toBe(400);
    expect(stream.destroyed).toBe(true);
  });
});

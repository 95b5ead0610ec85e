/**
 * The broker and the Core helpers driven the way Core.handle is to drive them (log the request,
 * run the backend, log the response or the error), over a stand-in for a KV backend.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FakeClock } from '../clock';
import { StrongroomError } from '../errors';
import { BackendHarness } from '../framework/testing';
import type { BackendResponse, Caller, Operation } from '../framework/types';
import { silentLogger } from '../logger';
import { Barrier } from '../seal/barrier';
import { Keyring } from '../seal/keyring';
import { MemoryStorage } from '../storage/memory-storage';
import { AuditBroker } from './broker';
import { auditAuthOf, auditErrorOf, auditResponseOf, auditWrapInfoOf } from './from-core';
import type { AuditDeviceFactory, AuditRequestInput } from './types';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

const TOKEN = 'hvs.CAESIPipelineToken';
const PASSWORD = 'p4ssw0rd-that-must-never-be-logged';

const caller: Caller = {
  accessor: 'accessor-of-app-token', policies: ['default', 'app'], displayName: 'token-app', entityId: '', isRoot: false,
  tokenHash: 'h', tokenType: 'service', metadata: { team: 'payments' }, sudo: false,
};

const failingDevice: AuditDeviceFactory = {
  type: 'broken',
  async create() {
    const fail = async () => {
      throw new Error('disk full');
    };
    return { logRequest: fail, logResponse: fail, hash: (s) => s, close: async () => {} };
  },
};

describe('auditing requests end to end', () => {
  let dir: string;
  let file: string;
  let broker: AuditBroker;
  let kv: BackendHarness;
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  let seq = 0;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-audit-pipeline-'));
    file = join(dir, 'audit.log');
    const barrier = new Barrier(new MemoryStorage());
    barrier.unseal(Keyring.create(new Date(clock.now())));
    broker = new AuditBroker({ storage: barrier, logger: silentLogger, clock, factories: [failingDevice] });
    await broker.load();
    const backend = kvStandIn.create({ clock, logger: silentLogger });
    kv = new BackendHarness(backend, { path: 'secret/', type: 'kv', accessor: 'kv_1234', options: { version: '2' } });
  });

  afterEach(async () => {
    await broker.clear();
    await rm(dir, { recursive: true, force: true });
  });

  async function audited(op: Operation | 'write', path: string, data: Record<string, unknown> = {}): Promise<BackendResponse | null> {
    const input: AuditRequestInput = {
      request: {
        id: `req-${++seq}`, operation: op === 'write' ? 'update' : op, path: `secret/${path}`, mountPoint: 'secret/', mountType: 'kv',
        mountAccessor: 'kv_1234', clientToken: TOKEN, clientTokenAccessor: caller.accessor, remoteAddress: '127.0.0.1', data,
      },
      auth: auditAuthOf(caller, TOKEN, { creationTtl: 3600, creationTime: clock.now() }),
    };
    await broker.logRequest(input);
    let resp: BackendResponse | null;
    try {
      resp = await kv.request(op, path, data, caller);
    } catch (err) {
      await broker.logResponse({ ...input, response: null, error: auditErrorOf(err) });
      throw err;
    }
    await broker.logResponse({ ...input, response: auditResponseOf(resp) });
    return resp;
  }

  async function entries(): Promise<Record<string, any>[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
    return (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  }

  it('records a secret written and read back only as its HMAC', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    await audited('write', 'data/db', { data: { password: PASSWORD }, metadata: { version: 1 } });
    const read = await audited('read', 'data/db');
    expect((read?.data?.['data'] as Record<string, unknown>)['password']).toBe(PASSWORD);

    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(caller.accessor);
    const hashed = broker.hash('file', PASSWORD);
    const all = await entries();
    expect(all.map((e) => `${e['type']}:${e['request']['id']}`)).toEqual(['request:req-1', 'response:req-1', 'request:req-2', 'response:req-2']);
    expect(all[0]?.['request']['data']).toEqual({ data: { password: hashed }, metadata: { version: 1 } });
    expect(all[3]?.['response']['data']['data']).toEqual({ password: hashed });
    // Numbers stay numbers; only strings are hashed.
    expect(all[3]?.['response']['data']['metadata']['version']).toBe(1);
    expect(all[0]?.['auth']).toMatchObject({
      client_token: broker.hash('file', TOKEN), accessor: broker.hash('file', caller.accessor), display_name: 'token-app',
      policies: ['default', 'app'], metadata: { team: 'payments' }, token_type: 'service', token_ttl: 3600,
      token_issue_time: '2026-01-01T00:00:00Z',
    });
    expect(all[0]?.['request']).toMatchObject({ mount_type: 'kv', mount_accessor: 'kv_1234', namespace: { id: 'root' }, path: 'secret/data/db', remote_address: '127.0.0.1' });
  });

  it('shows the secret in the clear on a log_raw device', async () => {
    await broker.enable('file', 'file', '', { file_path: file, log_raw: 'true' }, false);
    await audited('write', 'data/db', { data: { password: PASSWORD } });
    expect(await readFile(file, 'utf8')).toContain(PASSWORD);
  });

  it('records a failed request with its error', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    await expect(audited('write', 'data/db', {})).rejects.toBeInstanceOf(StrongroomError);
    const [, response] = await entries();
    expect(response?.['type']).toBe('response');
    expect(response?.['error']).toMatch(/data/);
  });

  it('refuses the request before it runs when no device can record it', async () => {
    await broker.enable('broken', 'broken', '', {}, false);
    await expect(audited('write', 'data/db', { data: { password: PASSWORD } })).rejects.toMatchObject({ status: 500 });
    await broker.disable('broken');
    // The write never ran: there is nothing to read.
    await expect(audited('read', 'data/db')).rejects.toMatchObject({ status: 404 });
  });

  it('hashes the token a response hands out', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    await broker.logResponse({
      request: { id: 'login', operation: 'update', path: 'auth/token/create', mountType: 'token' },
      response: auditResponseOf({
        auth: {
          clientToken: 'hvs.brand-new', accessor: 'new-accessor', policies: ['default'], tokenPolicies: ['default'], metadata: null,
          leaseDuration: 60, renewable: true, entityId: '', tokenType: 'service', orphan: false, numUses: 0,
        },
      }),
    });
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('hvs.brand-new');
    expect(text).not.toContain('new-accessor');
    const [entry] = await entries();
    expect(entry?.['response']['auth']).toEqual({
      client_token: broker.hash('file', 'hvs.brand-new'), accessor: broker.hash('file', 'new-accessor'), policies: ['default'],
      token_policies: ['default'], token_type: 'service', token_ttl: 60,
    });
  });

  it('logs only the wrapping token for a wrapped reply, and the lease of a leased secret, both hashed', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    const wrapped = {
      status: 200,
      body: {
        data: null,
        wrap_info: {
          token: 'hvs.wrapping', accessor: 'wrap-accessor', ttl: 300, creation_time: '2026-01-01T00:00:00.000Z',
          creation_path: 'secret/data/db', wrapped_accessor: 'inner-accessor',
        },
      },
    };
    const request = { id: 'w', operation: 'read' as const, path: 'secret/data/db', mountType: 'kv', wrapTtl: 300 };
    await broker.logResponse({
      request, response: auditResponseOf({ data: { password: PASSWORD } }, { status: 200, wrapInfo: auditWrapInfoOf(wrapped.body) }),
    });
    await broker.logResponse({
      request: { ...request, id: 'l', wrapTtl: 0 },
      response: auditResponseOf({ data: { password: PASSWORD } }, { leaseId: 'cloud1/creds/role/abc123' }),
    });
    const text = await readFile(file, 'utf8');
    for (const clear of [PASSWORD, 'hvs.wrapping', 'wrap-accessor', 'inner-accessor', 'abc123']) expect(text).not.toContain(clear);
    const [w, l] = await entries();
    expect(w?.['request']['wrap_ttl']).toBe(300);
    expect(w?.['response']).toEqual({
      mount_type: 'kv',
      wrap_info: {
        token: broker.hash('file', 'hvs.wrapping'), accessor: broker.hash('file', 'wrap-accessor'), ttl: 300,
        creation_time: '2026-01-01T00:00:00Z', creation_path: 'secret/data/db', wrapped_accessor: broker.hash('file', 'inner-accessor'),
      },
    });
    expect(l?.['response']['secret']).toEqual({ lease_id: broker.hash('file', 'cloud1/creds/role/abc123') });
    expect(auditWrapInfoOf({ wrap_info: null })).toBeNull();
  });

  it('records a raw reply as status, content type and hashed body', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    await broker.logResponse({
      request: { id: 'h', operation: 'read', path: 'sys/health', mountType: 'system' },
      response: auditResponseOf({ raw: { status: 200, body: { initialized: true } } }),
    });
    const [entry] = await entries();
    expect(entry?.['response']['data']).toEqual({
      http_status_code: 200, http_content_type: broker.hash('file', 'application/json'), http_raw_body: broker.hash('file', '{"initialized":true}'),
    });
  });

  it('records a streamed raw reply (a snapshot) by status and content type, without its bytes', async () => {
    await broker.enable('file', 'file', '', { file_path: file }, false);
    const body = Readable.from([Buffer.from('snapshot bytes')]);
    await broker.logResponse({
      request: { id: 's', operation: 'read', path: 'sys/storage/raft/snapshot', mountType: 'system' },
      response: auditResponseOf({ raw: { status: 200, body } }),
    });
    const [entry] = await entries();
    expect(entry?.['response']['data']).toEqual({ http_status_code: 200, http_content_type: broker.hash('file', 'application/octet-stream') });
  });
});

import { createHmac } from 'node:crypto';
import { auditTime, formatRequestEntry, formatResponseEntry, hashStrings, hmacOf, type FormatOptions } from './format';
import type { AuditRequestInput } from './types';

const salt = Buffer.alloc(32, 7);
const h = (s: string) => hmacOf(salt, s);
const hashed: FormatOptions = { hash: h, hmacAccessor: true };
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 600);

function input(overrides: Partial<AuditRequestInput> = {}): AuditRequestInput {
  return {
    request: {
      id: 'req-1', operation: 'update', path: 'secret/data/app', mountPoint: 'secret/', mountType: 'kv', mountAccessor: 'kv_1234',
      clientToken: 'hvs.token', clientTokenAccessor: 'acc-1', remoteAddress: '10.0.0.1',
      data: { data: { password: 'hunter2', count: 3, enabled: true, tags: ['a', { deep: 'b' }], none: null } },
    },
    auth: {
      clientToken: 'hvs.token', accessor: 'acc-1', displayName: 'token', policies: ['default', 'app'], tokenPolicies: ['default', 'app'],
      metadata: { team: 'ops' }, entityId: '', tokenType: 'service', tokenTtl: 3600,
    },
    ...overrides,
  };
}

describe('hmacOf', () => {
  it('is HMAC-SHA256 under the salt, hex, with the hmac-sha256 prefix', () => {
    expect(hmacOf(salt, 'x')).toBe(`hmac-sha256:${createHmac('sha256', salt).update('x').digest('hex')}`);
  });
});

describe('hashStrings', () => {
  it('hashes every string at any depth and leaves keys, numbers, booleans and null alone', () => {
    expect(hashStrings({ a: 'x', b: [1, 'y', { c: 'z', d: false, e: null }] }, h)).toEqual({ a: h('x'), b: [1, h('y'), { c: h('z'), d: false, e: null }] });
  });

  it('hashes bytes as their base64 text rather than leaking them as numbers', () => {
    expect(hashStrings({ k: Buffer.from('secret') }, h)).toEqual({ k: h(Buffer.from('secret').toString('base64')) });
  });

  it('accepts the same object twice but refuses a cycle', () => {
    const shared = { v: 's' };
    expect(hashStrings({ a: shared, b: shared }, h)).toEqual({ a: { v: h('s') }, b: { v: h('s') } });
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    expect(() => hashStrings(loop, h)).toThrow(/refers to itself/);
  });
});

describe('audit entries', () => {
  it('formats a request entry in Vault shape with tokens, accessors and data hashed', () => {
    const entry = formatRequestEntry(input(), hashed, NOW);
    expect(entry).toEqual({
      time: '2026-01-02T03:04:05.6Z',
      type: 'request',
      auth: {
        client_token: h('hvs.token'), accessor: h('acc-1'), display_name: 'token', policies: ['default', 'app'],
        token_policies: ['default', 'app'], metadata: { team: 'ops' }, token_type: 'service', token_ttl: 3600,
      },
      request: {
        id: 'req-1', operation: 'update', mount_point: 'secret/', mount_type: 'kv', mount_accessor: 'kv_1234',
        client_token: h('hvs.token'), client_token_accessor: h('acc-1'), namespace: { id: 'root' }, path: 'secret/data/app',
        data: { data: { password: h('hunter2'), count: 3, enabled: true, tags: [h('a'), { deep: h('b') }], none: null } },
        remote_address: '10.0.0.1',
      },
    });
    expect(Object.keys(entry)).toEqual(['time', 'type', 'auth', 'request']);
  });

  it('leaves accessors readable with hmac_accessor off, and everything readable when raw', () => {
    const plainAccessors = formatRequestEntry(input(), { hash: h, hmacAccessor: false }, NOW);
    expect((plainAccessors['auth'] as Record<string, unknown>)['accessor']).toBe('acc-1');
    expect((plainAccessors['request'] as Record<string, unknown>)['client_token_accessor']).toBe('acc-1');
    expect((plainAccessors['request'] as Record<string, unknown>)['client_token']).toBe(h('hvs.token'));

    const raw = formatRequestEntry(input(), { hash: null, hmacAccessor: true }, NOW);
    expect(JSON.stringify(raw)).toContain('"password":"hunter2"');
    expect((raw['auth'] as Record<string, unknown>)['client_token']).toBe('hvs.token');
  });

  it('keeps the mount\'s non-HMAC keys readable at the top level of data only', () => {
    const i = input();
    i.request.data = { user: 'alice', nested: { user: 'bob' }, password: 'pw' };
    i.request.nonHmacKeys = ['user', 'nested'];
    const entry = formatRequestEntry(i, hashed, NOW);
    expect((entry['request'] as Record<string, unknown>)['data']).toEqual({ user: 'alice', nested: { user: 'bob' }, password: h('pw') });
  });

  it('leaves out what is unset, as Vault does, and carries an error when there is one', () => {
    const entry = formatRequestEntry({ request: { id: 'r', operation: 'read', path: 'sys/health', data: {} }, error: 'permission denied' }, hashed, NOW);
    expect(entry).toEqual({
      time: auditTime(NOW), type: 'request', auth: {}, request: { id: 'r', operation: 'read', namespace: { id: 'root' }, path: 'sys/health' },
      error: 'permission denied',
    });
  });

  it('formats a response entry with the new token, its accessor and the wrap token hashed', () => {
    const entry = formatResponseEntry({
      ...input(),
      response: {
        data: { value: 'v', n: 1 }, warnings: ['careful'],
        auth: { clientToken: 'hvs.new', accessor: 'acc-new', policies: ['default'], tokenPolicies: ['default'], tokenType: 'service', tokenTtl: 60 },
        wrapInfo: { token: 'hvs.wrap', accessor: 'acc-wrap', ttl: 300, creationTime: NOW, creationPath: 'secret/data/app', wrappedAccessor: 'acc-in' },
      },
    }, hashed, NOW);
    expect(Object.keys(entry)).toEqual(['time', 'type', 'auth', 'request', 'response']);
    expect(entry['response']).toEqual({
      mount_point: 'secret/', mount_type: 'kv', mount_accessor: 'kv_1234',
      auth: { client_token: h('hvs.new'), accessor: h('acc-new'), policies: ['default'], token_policies: ['default'], token_type: 'service', token_ttl: 60 },
      data: { value: h('v'), n: 1 },
      warnings: ['careful'],
      wrap_info: {
        token: h('hvs.wrap'), accessor: h('acc-wrap'), ttl: 300, creation_time: auditTime(NOW), creation_path: 'secret/data/app',
        wrapped_accessor: h('acc-in'),
      },
    });
    const text = JSON.stringify(entry);
    for (const secret of ['hvs.new', 'hvs.wrap', 'hvs.token', '"v"']) expect(text).not.toContain(secret);
  });

  it('names a child namespace by id and path', () => {
    const i = input();
    i.request.namespace = { id: 'Xy12', path: 'team-a/' };
    expect((formatRequestEntry(i, hashed, NOW)['request'] as Record<string, unknown>)['namespace']).toEqual({ id: 'Xy12', path: 'team-a/' });
  });

  it('writes times the way Go writes RFC 3339 with nanoseconds', () => {
    expect(auditTime(Date.UTC(2026, 0, 1))).toBe('2026-01-01T00:00:00Z');
    expect(auditTime(Date.UTC(2026, 0, 1, 0, 0, 0, 120))).toBe('2026-01-01T00:00:00.12Z');
  });
});

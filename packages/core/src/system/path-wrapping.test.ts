import { callCore, rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

async function setup() {
  const r = await rig({ engines: [kvStandIn] });
  await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
  await r.ok('update', 'secret/data/db', r.root, { data: { password: 'wrapped-pw' } });
  const wrapped = async (path: string, ttl: number, op: 'read' | 'update' = 'read', data: Record<string, unknown> = {}) =>
    r.core.handle({ operation: op, path, data, token: r.root, wrapTtl: ttl });
  return { r, wrapped };
}

describe('response wrapping', () => {
  it('wraps a reply in a single-use token that unwraps once', async () => {
    const { r, wrapped } = await setup();
    const reply = await wrapped('secret/data/db', 60);
    const body = reply.body as any;
    expect(body.data).toBeNull();
    expect(body.wrap_info).toMatchObject({ ttl: 60, creation_path: 'secret/data/db' });
    expect(body.wrap_info.token).toMatch(/^hvs\./);
    expect(body.wrap_info.accessor).toEqual(expect.any(String));

    const first = await r.call('update', 'sys/wrapping/unwrap', body.wrap_info.token);
    expect(first.status).toBe(200);
    expect(first.body.data.data).toEqual({ password: 'wrapped-pw' });
    const second = await r.call('update', 'sys/wrapping/unwrap', body.wrap_info.token);
    expect(second.status).toBe(400);
    expect(second.body.errors[0]).toBe('wrapping token is not valid or does not exist');
  });

  it('unwraps with the token in the body for a caller allowed to, once', async () => {
    const { r, wrapped } = await setup();
    const token = ((await wrapped('secret/data/db', 60)).body as any).wrap_info.token;
    const someone = (await r.token(r.root, { policies: ['default'] })).client_token;
    expect((await r.ok('update', 'sys/wrapping/unwrap', someone, { token })).body.data.data.password).toBe('wrapped-pw');
    expect((await r.call('update', 'sys/wrapping/unwrap', someone, { token })).status).toBe(400);
    expect((await r.call('update', 'sys/wrapping/unwrap', 'not-a-token', { token })).status).toBe(403);
  });

  it('hands the reply to exactly one of several concurrent unwraps', async () => {
    const { r, wrapped } = await setup();
    const token = ((await wrapped('secret/data/db', 60)).body as any).wrap_info.token;
    const results = await Promise.all(Array.from({ length: 5 }, () => callCore(r.core, 'update', 'sys/wrapping/unwrap', token)));
    expect(results.filter((x) => x.status === 200)).toHaveLength(1);
    expect(results.filter((x) => x.status === 400)).toHaveLength(4);
  });

  it('destroys the wrapped reply when the wrapping token expires', async () => {
    const { r, wrapped } = await setup();
    const token = ((await wrapped('secret/data/db', 30)).body as any).wrap_info.token;
    const hash = r.core.tokens.hash(token);
    expect(await r.core.tokens.readTokenData(hash)).not.toBeNull();
    await r.clock.advance(31_000);
    expect((await r.call('update', 'sys/wrapping/unwrap', token)).status).toBe(400);
    expect(await r.core.tokens.readTokenData(hash)).toBeNull();
  });

  it('looks a wrapping token up without spending it, and rewraps into a new token', async () => {
    const { r, wrapped } = await setup();
    const token = ((await wrapped('secret/data/db', 120)).body as any).wrap_info.token;
    const looked = await r.ok('update', 'sys/wrapping/lookup', undefined, { token });
    expect(looked.body.data).toEqual({ creation_path: 'secret/data/db', creation_ttl: 120, creation_time: expect.any(String) });
    const rewrapped = await r.ok('update', 'sys/wrapping/rewrap', r.root, { token });
    const next = rewrapped.body.wrap_info.token;
    expect(next).not.toBe(token);
    expect(rewrapped.body.wrap_info.ttl).toBe(120);
    expect((await r.call('update', 'sys/wrapping/unwrap', token)).status).toBe(400);
    expect((await r.ok('update', 'sys/wrapping/unwrap', next)).body.data.data.password).toBe('wrapped-pw');
    expect((await r.call('update', 'sys/wrapping/lookup', undefined, { token: 'bogus' })).status).toBe(400);
  });

  it('wraps arbitrary data with sys/wrapping/wrap, for five minutes unless told otherwise', async () => {
    const { r } = await setup();
    const reply = await r.ok('update', 'sys/wrapping/wrap', r.root, { anything: 'goes', n: 1 });
    expect(reply.body.wrap_info.ttl).toBe(300);
    const unwrapped = await r.ok('update', 'sys/wrapping/unwrap', reply.body.wrap_info.token);
    expect(unwrapped.body.data).toEqual({ anything: 'goes', n: 1 });
    const short = await r.core.handle({ operation: 'update', path: 'sys/wrapping/wrap', data: { a: 1 }, token: r.root, wrapTtl: 45 });
    expect((short.body as any).wrap_info.ttl).toBe(45);
  });

  it('names the wrapped token\'s accessor when wrapping a token creation', async () => {
    const { r, wrapped } = await setup();
    const reply = (await wrapped('auth/token/create', 60, 'update', { policies: ['default'] })).body as any;
    const unwrapped = await r.ok('update', 'sys/wrapping/unwrap', reply.wrap_info.token);
    expect(unwrapped.body.auth.accessor).toBe(reply.wrap_info.wrapped_accessor);
    expect(await r.works(unwrapped.body.auth.client_token)).toBe(true);
  });

  it('enforces wrapping TTL bounds set by policy', async () => {
    const { r } = await setup();
    await r.policy('wrapped-only', 'path "secret/data/*" {\n  capabilities = ["read"]\n  min_wrapping_ttl = "1m"\n  max_wrapping_ttl = "10m"\n}');
    const t = (await r.token(r.root, { policies: ['wrapped-only'] })).client_token;
    const plain = await r.call('read', 'secret/data/db', t);
    expect(plain.status).toBe(400);
    expect(plain.body.errors[0]).toMatch(/wrapping is required/);
    const read = (ttl: number) => r.core.handle({ operation: 'read', path: 'secret/data/db', data: {}, token: t, wrapTtl: ttl });
    await expect(read(30)).rejects.toThrow(/below the minimum/);
    await expect(read(3600)).rejects.toThrow(/above the maximum/);
    expect(((await read(120)).body as any).wrap_info.ttl).toBe(120);
  });

  it('does not wrap errors or empty replies', async () => {
    const { r } = await setup();
    await expect(r.core.handle({ operation: 'read', path: 'secret/data/missing', data: {}, token: r.root, wrapTtl: 60 })).rejects.toMatchObject({ status: 404 });
    const write = await r.core.handle({ operation: 'update', path: 'sys/policies/acl/p', data: { policy: 'path "a" { capabilities = ["read"] }' }, token: r.root, wrapTtl: 60 });
    expect(write.status).toBe(204);
  });
});

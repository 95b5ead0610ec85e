import { MemoryStorage, type Core, type Operation } from '../index';
import { callCore, failure, newCore, okCore, rig, type Body } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

const KV = { engines: [kvStandIn] };

interface InitReply {
  keys: string[];
  keys_base64: string[];
  root_token: string;
}

async function initViaApi(core: Core, shares: number, threshold: number): Promise<InitReply> {
  const reply = await callCore(core, 'update', 'sys/init', undefined, { secret_shares: shares, secret_threshold: threshold });
  expect(reply.status).toBe(200);
  return reply.body as InitReply;
}

async function unsealWith(core: Core, key: string): Promise<Body> {
  const reply = await callCore(core, 'update', 'sys/unseal', undefined, { key });
  expect(reply.status).toBe(200);
  return reply.body;
}

describe('sys/init', () => {
  it('reports an uninitialized server on GET and an initialized one after init', async () => {
    const core = newCore(KV);
    expect((await okCore(core, 'read', 'sys/init', undefined)).body).toEqual({ initialized: false });
    await initViaApi(core, 1, 1);
    expect((await okCore(core, 'read', 'sys/init', undefined)).body).toEqual({ initialized: true });
  });

  it('returns the key shares as hex and base64 and a root token, and leaves the server sealed', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 5, 3);
    expect(init.keys).toHaveLength(5);
    expect(init.keys_base64).toHaveLength(5);
    for (let i = 0; i < 5; i++) {
      expect(Buffer.from(init.keys[i] as string, 'hex').equals(Buffer.from(init.keys_base64[i] as string, 'base64'))).toBe(true);
    }
    expect(new Set(init.keys).size).toBe(5);
    expect(init.root_token).toMatch(/^hvs\./);
    expect(core.sealed).toBe(true);
    const status = (await okCore(core, 'read', 'sys/seal-status', undefined)).body;
    expect(status).toMatchObject({ initialized: true, sealed: true, t: 3, n: 5, progress: 0 });
  });

  it.each([
    [{ secret_shares: 0, secret_threshold: 0 }, 'secret_shares'],
    [{ secret_shares: 256, secret_threshold: 3 }, 'secret_shares'],
    [{ secret_shares: -1, secret_threshold: 1 }, 'secret_shares'],
    [{ secret_shares: 3, secret_threshold: 4 }, 'secret_threshold'],
    [{ secret_shares: 5, secret_threshold: 1 }, 'secret_threshold'],
    [{ secret_shares: 5, secret_threshold: 0 }, 'secret_threshold'],
    [{ secret_shares: 'many', secret_threshold: 1 }, 'secret_shares'],
    [{ secret_threshold: 1 }, 'secret_shares'],
  ])('rejects %j with a 400 naming %s and stays uninitialized', async (data, field) => {
    const core = newCore(KV);
    const err = await failure(callCore(core, 'update', 'sys/init', undefined, data));
    expect(err.status).toBe(400);
    expect(err.message).toContain(field);
    expect((await okCore(core, 'read', 'sys/init', undefined)).body).toEqual({ initialized: false });
  });

  it('accepts the largest allowed number of shares', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 255, 2);
    expect(init.keys).toHaveLength(255);
    await unsealWith(core, init.keys[254] as string);
    expect((await unsealWith(core, init.keys[0] as string))['sealed']).toBe(false);
  });

  it('refuses a second init with a 400, sealed or unsealed, and keeps the first keys working', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 1, 1);
    const sealedErr = await failure(callCore(core, 'update', 'sys/init', undefined, { secret_shares: 1, secret_threshold: 1 }));
    expect(sealedErr.status).toBe(400);
    expect(sealedErr.message).toMatch(/already initialized/);
    await unsealWith(core, init.keys[0] as string);
    const unsealedErr = await failure(callCore(core, 'update', 'sys/init', undefined, { secret_shares: 1, secret_threshold: 1 }));
    expect(unsealedErr.status).toBe(400);
    expect(unsealedErr.message).toMatch(/already initialized/);
    expect((await callCore(core, 'read', 'sys/mounts', init.root_token)).status).toBe(200);
  });

  it('refuses PGP-encrypted shares rather than returning them unencrypted', async () => {
    const core = newCore(KV);
    const err = await failure(callCore(core, 'update', 'sys/init', undefined, { secret_shares: 1, secret_threshold: 1, pgp_keys: ['abc'] }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('pgp_keys');
    expect((await okCore(core, 'read', 'sys/init', undefined)).body).toEqual({ initialized: false });
  });
});

describe('sys/unseal', () => {
  it('unseals with a single hex key', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 1, 1);
    const status = await unsealWith(core, init.keys[0] as string);
    expect(status).toMatchObject({ sealed: false, t: 1, n: 1, progress: 0, nonce: '' });
    expect(core.sealed).toBe(false);
  });

  it('unseals with a single base64 key', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 1, 1);
    expect((await unsealWith(core, init.keys_base64[0] as string))['sealed']).toBe(false);
  });

  it('reports progress and a stable nonce while collecting shares, and clears both when done', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 5, 3);
    const first = await unsealWith(core, init.keys[0] as string);
    expect(first).toMatchObject({ sealed: true, t: 3, n: 5, progress: 1 });
    expect(first['nonce']).toMatch(/^[0-9a-f-]{36}$/);
    const second = await unsealWith(core, init.keys_base64[1] as string);
    expect(second).toMatchObject({ sealed: true, progress: 2, nonce: first['nonce'] });
    const status = (await okCore(core, 'read', 'sys/seal-status', undefined)).body;
    expect(status).toMatchObject({ sealed: true, progress: 2, nonce: first['nonce'] });
    const third = await unsealWith(core, init.keys[2] as string);
    expect(third).toMatchObject({ sealed: false, progress: 0, nonce: '' });
  });

  it('does not count the same share twice, in hex or base64', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 3, 2);
    await unsealWith(core, init.keys[1] as string);
    expect((await unsealWith(core, init.keys[1] as string))).toMatchObject({ sealed: true, progress: 1 });
    expect((await unsealWith(core, init.keys_base64[1] as string))).toMatchObject({ sealed: true, progress: 1 });
    expect((await unsealWith(core, init.keys[0] as string))['sealed']).toBe(false);
  });

  it('forgets the collected shares on reset', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 3, 2);
    const first = await unsealWith(core, init.keys[0] as string);
    expect(first['progress']).toBe(1);
    const reset = (await okCore(core, 'update', 'sys/unseal', undefined, { reset: true })).body;
    expect(reset).toMatchObject({ sealed: true, progress: 0, nonce: '' });
    // One more share alone no longer reaches the threshold.
    expect(await unsealWith(core, init.keys[1] as string)).toMatchObject({ sealed: true, progress: 1 });
    expect(await unsealWith(core, init.keys[2] as string)).toMatchObject({ sealed: false });
  });

  it('unseals 3-of-5 with any three distinct shares, in any order', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 5, 3);
    const combos = [[0, 1, 2], [4, 3, 2], [0, 2, 4], [1, 3, 4], [3, 0, 1]];
    for (const combo of combos) {
      expect(core.sealed).toBe(true);
      for (const i of combo) await unsealWith(core, init.keys[i] as string);
      expect(core.sealed).toBe(false);
      await okCore(core, 'update', 'sys/seal', init.root_token);
    }
  });

  it('rejects shares of another cluster with a 400 once the threshold is reached, and resets progress', async () => {
    const core = newCore(KV);
    const other = newCore(KV);
    const init = await initViaApi(core, 3, 2);
    const foreign = await initViaApi(other, 3, 2);
    await unsealWith(core, init.keys[0] as string);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: foreign.keys[1] }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/unseal failed/);
    expect(core.sealed).toBe(true);
    expect((await okCore(core, 'read', 'sys/seal-status', undefined)).body).toMatchObject({ sealed: true, progress: 0, nonce: '' });
    // The right shares still work afterwards.
    await unsealWith(core, init.keys[2] as string);
    expect((await unsealWith(core, init.keys[1] as string))['sealed']).toBe(false);
  });

  it('rejects a single-share key of another cluster', async () => {
    const core = newCore(KV);
    const other = newCore(KV);
    await initViaApi(core, 1, 1);
    const foreign = await initViaApi(other, 1, 1);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: foreign.keys[0] }));
    expect(err.status).toBe(400);
    expect(core.sealed).toBe(true);
  });

  it('rejects a key that is neither hex nor base64', async () => {
    const core = newCore(KV);
    await initViaApi(core, 3, 2);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: 'not a key!' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('"key"');
  });

  it('rejects a key of the wrong length without counting it', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 3, 2);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: 'abcd' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('"key"');
    expect((await okCore(core, 'read', 'sys/seal-status', undefined)).body['progress']).toBe(0);
    // A truncated real share is refused too.
    const short = (init.keys[0] as string).slice(0, 64);
    expect((await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: short }))).status).toBe(400);
    expect((await okCore(core, 'read', 'sys/seal-status', undefined)).body['progress']).toBe(0);
  });

  it('requires a key or reset', async () => {
    const core = newCore(KV);
    await initViaApi(core, 1, 1);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined));
    expect(err.status).toBe(400);
    expect(err.message).toContain('key');
  });

  it('refuses to unseal an uninitialized server', async () => {
    const core = newCore(KV);
    const err = await failure(callCore(core, 'update', 'sys/unseal', undefined, { key: 'aa'.repeat(32) }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/not initialized/);
  });

  it('answers an unseal of an already unsealed server with its status', async () => {
    const core = newCore(KV);
    const init = await initViaApi(core, 1, 1);
    await unsealWith(core, init.keys[0] as string);
    expect(await unsealWith(core, init.keys[0] as string)).toMatchObject({ sealed: false, progress: 0 });
  });
});

describe('sealed and uninitialized servers', () => {
  const otherPaths: [Operation, string][] = [
    ['read', 'secret/data/foo'],
    ['update', 'secret/data/foo'],
    ['list', 'secret/metadata/'],
    ['read', 'sys/mounts'],
    ['update', 'sys/mounts/kv'],
    ['read', 'sys/policies/acl/default'],
    ['update', 'sys/capabilities-self'],
    ['update', 'auth/token/create'],
    ['read', 'auth/token/lookup-self'],
    ['update', 'sys/seal'],
    ['update', 'sys/rotate'],
    ['read', 'sys/key-status'],
    ['read', 'nothing/mounted/here'],
  ];

  it.each(otherPaths)('answers %s %s with 503 "sealed" while sealed', async (operation, path) => {
    const core = newCore(KV);
    const init = await initViaApi(core, 1, 1);
    const err = await failure(callCore(core, operation, path, init.root_token));
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/sealed/i);
  });

  it.each(otherPaths)('answers %s %s with 503 "not initialized" before init', async (operation, path) => {
    const core = newCore(KV);
    const err = await failure(callCore(core, operation, path, undefined));
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/not (yet )?initialized/i);
  });

  it('still answers the paths a sealed server serves', async () => {
    const core = newCore(KV);
    await initViaApi(core, 1, 1);
    expect((await callCore(core, 'read', 'sys/seal-status', undefined)).status).toBe(200);
    expect((await callCore(core, 'read', 'sys/init', undefined)).status).toBe(200);
    expect((await callCore(core, 'read', 'sys/health', undefined)).status).toBe(503);
    expect((await callCore(core, 'read', 'sys/leader', undefined)).status).toBe(200);
  });

  it('becomes sealed again after a restart over the same storage', async () => {
    const storage = new MemoryStorage();
    const core = newCore({ ...KV, storage });
    const init = await initViaApi(core, 1, 1);
    await unsealWith(core, init.keys[0] as string);
    const restarted = newCore({ ...KV, storage });
    expect(restarted.sealed).toBe(true);
    expect((await okCore(restarted, 'read', 'sys/seal-status', undefined)).body).toMatchObject({ initialized: true, sealed: true, t: 1, n: 1 });
    await unsealWith(restarted, init.keys[0] as string);
    expect(restarted.sealed).toBe(false);
  });
});

describe('sys/seal', () => {
  it('seals the server for the root token with a 204', async () => {
    const r = await rig(KV);
    const reply = await r.call('update', 'sys/seal', r.root);
    expect(reply.status).toBe(204);
    expect(r.core.sealed).toBe(true);
    expect((await failure(r.call('read', 'sys/mounts', r.root))).status).toBe(503);
    // The key still unseals it.
    await unsealWith(r.core, r.key.toString('hex'));
    expect(r.core.sealed).toBe(false);
  });

  it('refuses a token granted update on sys/seal but not sudo', async () => {
    const r = await rig(KV);
    const token = await r.tokenWithPolicy('sealer', 'path "sys/seal" { capabilities = ["update"] }');
    const err = await failure(r.call('update', 'sys/seal', token));
    expect(err.status).toBe(403);
    expect(r.core.sealed).toBe(false);
  });

  it('lets a token with update and sudo on sys/seal seal the server', async () => {
    const r = await rig(KV);
    const token = await r.tokenWithPolicy('sealer', 'path "sys/seal" { capabilities = ["update", "sudo"] }');
    expect((await r.call('update', 'sys/seal', token)).status).toBe(204);
    expect(r.core.sealed).toBe(true);
  });

  it('refuses a request without a token', async () => {
    const r = await rig(KV);
    expect((await failure(r.call('update', 'sys/seal', undefined))).status).toBe(403);
    expect(r.core.sealed).toBe(false);
  });
});

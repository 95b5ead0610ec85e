import { putJson } from '@strongroom/core';
import { sealPool } from './seal-pool';
import {
  b64, badRequest, batchResults, data, decrypt, encrypt, failure, transitRig, type BatchResult,
} from './test-support/transit-rig';

describe('encrypt/:name: round trips', () => {
  it.each(['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305', 'rsa-2048'])('encrypts and decrypts with %s', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type });
    const resp = data(await h.request('write', 'encrypt/k', { plaintext: b64('the quick brown fox') }));
    expect(resp).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:[A-Za-z0-9+/]+=*$/), key_version: 1 });
    expect(await decrypt(h, 'k', String(resp['ciphertext']))).toBe('the quick brown fox');
  });

  it('encrypts and decrypts with rsa-4096 using RSA-OAEP', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/big', { type: 'rsa-4096' });
    const ct = await encrypt(h, 'big', 'large modulus');
    expect(Buffer.from(ct.slice('vault:v1:'.length), 'base64')).toHaveLength(512);
    expect(await decrypt(h, 'big', ct)).toBe('large modulus');
  });

  it('encrypts the empty plaintext', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const ct = String(data(await h.request('write', 'encrypt/k', { plaintext: '' }))['ciphertext']);
    expect(await decrypt(h, 'k', ct)).toBe('');
  });

  it('gives different ciphertext for the same plaintext on a key that is not convergent', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    expect(await encrypt(h, 'k', 'same')).not.toBe(await encrypt(h, 'k', 'same'));
  });

  it('accepts base64 wrapped over lines, as the base64 tool writes it', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const long = 'x'.repeat(100);
    const wrapped = b64(long).replace(/(.{76})/g, '$1\n');
    const ct = String(data(await h.request('write', 'encrypt/k', { plaintext: wrapped }))['ciphertext']);
    expect(await decrypt(h, 'k', ct)).toBe(long);
  });
});

describe('encrypt/:name: derivation and convergence', () => {
  it('needs a context on derived keys, and decrypts only with the same one', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { derived: true });
    await badRequest(encrypt(h, 'd', 'x'), 'context');
    const ct = await encrypt(h, 'd', 'per tenant', { context: b64('tenant-a') });
    expect(await decrypt(h, 'd', ct, { context: b64('tenant-a') })).toBe('per tenant');
    await failure(decrypt(h, 'd', ct, { context: b64('tenant-b') }), 400);
    await badRequest(decrypt(h, 'd', ct), 'context');
  });

  it.each(['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305'])('convergent %s: same plaintext and context give the same ciphertext', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/c', { type, derived: true, convergent_encryption: true });
    const ctx = { context: b64('ctx') };
    const a = await encrypt(h, 'c', 'same', ctx);
    expect(await encrypt(h, 'c', 'same', ctx)).toBe(a);
    expect(await encrypt(h, 'c', 'other', ctx)).not.toBe(a);
    expect(await encrypt(h, 'c', 'same', { context: b64('ctx2') })).not.toBe(a);
    expect(await decrypt(h, 'c', a, ctx)).toBe('same');
  });

  it('convergent keys derive the nonce: a caller nonce is refused', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/c', { derived: true, convergent_encryption: true });
    await badRequest(encrypt(h, 'c', 'x', { context: b64('ctx'), nonce: b64('123456789012') }), 'nonce');
  });

  it('refuses a nonce on keys that are not convergent', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(encrypt(h, 'k', 'x', { nonce: b64('123456789012') }), 'nonce');
  });

  it('ignores a context on keys that are not derived', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const ct = await encrypt(h, 'k', 'x', { context: b64('ignored') });
    expect(await decrypt(h, 'k', ct)).toBe('x');
  });
});

describe('encrypt/:name: associated data', () => {
  it('binds associated data: decryption needs the same', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const ct = await encrypt(h, 'k', 'bound', { associated_data: b64('row-17') });
    expect(await decrypt(h, 'k', ct, { associated_data: b64('row-17') })).toBe('bound');
    await failure(decrypt(h, 'k', ct, { associated_data: b64('row-18') }), 400);
    await failure(decrypt(h, 'k', ct), 400);
  });

  it('refuses associated data on RSA keys', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    await badRequest(encrypt(h, 'r', 'x', { associated_data: b64('aad') }), 'associated_data');
  });
});

describe('encrypt/:name: key versions', () => {
  it('encrypts with an older version when asked, within min_encryption_version', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/k/rotate');
    await h.request('write', 'keys/k/rotate');
    expect(data(await h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: 1 }))['key_version']).toBe(1);
    expect(data(await h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: '2' }))['key_version']).toBe(2);
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: 4 }), 'key_version');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: -1 }), 'key_version');
    await h.request('write', 'keys/k/config', { min_encryption_version: 2 });
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: 1 }), 'key_version');
    expect(data(await h.request('write', 'encrypt/k', { plaintext: b64('x') }))['key_version']).toBe(3);
  });
});

describe('encrypt/:name: bad input', () => {
  it('names the field that is wrong', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(h.request('write', 'encrypt/k', {}), 'plaintext');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: 'not base64!' }), 'plaintext');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: 'YWJj' + 'Z' }), 'plaintext');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), context: '%%%' }), 'context');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), associated_data: '***' }), 'associated_data');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), key_version: 'latest' }), 'key_version');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: { a: 1 } }), 'plaintext');
    await badRequest(h.request('write', 'encrypt/k', { plaintext: b64('x'), partial_failure_response_code: 'x' }), 'partial_failure_response_code');
  });

  it('refuses keys that cannot encrypt', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ed25519' });
    await h.request('write', 'keys/h', { type: 'hmac' });
    await failure(encrypt(h, 'e', 'x'), 400);
    await failure(encrypt(h, 'h', 'x'), 400);
  });

  it('refuses plaintext too long for RSA-OAEP', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    await expect(encrypt(h, 'r', 'x'.repeat(190))).resolves.toMatch(/^vault:v1:/);
    await failure(encrypt(h, 'r', 'x'.repeat(191)), 400);
  });
});

describe('encrypt/:name: upsert', () => {
  it('creates a missing key with defaults when the write is a create', async () => {
    const { h } = transitRig();
    const ct = await encrypt(h, 'fresh', 'hello');
    expect(h.lastOperation).toBe('create');
    expect(ct.startsWith('vault:v1:')).toBe(true);
    expect(data(await h.request('read', 'keys/fresh'))).toMatchObject({ type: 'aes256-gcm96', derived: false, latest_version: 1 });
    await encrypt(h, 'fresh', 'again');
    expect(h.lastOperation).toBe('update');
    expect(await decrypt(h, 'fresh', ct)).toBe('hello');
  });

  it('resolves an encrypt with a cached key to update at once, and one with an uncached key by reading it', async () => {
    const { h, backend } = transitRig();
    await h.request('write', 'keys/k');
    const resolve = (path: string) => {
      const match = backend.match(path);
      if (!match) throw new Error(`no match for ${path}`);
      return backend.resolveWrite(match, {
        id: 'r', operation: 'update', path, mount: h.mount, storage: h.storage, data: { plaintext: b64('x') }, headers: {}, namespace: { id: 'root', path: '' },
      });
    };
    expect(resolve('encrypt/k')).toBe('update');
    const missing = resolve('encrypt/absent');
    expect(missing).toBeInstanceOf(Promise);
    expect(await missing).toBe('create');
  });

  it('derives the created key when the request carries a context', async () => {
    const { h } = transitRig();
    await encrypt(h, 'derived', 'x', { context: b64('c') });
    expect(data(await h.request('read', 'keys/derived'))).toMatchObject({ derived: true, kdf: 'hkdf_sha256' });
  });

  it('takes type and convergent_encryption for the created key', async () => {
    const { h } = transitRig();
    await encrypt(h, 'cc', 'x', { type: 'chacha20-poly1305', convergent_encryption: 'true', context: b64('c') });
    expect(data(await h.request('read', 'keys/cc'))).toMatchObject({ type: 'chacha20-poly1305', derived: true, convergent_encryption: true });
    const a = await encrypt(h, 'cc', 'same', { context: b64('c') });
    expect(await encrypt(h, 'cc', 'same', { context: b64('c') })).toBe(a);
  });

  it('refuses convergent upsert without a context, and types encrypt cannot create', async () => {
    const { h } = transitRig();
    await badRequest(encrypt(h, 'c', 'x', { convergent_encryption: true }), 'convergent_encryption');
    await badRequest(encrypt(h, 'c', 'x', { convergent_encryption: 'perhaps', context: b64('c') }), 'convergent_encryption');
    await badRequest(encrypt(h, 'e', 'x', { type: 'ed25519' }), 'type');
    await badRequest(encrypt(h, 'e', 'x', { type: 'nope' }), 'type');
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: [] } });
  });

  it('ignores type and convergent_encryption once the key exists', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await encrypt(h, 'k', 'x', { type: 'chacha20-poly1305', convergent_encryption: true });
    expect(data(await h.request('read', 'keys/k'))).toMatchObject({ type: 'aes256-gcm96', convergent_encryption: false });
  });

  it('with only the update capability a missing key is an error', async () => {
    const { h } = transitRig();
    const err = await failure(h.request('update', 'encrypt/missing', { plaintext: b64('x') }), 400);
    expect(err.message).toContain('encryption key not found');
    expect(await h.request('read', 'keys/missing')).toBeNull();
  });

  it('with disable_upsert a create behaves as an update', async () => {
    const { h } = transitRig();
    await h.request('write', 'config/keys', { disable_upsert: true });
    const err = await failure(encrypt(h, 'missing', 'x'), 400);
    expect(h.lastOperation).toBe('create');
    expect(err.message).toContain('encryption key not found');
    expect(await h.request('read', 'keys/missing')).toBeNull();
    await h.request('write', 'keys/present');
    expect(await encrypt(h, 'present', 'x')).toMatch(/^vault:v1:/);
  });

  it('creates one key when concurrent encrypts race to create it', async () => {
    const { h } = transitRig();
    const cts = await Promise.all([1, 2, 3, 4].map((i) => encrypt(h, 'raced', `p${i}`)));
    expect(data(await h.request('read', 'keys/raced'))['latest_version']).toBe(1);
    for (const [i, ct] of cts.entries()) expect(await decrypt(h, 'raced', ct)).toBe(`p${i + 1}`);
  });
});

describe('encrypt/:name: batch', () => {
  it('keeps input order, echoes references and reports failures per item', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = await h.request('write', 'encrypt/k', {
      plaintext: b64('ignored'),
      batch_input: [
        { plaintext: b64('one'), reference: 'r1' },
        { plaintext: 'not base64!', reference: 'r2' },
        { plaintext: b64('three') },
      ],
    });
    expect(resp?.status).toBe(400);
    const results = batchResults(resp);
    expect(results).toHaveLength(3);
    expect(results[0]).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:/), key_version: 1, reference: 'r1' });
    expect(results[1]).toEqual({ error: expect.stringContaining('"plaintext"'), reference: 'r2' });
    expect(results[2]).toMatchObject({ key_version: 1, reference: '' });
    expect(await decrypt(h, 'k', results[0]?.ciphertext as string)).toBe('one');
    expect(await decrypt(h, 'k', results[2]?.ciphertext as string)).toBe('three');
  });

  it('encrypts a batch large enough for the seal pool, failures and derived keys included', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/d', { derived: true });
    const batch = Array.from({ length: 300 }, (_, i) => ({ plaintext: i === 150 ? 'not base64!' : b64(`item ${i}`), reference: `r${i}` }));
    const resp = await h.request('write', 'encrypt/k', { batch_input: batch, partial_failure_response_code: 207 });
    expect(resp?.status).toBe(207);
    const results = batchResults(resp);
    expect(results.map((r) => r.reference)).toEqual(batch.map((b) => b.reference));
    expect(results[150]).toEqual({ error: expect.stringContaining('"plaintext"'), reference: 'r150' });
    const back = data(await h.request('write', 'decrypt/k', {
      batch_input: results.filter((_, i) => i !== 150).map((r) => ({ ciphertext: r.ciphertext })),
    }))['batch_results'] as Array<{ plaintext: string }>;
    expect(back.map((r) => Buffer.from(r.plaintext, 'base64').toString())).toEqual(
      batch.map((_, i) => `item ${i}`).filter((_, i) => i !== 150),
    );

    const derived = Array.from({ length: 100 }, (_, i) => ({ plaintext: b64(`d ${i}`), context: b64(`ctx ${i % 3}`) }));
    const dres = batchResults(await h.request('write', 'encrypt/d', { batch_input: derived }));
    const dback = data(await h.request('write', 'decrypt/d', {
      batch_input: dres.map((r, i) => ({ ciphertext: r.ciphertext, context: derived[i]?.context })),
    }))['batch_results'] as Array<{ plaintext: string }>;
    expect(dback.map((r) => Buffer.from(r.plaintext, 'base64').toString())).toEqual(derived.map((_, i) => `d ${i}`));
  });

  it('answers a large batch item for item as it answers each item alone, its plain items sealed on the pool', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/k/rotate');
    await h.request('write', 'keys/k/config', { min_encryption_version: 1 });
    const odd: Array<Record<string, unknown>> = [
      { plaintext: 'not base64!' }, { plaintext: 'not base64!', key_version: 9 }, { plaintext: b64('v9'), key_version: 9 },
      { plaintext: b64('neg'), key_version: -1 }, { plaintext: b64('old'), key_version: 1 }, { plaintext: b64('x'), nonce: b64('123456789012') },
      { plaintext: b64('aad'), associated_data: b64('bound') }, { plaintext: b64('two'), key_version: '2' },
      { plaintext: b64('wrapped '.repeat(20)).replace(/(.{76})/g, '$1\n') }, { plaintext: '€€€€' }, { plaintext: b64('') },
      { plaintext: b64('bad aad'), associated_data: '!' }, { plaintext: 'Zm9v=' },
    ];
    const batch: Array<Record<string, unknown>> = Array.from({ length: 200 }, (_, i) => ({ ...(odd[i % 20] ?? { plaintext: b64(`item ${i}`) }), reference: `r${i}` }));
    const seal = jest.spyOn(sealPool, 'seal');
    let results: BatchResult[];
    try {
      results = batchResults(await h.request('write', 'encrypt/k', { batch_input: batch }));
      expect(seal).toHaveBeenCalled();
    } finally {
      seal.mockRestore();
    }
    expect(results).toHaveLength(batch.length);
    for (const [i, item] of batch.entries()) {
      const alone = batchResults(await h.request('write', 'encrypt/k', { batch_input: [item] }))[0] as BatchResult;
      const got = results[i] as BatchResult;
      expect({ ...got, ciphertext: typeof got.ciphertext }).toEqual({ ...alone, ciphertext: typeof alone.ciphertext });
      if (got.error !== undefined) continue;
      const extra = { ...(item.associated_data ? { associated_data: item.associated_data } : {}) };
      expect(await decrypt(h, 'k', got.ciphertext as string, extra)).toBe(Buffer.from(String(item.plaintext), 'base64').toString());
    }
  });

  it('does a large batch\'s items on the request\'s thread when the pool fails', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const batch = Array.from({ length: 100 }, (_, i) => ({ plaintext: i === 3 ? '!' : b64(`item ${i}`) }));
    const seal = jest.spyOn(sealPool, 'seal').mockRejectedValue(new Error('no threads'));
    let resp;
    try {
      resp = await h.request('write', 'encrypt/k', { batch_input: batch });
      expect(seal).toHaveBeenCalled();
    } finally {
      seal.mockRestore();
    }
    const results = batchResults(resp);
    expect(results[3]?.error).toBe('invalid value for "plaintext": expected standard base64');
    for (const [i, r] of results.entries()) if (i !== 3) expect(await decrypt(h, 'k', r.ciphertext as string)).toBe(`item ${i}`);
  });

  it('answers 200 when every item succeeds', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = await h.request('write', 'encrypt/k', { batch_input: [{ plaintext: b64('a') }, { plaintext: b64('b') }] });
    expect(resp?.status).toBeUndefined();
    expect(batchResults(resp).map((r) => r.error)).toEqual([undefined, undefined]);
  });

  it('uses partial_failure_response_code when some items succeed, but not when all fail', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const partial = await h.request('write', 'encrypt/k', {
      partial_failure_response_code: 207, batch_input: [{ plaintext: b64('a') }, { plaintext: '!' }],
    });
    expect(partial?.status).toBe(207);
    const allFailed = await h.request('write', 'encrypt/k', {
      partial_failure_response_code: 207, batch_input: [{ plaintext: '!' }, { plaintext: '?' }],
    });
    expect(allFailed?.status).toBe(400);
    expect(batchResults(allFailed).every((r) => typeof r.error === 'string')).toBe(true);
  });

  it('refuses a partial_failure_response_code that is not a final HTTP status', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(h.request('write', 'encrypt/k', { partial_failure_response_code: 99, batch_input: [{ plaintext: b64('a') }] }), 'partial_failure_response_code');
    await badRequest(h.request('write', 'encrypt/k', { partial_failure_response_code: 600, batch_input: [{ plaintext: b64('a') }] }), 'partial_failure_response_code');
  });

  it('needs a context in every item or in none', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const results = batchResults(await h.request('write', 'encrypt/k', {
      batch_input: [{ plaintext: b64('a') }, { plaintext: b64('b'), context: b64('c') }],
    }));
    expect(results[0]?.error).toBeUndefined();
    expect(results[1]?.error).toContain('"context"');
  });

  it('upserts a derived key when the first item has a context', async () => {
    const { h } = transitRig();
    const results = batchResults(await h.request('write', 'encrypt/fresh', {
      batch_input: [{ plaintext: b64('a'), context: b64('t1') }, { plaintext: b64('b'), context: b64('t2') }],
    }));
    expect(data(await h.request('read', 'keys/fresh'))['derived']).toBe(true);
    expect(await decrypt(h, 'fresh', results[1]?.ciphertext as string, { context: b64('t2') })).toBe('b');
  });

  it('takes per-item key_version and associated_data', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/k/rotate');
    const results = batchResults(await h.request('write', 'encrypt/k', {
      batch_input: [{ plaintext: b64('a'), key_version: 1, associated_data: b64('x') }, { plaintext: b64('b'), key_version: '9' }],
    }));
    expect(results[0]?.key_version).toBe(1);
    expect(results[1]?.error).toContain('"key_version"');
    expect(await decrypt(h, 'k', results[0]?.ciphertext as string, { associated_data: b64('x') })).toBe('a');
  });

  it('fails the whole request when batch_input is not a list of objects', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(h.request('write', 'encrypt/k', { batch_input: 'nope' }), 'batch_input');
    await badRequest(h.request('write', 'encrypt/k', { batch_input: [] }), 'batch_input');
    await badRequest(h.request('write', 'encrypt/k', { batch_input: [{ plaintext: b64('a') }, 7] }), 'batch_input[1]');
    await badRequest(h.request('write', 'encrypt/k', { batch_input: [{ plaintext: b64('a'), key_version: 'x' }] }), 'batch_input[0].key_version');
    await badRequest(h.request('write', 'encrypt/k', { batch_input: [{ plaintext: ['a'] }] }), 'batch_input[0].plaintext');
  });
});

describe('encrypt/:name: per-request work', () => {
  it('reads storage once per key, not per request', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k');
    r.backend.context.keys.invalidate();
    await encrypt(r.h, 'k', 'warm');
    const before = r.storage.gets;
    for (let i = 0; i < 20; i++) await encrypt(r.h, 'k', `p${i}`);
    expect(r.storage.gets).toBe(before);
  });

  it('sees a key stored by another writer only after invalidation', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k');
    const stored = JSON.parse((await r.storage.get('policy/k'))?.toString() ?? '{}');
    await putJson(r.storage, 'policy/k', { ...stored, min_encryption_version: 1 });
    expect(data(await r.h.request('read', 'keys/k'))['min_encryption_version']).toBe(0);
    r.backend.context.keys.invalidate('k');
    expect(data(await r.h.request('read', 'keys/k'))['min_encryption_version']).toBe(1);
  });
});

afterAll(() => sealPool.stop());

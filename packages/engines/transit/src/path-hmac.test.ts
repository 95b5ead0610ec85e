import { createHmac } from 'node:crypto';
import { getJson, type BackendHarness } from '@strongroom/core';
import type { StoredKeyPolicy } from './key-policy';
import { b64, badRequest, data, failure, transitRig } from './test-support/transit-rig';

type Item = Record<string, unknown>;

const NODE_NAMES: Record<string, string> = {
  'sha2-224': 'sha224', 'sha2-256': 'sha256', 'sha2-384': 'sha384', 'sha2-512': 'sha512',
  'sha3-224': 'sha3-224', 'sha3-256': 'sha3-256', 'sha3-384': 'sha3-384', 'sha3-512': 'sha3-512',
};

/** A version's HMAC secret as stored, to check the output against an independent HMAC. */
async function storedHmacKey(h: BackendHarness, name: string, version: number): Promise<Buffer> {
  const stored = await getJson<StoredKeyPolicy>(h.storage, `policy/${name}`);
  return Buffer.from(stored!.versions[String(version)]!.hmac_key, 'base64');
}

async function hmac(h: BackendHarness, path: string, input: string, extra: Record<string, unknown> = {}): Promise<string> {
  return String(data(await h.request('write', path, { input: b64(input), ...extra }))['hmac']);
}

async function verifyHmac(h: BackendHarness, name: string, input: string, mac: string, extra: Record<string, unknown> = {}): Promise<unknown> {
  return data(await h.request('write', `verify/${name}`, { input: b64(input), hmac: mac, ...extra }))['valid'];
}

describe('hmac/:name', () => {
  it.each(Object.keys(NODE_NAMES))('%s: vault:v1: and the HMAC of the input under the version\'s own secret', async (alg) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const key = await storedHmacKey(h, 'k', 1);
    const expected = `vault:v1:${createHmac(NODE_NAMES[alg]!, key).update('payload').digest('base64')}`;
    expect(await hmac(h, 'hmac/k', 'payload', { algorithm: alg })).toBe(expected);
    expect(await hmac(h, `hmac/k/${alg}`, 'payload')).toBe(expected);
    expect(await verifyHmac(h, 'k', 'payload', expected, { hash_algorithm: alg })).toBe(true);
  });

  it('answers only the hmac, and defaults to sha2-256', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = data(await h.request('write', 'hmac/k', { input: b64('x') }));
    const key = await storedHmacKey(h, 'k', 1);
    expect(resp).toEqual({ hmac: `vault:v1:${createHmac('sha256', key).update('x').digest('base64')}` });
  });

  it('the algorithm in the path wins over the body', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    expect(await hmac(h, 'hmac/k/sha2-512', 'x', { algorithm: 'sha2-256' })).toBe(await hmac(h, 'hmac/k', 'x', { algorithm: 'sha2-512' }));
  });

  it.each(['aes128-gcm96', 'chacha20-poly1305', 'ed25519', 'ecdsa-p256', 'rsa-2048'])('%s keys have an HMAC secret separate from their key', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type });
    const key = await storedHmacKey(h, 'k', 1);
    expect(key).toHaveLength(32);
    expect(await hmac(h, 'hmac/k', 'x')).toBe(`vault:v1:${createHmac('sha256', key).update('x').digest('base64')}`);
  });

  it('hmac keys use the key itself, of the size they were created with', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/m', { type: 'hmac', key_size: 64 });
    const key = await storedHmacKey(h, 'm', 1);
    expect(key).toHaveLength(64);
    const mac = await hmac(h, 'hmac/m', 'x', { algorithm: 'sha2-512' });
    expect(mac).toBe(`vault:v1:${createHmac('sha512', key).update('x').digest('base64')}`);
    expect(await verifyHmac(h, 'm', 'x', mac, { hash_algorithm: 'sha2-512' })).toBe(true);
  });

  it('each version has its own secret; key_version picks one within min_encryption_version', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/k/rotate');
    const v1 = await hmac(h, 'hmac/k', 'x', { key_version: 1 });
    const v2 = await hmac(h, 'hmac/k', 'x');
    expect(v1).toMatch(/^vault:v1:/);
    expect(v2).toMatch(/^vault:v2:/);
    expect(v1.slice(9)).not.toBe(v2.slice(9));
    expect(v1).toBe(`vault:v1:${createHmac('sha256', await storedHmacKey(h, 'k', 1)).update('x').digest('base64')}`);
    await badRequest(hmac(h, 'hmac/k', 'x', { key_version: 3 }), 'key_version');
    await badRequest(hmac(h, 'hmac/k', 'x', { key_version: -1 }), 'key_version');
    await h.request('write', 'keys/k/config', { min_encryption_version: 2 });
    await badRequest(hmac(h, 'hmac/k', 'x', { key_version: 1 }), 'key_version');
  });

  it('ignores the key\'s ciphertext template: the prefix is always vault:v<N>:', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    expect(await hmac(h, 'hmac/k', 'x')).toMatch(/^vault:v1:[A-Za-z0-9+/]{43}=$/);
  });

  it('refuses an unknown algorithm (sha1 included), missing input, bad base64 and a missing key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(hmac(h, 'hmac/k', 'x', { algorithm: 'sha1' }), 'algorithm');
    await badRequest(hmac(h, 'hmac/k/md5', 'x'), 'algorithm');
    await badRequest(h.request('write', 'hmac/k', {}), 'input');
    await badRequest(h.request('write', 'hmac/k', { input: 'a=b' }), 'input');
    await failure(hmac(h, 'hmac/missing', 'x'), 400);
  });

  it('HMACs the empty input', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const mac = String(data(await h.request('write', 'hmac/k', { input: '' }))['hmac']);
    expect(await verifyHmac(h, 'k', '', mac)).toBe(true);
  });
});

describe('hmac/:name: batch_input', () => {
  it('HMACs each item in order with references; a bad item fails alone and the reply stays 200', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = await h.request('write', 'hmac/k', {
      input: b64('ignored'),
      batch_input: [{ input: b64('a'), reference: 'first' }, { input: '!!', reference: 'second' }, { reference: 'third' }, { input: b64('c') }],
    });
    expect(resp?.status).toBeUndefined();
    const out = data(resp)['batch_results'] as Item[];
    expect(out[0]).toEqual({ hmac: await hmac(h, 'hmac/k', 'a'), reference: 'first' });
    expect(out[1]).toEqual({ error: expect.stringContaining('"input"'), reference: 'second' });
    expect(out[2]).toEqual({ error: expect.stringContaining('"input"'), reference: 'third' });
    expect(out[3]).toEqual({ hmac: await hmac(h, 'hmac/k', 'c'), reference: '' });
  });

  it('a batch where every item fails is still 200', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = await h.request('write', 'hmac/k', { batch_input: [{ input: '!' }] });
    expect(resp?.status).toBeUndefined();
    expect((data(resp)['batch_results'] as Item[])[0]?.['error']).toEqual(expect.any(String));
  });
});

describe('verify/:name with hmac', () => {
  it('valid false for other input, another key, or a wrong-length MAC; 400 for malformed ones', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await h.request('write', 'keys/other');
    const mac = await hmac(h, 'hmac/k', 'data');
    expect(await verifyHmac(h, 'k', 'data', mac)).toBe(true);
    expect(await verifyHmac(h, 'k', 'Data', mac)).toBe(false);
    expect(await verifyHmac(h, 'other', 'data', mac)).toBe(false);
    expect(await verifyHmac(h, 'k', 'data', `vault:v1:${Buffer.alloc(16).toString('base64')}`)).toBe(false);
    for (const bad of ['nope', 'vault:v1', 'vault:vX:AAAA', 'vault:v1:***']) await failure(verifyHmac(h, 'k', 'data', bad), 400);
  });

  it('refuses versions newer than the key and below min_decryption_version', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const v1 = await hmac(h, 'hmac/k', 'data');
    expect((await failure(verifyHmac(h, 'k', 'data', v1.replace('v1', 'v2')), 400)).message).toContain('too new');
    await h.request('write', 'keys/k/rotate');
    expect(await verifyHmac(h, 'k', 'data', v1)).toBe(true);
    await h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    expect((await failure(verifyHmac(h, 'k', 'data', v1), 400)).message).toContain('too old');
    expect(await verifyHmac(h, 'k', 'data', await hmac(h, 'hmac/k', 'data'))).toBe(true);
  });

  it('batch: per-item valid and errors, 200', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const mac = await hmac(h, 'hmac/k', 'data');
    const resp = await h.request('write', 'verify/k', {
      batch_input: [
        { input: b64('data'), hmac: mac, reference: 'ok' },
        { input: b64('other'), hmac: mac, reference: 'no' },
        { input: b64('data'), hmac: 'broken', reference: 'bad' },
      ],
    });
    expect(resp?.status).toBeUndefined();
    expect(data(resp)['batch_results']).toEqual([
      { valid: true, reference: 'ok' },
      { valid: false, reference: 'no' },
      { error: expect.stringContaining('invalid HMAC'), reference: 'bad' },
    ]);
  });

  it('works on keys that cannot sign', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/m', { type: 'hmac' });
    expect(await verifyHmac(h, 'm', 'x', await hmac(h, 'hmac/m', 'x'))).toBe(true);
  });
});

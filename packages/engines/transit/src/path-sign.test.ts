import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import type { BackendHarness } from '@strongroom/core';
import { b64, badRequest, data, failure, transitRig } from './test-support/transit-rig';

type Item = Record<string, unknown>;

async function sign(h: BackendHarness, name: string, input: string | Buffer, extra: Record<string, unknown> = {}, path = `sign/${name}`): Promise<Item> {
  return data(await h.request('write', path, { input: b64(input), ...extra }));
}

async function verify(h: BackendHarness, name: string, input: string | Buffer, signature: string, extra: Record<string, unknown> = {}, path = `verify/${name}`): Promise<boolean> {
  const valid = data(await h.request('write', path, { input: b64(input), signature, ...extra }))['valid'];
  expect(typeof valid).toBe('boolean');
  return valid as boolean;
}

function results(resp: unknown): Item[] {
  return data(resp as never)['batch_results'] as Item[];
}

/** The signature bytes after `vault:v<N>:`. */
function sigBytes(signature: unknown, encoding: BufferEncoding = 'base64'): Buffer {
  return Buffer.from(String(signature).replace(/^vault:v\d+:/, ''), encoding);
}

/** Flips one bit of the signature bytes, keeping its encoding well-formed. */
function tamper(signature: string): string {
  const prefix = /^vault:v\d+:/.exec(signature)![0];
  const bytes = sigBytes(signature);
  bytes[bytes.length - 1]! ^= 1;
  return prefix + bytes.toString('base64');
}

describe('sign/:name and verify/:name: round trips', () => {
  it.each(['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048'])('%s: signs, verifies, and refuses other input or a changed signature', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/s', { type });
    const resp = await sign(h, 's', 'hello world');
    expect(resp).toEqual({ signature: expect.stringMatching(/^vault:v1:[A-Za-z0-9+/]+=*$/), key_version: 1 });
    const signature = String(resp['signature']);
    expect(await verify(h, 's', 'hello world', signature)).toBe(true);
    // A well-formed signature that does not match is an answer (valid false), not an error.
    expect(await verify(h, 's', 'hello world!', signature)).toBe(false);
    expect(await verify(h, 's', 'hello world', tamper(signature))).toBe(false);
  });

  it('signatures check out against the public key the key read shows', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = (await sign(h, 'e', 'message'))['signature'];
    const keys = data(await h.request('read', 'keys/e'))['keys'] as Record<string, Item>;
    const pub = createPublicKey(String(keys['1']?.['public_key']));
    expect(nodeVerify('sha256', Buffer.from('message'), pub, sigBytes(signature))).toBe(true);
  });

  it('ed25519 signs the input itself, deterministically, and ignores hash_algorithm', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/ed', { type: 'ed25519' });
    const a = await sign(h, 'ed', 'same');
    expect(await sign(h, 'ed', 'same', { hash_algorithm: 'sha2-384' })).toEqual(a);
    expect(sigBytes(a['signature'])).toHaveLength(64);
    const keys = data(await h.request('read', 'keys/ed'))['keys'] as Record<string, Item>;
    const raw = Buffer.from(String(keys['1']?.['public_key']), 'base64');
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
    expect(nodeVerify(null, Buffer.from('same'), pub, sigBytes(a['signature']))).toBe(true);
    expect(a['public_key']).toBeUndefined();
  });

  it('ed25519 refuses sha2-512, which would ask for Ed25519ph', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/ed', { type: 'ed25519' });
    await failure(sign(h, 'ed', 'x', { hash_algorithm: 'sha2-512' }), 400);
  });

  it('signs and verifies the empty input', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', ''))['signature']);
    expect(await verify(h, 'e', '', signature)).toBe(true);
  });
});

describe('sign/:name: hash_algorithm', () => {
  it.each(['sha1', 'sha2-224', 'sha2-256', 'sha2-384', 'sha2-512', 'sha3-224', 'sha3-256', 'sha3-384', 'sha3-512'])(
    'ECDSA P-384 with %s: verify needs the same hash', async (hash) => {
      const { h } = transitRig();
      await h.request('write', 'keys/e', { type: 'ecdsa-p384' });
      const signature = String((await sign(h, 'e', 'data', { hash_algorithm: hash }))['signature']);
      expect(await verify(h, 'e', 'data', signature, { hash_algorithm: hash })).toBe(true);
      const other = hash === 'sha2-256' ? 'sha2-384' : 'sha2-256';
      expect(await verify(h, 'e', 'data', signature, { hash_algorithm: other })).toBe(false);
    },
  );

  it('takes the hash from the last path segment, which wins over the body', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', 'data', { hash_algorithm: 'sha2-256' }, 'sign/e/sha2-512'))['signature']);
    expect(await verify(h, 'e', 'data', signature, {}, 'verify/e/sha2-512')).toBe(true);
    expect(await verify(h, 'e', 'data', signature, { hash_algorithm: 'sha2-512' })).toBe(true);
    expect(await verify(h, 'e', 'data', signature)).toBe(false);
  });

  it('accepts the deprecated "algorithm" field when hash_algorithm is not given', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', 'data', { algorithm: 'sha2-384' }))['signature']);
    expect(await verify(h, 'e', 'data', signature, { hash_algorithm: 'sha2-384' })).toBe(true);
  });

  it('refuses an unknown hash algorithm, in the body or the path', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(sign(h, 'e', 'x', { hash_algorithm: 'md5' }), 'hash_algorithm');
    await badRequest(sign(h, 'e', 'x', {}, 'sign/e/sha2-999'), 'hash_algorithm');
    await badRequest(verify(h, 'e', 'x', 'vault:v1:AAAA', { hash_algorithm: 'md5' }), 'hash_algorithm');
  });

  it('none needs prehashed and pkcs1v15, and signs the bytes without an algorithm identifier', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const digest = createHash('sha256').update('payload').digest();
    await failure(sign(h, 'r', digest, { hash_algorithm: 'none' }), 400);
    await failure(sign(h, 'r', digest, { hash_algorithm: 'none', prehashed: true }), 400);
    await failure(sign(h, 'r', digest, { hash_algorithm: 'none', signature_algorithm: 'pkcs1v15' }), 400);
    const opts = { hash_algorithm: 'none', prehashed: true, signature_algorithm: 'pkcs1v15' };
    const signature = String((await sign(h, 'r', digest, opts))['signature']);
    expect(await verify(h, 'r', digest, signature, opts)).toBe(true);
    // With an identifier it is a different signature, so a sha2-256 verify of the message fails.
    expect(await verify(h, 'r', 'payload', signature, { signature_algorithm: 'pkcs1v15' })).toBe(false);
  });
});

describe('sign/:name: prehashed input', () => {
  it.each(['ecdsa-p256', 'rsa-2048'])('%s: a signature of the digest is a signature of the message', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type });
    const digest = createHash('sha384').update('the message').digest();
    const signature = String((await sign(h, 'k', digest, { prehashed: true, hash_algorithm: 'sha2-384' }))['signature']);
    expect(await verify(h, 'k', 'the message', signature, { hash_algorithm: 'sha2-384' })).toBe(true);
    expect(await verify(h, 'k', digest, signature, { hash_algorithm: 'sha2-384', prehashed: true })).toBe(true);
  });

  it('RSA refuses a prehashed input of the wrong length for the hash', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const err = await failure(sign(h, 'r', Buffer.alloc(20), { prehashed: true }), 400);
    expect(err.message).toContain('input');
  });
});

describe('sign/:name: RSA options', () => {
  it.each(['pss', 'pkcs1v15'])('signature_algorithm %s must match on verify', async (alg) => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const signature = String((await sign(h, 'r', 'data', { signature_algorithm: alg }))['signature']);
    expect(sigBytes(signature)).toHaveLength(256);
    expect(await verify(h, 'r', 'data', signature, { signature_algorithm: alg })).toBe(true);
    expect(await verify(h, 'r', 'data', signature, { signature_algorithm: alg === 'pss' ? 'pkcs1v15' : 'pss' })).toBe(false);
  });

  it('PKCS#1 v1.5 signatures are deterministic, PSS ones are salted', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const p1 = { signature_algorithm: 'pkcs1v15' };
    expect((await sign(h, 'r', 'x', p1))['signature']).toBe((await sign(h, 'r', 'x', p1))['signature']);
    expect((await sign(h, 'r', 'x'))['signature']).not.toBe((await sign(h, 'r', 'x'))['signature']);
  });

  it('salt_length: auto, hash or a number; an exact length is checked on verify, auto detects it', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    for (const salt of ['auto', 'hash', '20', 0, -1, 10]) {
      const signature = String((await sign(h, 'r', 'data', { salt_length: salt }))['signature']);
      expect(await verify(h, 'r', 'data', signature, { salt_length: salt })).toBe(true);
      expect(await verify(h, 'r', 'data', signature)).toBe(true);
    }
    const twenty = String((await sign(h, 'r', 'data', { salt_length: 20 }))['signature']);
    expect(await verify(h, 'r', 'data', twenty, { salt_length: 'hash' })).toBe(false);
  });

  it('refuses a bad salt_length, a salt too long for the key, and an unknown signature_algorithm', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    await failure(sign(h, 'r', 'x', { salt_length: 'long' }), 400);
    await failure(sign(h, 'r', 'x', { salt_length: -2 }), 400);
    await failure(sign(h, 'r', 'x', { salt_length: 300 }), 400);
    await badRequest(sign(h, 'r', 'x', { signature_algorithm: 'pkcs1v21' }), 'signature_algorithm');
  });

  it('signature_algorithm means nothing to other key types', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', 'x', { signature_algorithm: 'whatever' }))['signature']);
    expect(await verify(h, 'e', 'x', signature)).toBe(true);
  });
});

describe('sign/:name: marshaling_algorithm', () => {
  it.each([['ecdsa-p256', 64], ['ecdsa-p384', 96], ['ecdsa-p521', 132]] as const)('%s jws: unpadded base64url of r||s, %i bytes', async (type, size) => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type });
    const signature = String((await sign(h, 'e', 'jwt body', { marshaling_algorithm: 'jws' }))['signature']);
    expect(signature).toMatch(/^vault:v1:[A-Za-z0-9_-]+$/);
    expect(sigBytes(signature, 'base64url')).toHaveLength(size);
    expect(await verify(h, 'e', 'jwt body', signature, { marshaling_algorithm: 'jws' })).toBe(true);
    expect(await verify(h, 'e', 'other', signature, { marshaling_algorithm: 'jws' })).toBe(false);
  });

  it('a jws signature does not parse as asn1, and the reverse', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    let jws = String((await sign(h, 'e', 'x', { marshaling_algorithm: 'jws' }))['signature']);
    // About one signature in four happens to be valid base64 too; it then fails to parse as DER.
    while (!/[-_]/.test(jws)) jws = String((await sign(h, 'e', 'x', { marshaling_algorithm: 'jws' }))['signature']);
    await failure(verify(h, 'e', 'x', jws), 400);
    const asn1 = String((await sign(h, 'e', 'x'))['signature']);
    expect(await verify(h, 'e', 'x', asn1.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'), { marshaling_algorithm: 'jws' })).toBe(false);
  });

  it('jws on RSA and ed25519 changes only the encoding', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/ed', { type: 'ed25519' });
    const asn1 = String((await sign(h, 'ed', 'x'))['signature']);
    const jws = String((await sign(h, 'ed', 'x', { marshaling_algorithm: 'jws' }))['signature']);
    expect(sigBytes(jws, 'base64url')).toEqual(sigBytes(asn1));
    expect(await verify(h, 'ed', 'x', jws, { marshaling_algorithm: 'jws' })).toBe(true);
  });

  it('refuses an unknown marshaling algorithm', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(sign(h, 'e', 'x', { marshaling_algorithm: 'der' }), 'marshaling_algorithm');
  });
});

describe('sign/:name and verify/:name: key versions', () => {
  it('signs with the latest version or the one asked for, within min_encryption_version', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await h.request('write', 'keys/e/rotate');
    await h.request('write', 'keys/e/rotate');
    expect(await sign(h, 'e', 'x')).toMatchObject({ signature: expect.stringMatching(/^vault:v3:/), key_version: 3 });
    expect(await sign(h, 'e', 'x', { key_version: 1 })).toMatchObject({ signature: expect.stringMatching(/^vault:v1:/), key_version: 1 });
    await badRequest(sign(h, 'e', 'x', { key_version: 4 }), 'key_version');
    await badRequest(sign(h, 'e', 'x', { key_version: -1 }), 'key_version');
    await h.request('write', 'keys/e/config', { min_encryption_version: 2 });
    await badRequest(sign(h, 'e', 'x', { key_version: 1 }), 'key_version');
    expect((await sign(h, 'e', 'x', { key_version: 2 }))['key_version']).toBe(2);
  });

  it('verifies old versions until min_decryption_version moves past them, then refuses with 400', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const v1 = String((await sign(h, 'e', 'x'))['signature']);
    await h.request('write', 'keys/e/rotate');
    const v2 = String((await sign(h, 'e', 'x'))['signature']);
    expect(v2).toMatch(/^vault:v2:/);
    expect(await verify(h, 'e', 'x', v1)).toBe(true);
    // Each version has its own key: a v1 signature relabelled as v2 does not verify.
    expect(await verify(h, 'e', 'x', v1.replace('vault:v1:', 'vault:v2:'))).toBe(false);
    await h.request('write', 'keys/e/config', { min_decryption_version: 2 });
    const err = await failure(verify(h, 'e', 'x', v1), 400);
    expect(err.message).toContain('too old');
    expect(await verify(h, 'e', 'x', v2)).toBe(true);
  });

  it('refuses a signature naming a version newer than the key has', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const v1 = String((await sign(h, 'e', 'x'))['signature']);
    const err = await failure(verify(h, 'e', 'x', v1.replace('vault:v1:', 'vault:v7:')), 400);
    expect(err.message).toContain('too new');
  });
});

describe('verify/:name: malformed signatures are 400', () => {
  it.each([
    ['no prefix', 'MEUCIQ=='],
    ['another prefix', 'other:v1:AAAA'],
    ['no version separator', 'vault:v1AAAA'],
    ['a version that is not a number', 'vault:vx:AAAA'],
    ['bad base64', 'vault:v1:***'],
    ['ASN.1 that is not a signature', `vault:v1:${Buffer.from('not der').toString('base64')}`],
    ['a DER signature with trailing bytes', 'vault:v1:MAYCAQECAQEA'],
  ])('%s', async (_what, signature) => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await failure(verify(h, 'e', 'x', signature), 400);
  });

  it('a well-formed ECDSA signature of the wrong values is valid false', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    expect(await verify(h, 'e', 'x', 'vault:v1:MAYCAQECAQE=')).toBe(false);
  });

  it('a truncated RSA or ed25519 signature is valid false', async () => {
    const { h } = transitRig();
    for (const type of ['rsa-2048', 'ed25519']) {
      await h.request('write', `keys/${type}`, { type });
      const signature = String((await sign(h, type, 'x'))['signature']);
      const short = `vault:v1:${sigBytes(signature).subarray(1).toString('base64')}`;
      expect(await verify(h, type, 'x', short)).toBe(false);
    }
  });
});

describe('sign/:name and verify/:name: refusals', () => {
  it.each(['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305', 'hmac'])('%s keys cannot sign or verify signatures; the 400 names the type', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type });
    const signErr = await failure(sign(h, 'k', 'x'), 400);
    expect(signErr.message).toContain(type);
    expect(signErr.message).toContain('signing');
    const verifyErr = await failure(verify(h, 'k', 'x', 'vault:v1:AAAA'), 400);
    expect(verifyErr.message).toContain(type);
  });

  it('a missing key is a 400', async () => {
    const { h } = transitRig();
    await failure(sign(h, 'nope', 'x'), 400);
    await failure(verify(h, 'nope', 'x', 'vault:v1:AAAA'), 400);
  });

  it('needs input, and refuses input that is not base64', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(h.request('write', 'sign/e', {}), 'input');
    await badRequest(h.request('write', 'sign/e', { input: 'not base64!' }), 'input');
    const signature = String((await sign(h, 'e', 'x'))['signature']);
    await badRequest(h.request('write', 'verify/e', { signature }), 'input');
    await badRequest(h.request('write', 'verify/e', { input: '%%%', signature }), 'input');
  });

  it('verify needs exactly one of signature or hmac', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(h.request('write', 'verify/e', { input: b64('x') }), 'signature');
    const err = await failure(h.request('write', 'verify/e', { input: b64('x'), signature: 'vault:v1:AAAA', hmac: 'vault:v1:AAAA' }), 400);
    expect(err.message).toContain('hmac');
  });

  it('does not create keys (no upsert on sign)', async () => {
    const { h } = transitRig();
    await failure(sign(h, 'fresh', 'x'), 400);
    expect(await h.request('read', 'keys/fresh')).toBeNull();
  });
});

describe('derived ed25519 keys', () => {
  async function derivedKey(): Promise<BackendHarness> {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { type: 'ed25519', derived: true });
    return h;
  }

  it('need a context to sign and to verify', async () => {
    const h = await derivedKey();
    await badRequest(sign(h, 'd', 'x'), 'context');
    const signature = String((await sign(h, 'd', 'x', { context: b64('tenant-a') }))['signature']);
    await badRequest(verify(h, 'd', 'x', signature), 'context');
    await badRequest(sign(h, 'd', 'x', { context: 'not base64!' }), 'context');
  });

  it('sign answers the derived public key; one context gives one key and one signature', async () => {
    const h = await derivedKey();
    const a = await sign(h, 'd', 'msg', { context: b64('tenant-a') });
    expect(a).toEqual({ signature: expect.stringMatching(/^vault:v1:/), key_version: 1, public_key: expect.any(String) });
    expect(await sign(h, 'd', 'msg', { context: b64('tenant-a') })).toEqual(a);
    const b = await sign(h, 'd', 'msg', { context: b64('tenant-b') });
    expect(b['public_key']).not.toBe(a['public_key']);
    expect(b['signature']).not.toBe(a['signature']);

    const raw = Buffer.from(String(a['public_key']), 'base64');
    expect(raw).toHaveLength(32);
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
    expect(nodeVerify(null, Buffer.from('msg'), pub, sigBytes(a['signature']))).toBe(true);

    expect(await verify(h, 'd', 'msg', String(a['signature']), { context: b64('tenant-a') })).toBe(true);
    expect(await verify(h, 'd', 'msg', String(a['signature']), { context: b64('tenant-b') })).toBe(false);
  });

  it('key read with context shows the derived public key for each version', async () => {
    const h = await derivedKey();
    await h.request('write', 'keys/d/rotate');
    const context = b64('tenant-a');
    const plain = data(await h.request('read', 'keys/d'))['keys'] as Record<string, Item>;
    const derived = data(await h.request('read', 'keys/d', { context }))['keys'] as Record<string, Item>;
    for (const version of [1, 2]) {
      const signed = await sign(h, 'd', 'x', { context, key_version: version });
      expect(derived[String(version)]).toEqual({ ...plain[String(version)], public_key: signed['public_key'] });
      expect(derived[String(version)]?.['public_key']).not.toBe(plain[String(version)]?.['public_key']);
    }
    await badRequest(h.request('read', 'keys/d', { context: '***' }), 'context');
  });

  it('key read with context leaves keys that are not derived ed25519 as they are', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/ed', { type: 'ed25519' });
    await h.request('write', 'keys/aes', { derived: true });
    for (const name of ['ed', 'aes']) {
      expect(await h.request('read', `keys/${name}`, { context: b64('c') })).toEqual(await h.request('read', `keys/${name}`));
    }
  });
});

describe('sign/:name: batch_input', () => {
  it('signs each item in order, echoes references, and ignores top-level input', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const resp = await h.request('write', 'sign/e', {
      input: b64('ignored'),
      batch_input: [{ input: b64('one'), reference: 'r1' }, { input: b64('two') }, { input: b64('three'), reference: 'r3' }],
    });
    expect(resp?.status).toBeUndefined();
    const out = results(resp);
    expect(out.map((r) => r['reference'])).toEqual(['r1', '', 'r3']);
    for (const [i, text] of ['one', 'two', 'three'].entries()) {
      expect(out[i]).toEqual({ signature: expect.stringMatching(/^vault:v1:/), key_version: 1, reference: out[i]?.['reference'] });
      expect(await verify(h, 'e', text, String(out[i]?.['signature']))).toBe(true);
    }
  });

  it('a failing item carries an error and the batch is still 200, even when every item fails', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const resp = await h.request('write', 'sign/e', {
      batch_input: [{ input: b64('ok'), reference: 'a' }, { input: 'bad base64!', reference: 'b' }, { reference: 'c' }],
    });
    expect(resp?.status).toBeUndefined();
    const out = results(resp);
    expect(out[0]).toMatchObject({ signature: expect.any(String), reference: 'a' });
    expect(out[1]).toEqual({ error: expect.stringContaining('"input"'), reference: 'b' });
    expect(out[2]).toEqual({ error: expect.stringContaining('"input"'), reference: 'c' });

    const allBad = await h.request('write', 'sign/e', { batch_input: [{ input: '!' }, { input: '?' }] });
    expect(allBad?.status).toBeUndefined();
    expect(results(allBad).every((r) => typeof r['error'] === 'string')).toBe(true);
  });

  it('derived ed25519: each item has its own context, and its result carries the derived public key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { type: 'ed25519', derived: true });
    const resp = await h.request('write', 'sign/d', {
      context: b64('ignored at top level'),
      batch_input: [
        { input: b64('m'), context: b64('a') },
        { input: b64('m'), context: b64('b') },
        { input: b64('m') },
      ],
    });
    const out = results(resp);
    const single = await sign(h, 'd', 'm', { context: b64('a') });
    expect(out[0]).toEqual({
      signature: single['signature'], key_version: 1, public_key: single['public_key'], publickey: single['public_key'], reference: '',
    });
    expect(out[1]?.['public_key']).not.toBe(out[0]?.['public_key']);
    expect(out[2]).toEqual({ error: expect.stringContaining('"context"'), reference: '' });
  });

  it('refuses batch_input that is not a non-empty list of objects', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(h.request('write', 'sign/e', { batch_input: [] }), 'batch_input');
    await badRequest(h.request('write', 'sign/e', { batch_input: 'x' }), 'batch_input');
  });

  it('request-wide options that are wrong fail the whole batch', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await badRequest(h.request('write', 'sign/e', { hash_algorithm: 'md5', batch_input: [{ input: b64('x') }] }), 'hash_algorithm');
  });
});

describe('verify/:name: batch_input', () => {
  it('answers valid per item, with errors for malformed ones, and stays 200', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const good = String((await sign(h, 'e', 'one'))['signature']);
    const resp = await h.request('write', 'verify/e', {
      batch_input: [
        { input: b64('one'), signature: good, reference: 'good' },
        { input: b64('two'), signature: good, reference: 'wrong' },
        { input: b64('one'), signature: 'garbage', reference: 'malformed' },
        { input: b64('one'), signature: good.replace('v1', 'v9'), reference: 'too-new' },
      ],
    });
    expect(resp?.status).toBeUndefined();
    const out = results(resp);
    expect(out[0]).toEqual({ valid: true, reference: 'good' });
    expect(out[1]).toEqual({ valid: false, reference: 'wrong' });
    expect(out[2]).toEqual({ error: expect.stringContaining('invalid signature'), reference: 'malformed' });
    expect(out[3]).toEqual({ error: expect.stringContaining('too new'), reference: 'too-new' });
  });

  it('refuses a batch that mixes hmac and signature items, or an item with both', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', 'x'))['signature']);
    const mac = String(data(await h.request('write', 'hmac/e', { input: b64('x') }))['hmac']);
    const mixed = await failure(h.request('write', 'verify/e', {
      batch_input: [{ input: b64('x'), signature }, { input: b64('x'), hmac: mac }],
    }), 400);
    expect(mixed.message).toContain('mixing');
    await failure(h.request('write', 'verify/e', { batch_input: [{ input: b64('x'), signature, hmac: mac }] }), 400);
    await failure(h.request('write', 'verify/e', { batch_input: [{ input: b64('x') }] }), 400);
  });

  it('an item without a signature in a signature batch fails on its own', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const signature = String((await sign(h, 'e', 'x'))['signature']);
    const out = results(await h.request('write', 'verify/e', {
      batch_input: [{ input: b64('x'), signature }, { input: b64('x'), reference: 'r' }],
    }));
    expect(out[0]).toEqual({ valid: true, reference: '' });
    expect(out[1]).toEqual({ error: expect.stringContaining('"signature"'), reference: 'r' });
  });

  it('derived ed25519: each item verifies against its own context', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { type: 'ed25519', derived: true });
    const signature = String((await sign(h, 'd', 'm', { context: b64('a') }))['signature']);
    const out = results(await h.request('write', 'verify/d', {
      batch_input: [
        { input: b64('m'), signature, context: b64('a') },
        { input: b64('m'), signature, context: b64('b') },
      ],
    }));
    expect(out.map((r) => r['valid'])).toEqual([true, false]);
  });
});

describe('verify/:name with hmac', () => {
  it('checks an HMAC made by hmac/:name, with the same algorithm', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const mac = String(data(await h.request('write', 'hmac/k', { input: b64('data') }))['hmac']);
    const check = async (input: string, extra: Record<string, unknown> = {}, path = 'verify/k') =>
      data(await h.request('write', path, { input: b64(input), hmac: mac, ...extra }))['valid'];
    expect(await check('data')).toBe(true);
    expect(await check('other')).toBe(false);
    expect(await check('data', { hash_algorithm: 'sha2-512' })).toBe(false);

    const mac512 = String(data(await h.request('write', 'hmac/k/sha2-512', { input: b64('data') }))['hmac']);
    expect(data(await h.request('write', 'verify/k/sha2-512', { input: b64('data'), hmac: mac512 }))['valid']).toBe(true);
    expect(data(await h.request('write', 'verify/k', { input: b64('data'), hmac: mac512, algorithm: 'sha2-512' }))['valid']).toBe(true);
    await badRequest(h.request('write', 'verify/k', { input: b64('data'), hmac: mac, hash_algorithm: 'sha1' }), 'hash_algorithm');
  });
});

import { createHash } from 'node:crypto';
import type { BackendHarness } from '@strongroom/core';
import { OpensslScratch } from './crypto/test-support/openssl';
import { b64, data, transitRig } from './test-support/transit-rig';

/*
 * Signatures made through the sign endpoint, checked by the system openssl binary with nothing
 * but the public key the key read shows. This is what a relying party outside the server does,
 * so it catches wire-format slips (encoding, padding, salt, DER) that a round trip through our
 * own verify could not. The opposite direction (openssl signs, we verify) needs key import for
 * the private key and is covered at the crypto level meanwhile.
 */

const ssl = new OpensslScratch();
afterAll(() => ssl.cleanup());

let counter = 0;
function file(content: Buffer | string): string {
  return ssl.write(`f${counter++}`, content);
}

const MESSAGE = Buffer.from('interop: a message signed by Strongroom, checked by openssl');
const messageFile = file(MESSAGE);
const otherFile = file(Buffer.from('a different message'));

async function newKey(type: string, extra: Record<string, unknown> = {}): Promise<BackendHarness> {
  const { h } = transitRig();
  await h.request('write', 'keys/k', { type, ...extra });
  return h;
}

/** The version's public_key from the key read, optionally for a derivation context. */
async function publicKey(h: BackendHarness, version = 1, read: Record<string, unknown> = {}): Promise<string> {
  const keys = data(await h.request('read', 'keys/k', read))['keys'] as Record<string, Record<string, unknown>>;
  return String(keys[String(version)]?.['public_key']);
}

async function signature(h: BackendHarness, input: Buffer, extra: Record<string, unknown> = {}): Promise<Buffer> {
  const text = String(data(await h.request('write', 'sign/k', { input: b64(input), ...extra }))['signature']);
  const body = text.replace(/^vault:v\d+:/, '');
  return Buffer.from(body, extra['marshaling_algorithm'] === 'jws' ? 'base64url' : 'base64');
}

/** An ed25519 public key as base64 of its raw 32 bytes (the key read's form) to an SPKI PEM file. */
function ed25519PemFile(raw64: string): string {
  const raw = Buffer.from(raw64, 'base64');
  expect(raw).toHaveLength(32);
  const der = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
  return file(`-----BEGIN PUBLIC KEY-----\n${der.toString('base64')}\n-----END PUBLIC KEY-----\n`);
}

function dgstVerify(digest: string, pub: string, sig: Buffer, msg: string, sigopts: string[] = []): boolean {
  return ssl.succeeds(['dgst', `-${digest}`, ...sigopts.flatMap((o) => ['-sigopt', o]), '-verify', pub, '-signature', file(sig), msg]);
}

/** r‖s to the DER SEQUENCE openssl reads. */
function rsToDer(rs: Buffer): Buffer {
  const int = (b: Buffer): Buffer => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    let v = b.subarray(i);
    if ((v[0]! & 0x80) !== 0) v = Buffer.concat([Buffer.from([0]), v]);
    return Buffer.concat([Buffer.from([0x02]), len(v.length), v]);
  };
  const len = (n: number): Buffer => (n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]));
  const half = rs.length / 2;
  const body = Buffer.concat([int(rs.subarray(0, half)), int(rs.subarray(half))]);
  return Buffer.concat([Buffer.from([0x30]), len(body.length), body]);
}

describe('RSA signatures from sign/, verified by openssl', () => {
  let h: BackendHarness;
  let pub: string;
  beforeAll(async () => {
    h = await newKey('rsa-2048');
    const pem = await publicKey(h);
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    pub = file(pem);
  });

  it.each([
    ['sha2-256', 'sha256'], ['sha2-384', 'sha384'], ['sha2-512', 'sha512'], ['sha1', 'sha1'], ['sha3-256', 'sha3-256'],
  ])('PSS with %s and the default salt (auto: the maximum)', async (hash, digest) => {
    const sig = await signature(h, MESSAGE, { hash_algorithm: hash });
    expect(dgstVerify(digest, pub, sig, messageFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:auto'])).toBe(true);
    expect(dgstVerify(digest, pub, sig, messageFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:max'])).toBe(true);
    expect(dgstVerify(digest, pub, sig, otherFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:auto'])).toBe(false);
  });

  it('PSS with salt_length hash and an exact number, which openssl checks', async () => {
    const hashSalt = await signature(h, MESSAGE, { salt_length: 'hash' });
    expect(dgstVerify('sha256', pub, hashSalt, messageFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:digest'])).toBe(true);
    const twenty = await signature(h, MESSAGE, { salt_length: 20 });
    expect(dgstVerify('sha256', pub, twenty, messageFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:20'])).toBe(true);
    expect(dgstVerify('sha256', pub, twenty, messageFile, ['rsa_padding_mode:pss', 'rsa_pss_saltlen:32'])).toBe(false);
  });

  it.each([['sha2-256', 'sha256'], ['sha2-512', 'sha512'], ['sha1', 'sha1']])('PKCS#1 v1.5 with %s', async (hash, digest) => {
    const sig = await signature(h, MESSAGE, { hash_algorithm: hash, signature_algorithm: 'pkcs1v15' });
    expect(dgstVerify(digest, pub, sig, messageFile)).toBe(true);
    expect(dgstVerify(digest, pub, sig, otherFile)).toBe(false);
    // A PSS check of a v1.5 signature fails: openssl really looks at the padding.
    expect(dgstVerify(digest, pub, sig, messageFile, ['rsa_padding_mode:pss'])).toBe(false);
  });

  it('PKCS#1 v1.5 over a prehashed digest is the ordinary signature of the message', async () => {
    const digest = createHash('sha256').update(MESSAGE).digest();
    const sig = await signature(h, digest, { prehashed: true, signature_algorithm: 'pkcs1v15' });
    expect(dgstVerify('sha256', pub, sig, messageFile)).toBe(true);
  });

  it('hash_algorithm none: openssl recovers exactly the input, with no DigestInfo around it', async () => {
    const digest = createHash('sha384').update(MESSAGE).digest();
    const sig = await signature(h, digest, { hash_algorithm: 'none', prehashed: true, signature_algorithm: 'pkcs1v15' });
    const recovered = ssl.run(['pkeyutl', '-verifyrecover', '-pubin', '-inkey', pub, '-in', file(sig), '-pkeyopt', 'rsa_padding_mode:pkcs1']);
    expect(recovered).toEqual(digest);
  });

  it('older versions keep verifying with their own public key after rotation', async () => {
    const r = await newKey('rsa-2048');
    await r.request('write', 'keys/k/rotate');
    const v1 = await signature(r, MESSAGE, { key_version: 1, signature_algorithm: 'pkcs1v15' });
    const v2 = await signature(r, MESSAGE, { signature_algorithm: 'pkcs1v15' });
    const pub1 = file(await publicKey(r, 1));
    const pub2 = file(await publicKey(r, 2));
    expect(dgstVerify('sha256', pub1, v1, messageFile)).toBe(true);
    expect(dgstVerify('sha256', pub2, v2, messageFile)).toBe(true);
    expect(dgstVerify('sha256', pub2, v1, messageFile)).toBe(false);
  });
});

describe('ECDSA signatures from sign/, verified by openssl', () => {
  it.each([
    ['ecdsa-p256', 'sha2-256', 'sha256'], ['ecdsa-p384', 'sha2-384', 'sha384'], ['ecdsa-p521', 'sha2-512', 'sha512'], ['ecdsa-p256', 'sha3-256', 'sha3-256'],
  ])('%s asn1 with %s', async (type, hash, digest) => {
    const h = await newKey(type);
    const pub = file(await publicKey(h));
    const sig = await signature(h, MESSAGE, { hash_algorithm: hash });
    expect(sig[0]).toBe(0x30);
    expect(dgstVerify(digest, pub, sig, messageFile)).toBe(true);
    expect(dgstVerify(digest, pub, sig, otherFile)).toBe(false);
  });

  it('prehashed: the signature of a digest verifies as a signature of the message', async () => {
    const h = await newKey('ecdsa-p384');
    const pub = file(await publicKey(h));
    const digest = createHash('sha384').update(MESSAGE).digest();
    const sig = await signature(h, digest, { prehashed: true, hash_algorithm: 'sha2-384' });
    expect(dgstVerify('sha384', pub, sig, messageFile)).toBe(true);
  });

  it('jws: r‖s re-encoded as DER verifies', async () => {
    const h = await newKey('ecdsa-p256');
    const pub = file(await publicKey(h));
    const rs = await signature(h, MESSAGE, { marshaling_algorithm: 'jws' });
    expect(rs).toHaveLength(64);
    expect(dgstVerify('sha256', pub, rsToDer(rs), messageFile)).toBe(true);
  });
});

describe('Ed25519 signatures from sign/, verified by openssl', () => {
  function ed25519Verify(pub: string, sig: Buffer, msg: string): boolean {
    return ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', pub, '-rawin', '-in', msg, '-sigfile', file(sig)]);
  }

  it('verifies with the public key the key read shows', async () => {
    const h = await newKey('ed25519');
    const pub = ed25519PemFile(await publicKey(h));
    const sig = await signature(h, MESSAGE);
    expect(sig).toHaveLength(64);
    expect(ed25519Verify(pub, sig, messageFile)).toBe(true);
    expect(ed25519Verify(pub, sig, otherFile)).toBe(false);
  });

  it('derived: the key read with the same context shows the key that verifies; the base key does not', async () => {
    const h = await newKey('ed25519', { derived: true });
    const context = b64('tenant-42');
    const resp = data(await h.request('write', 'sign/k', { input: b64(MESSAGE), context }));
    const sig = Buffer.from(String(resp['signature']).replace(/^vault:v1:/, ''), 'base64');
    const derived = await publicKey(h, 1, { context });
    expect(derived).toBe(resp['public_key']);
    expect(ed25519Verify(ed25519PemFile(derived), sig, messageFile)).toBe(true);
    expect(ed25519Verify(ed25519PemFile(await publicKey(h)), sig, messageFile)).toBe(false);
    expect(ed25519Verify(ed25519PemFile(await publicKey(h, 1, { context: b64('tenant-43') })), sig, messageFile)).toBe(false);
  });
});

import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { digestSize, nodeDigestName, type DigestAlgorithm } from './hashing';
import type { AsymmetricKeyType, EcdsaKeyType } from './key-types';
import { decodeSignature, encodeSignature, parseSaltLength, sign, verify, type SignOptions } from './signing';
import { OpensslScratch } from './test-support/openssl';
import { expectInputError, thrown } from './test-support/errors';



interface Pair { privateKey: KeyObject; publicKey: KeyObject; priv: string; pub: string }

const ssl = new OpensslScratch();
afterAll(() => ssl.cleanup());

let seq = 0;
function pair(name: string, keys: { privateKey: KeyObject; publicKey: KeyObject }): Pair {
  return {
    ...keys,
    priv: ssl.write(`${name}.key.pem`, keys.privateKey.export({ format: 'pem', type: 'pkcs8' })),
    pub: ssl.write(`${name}.pub.pem`, keys.publicKey.export({ format: 'pem', type: 'spki' })),
  };
}
const file = (data: Buffer) => ssl.write(`f${seq++}.bin`, data);
const md = (alg: DigestAlgorithm, data: Buffer) => createHash(nodeDigestName(alg)).update(data).digest();

const rsa2048 = pair('rsa2048', generateKeyPairSync('rsa', { modulusLength: 2048 }));
const rsa3072 = pair('rsa3072', generateKeyPairSync('rsa', { modulusLength: 3072 }));

describe('RSA', () => {
  const HASHES: DigestAlgorithm[] = ['sha1', 'sha2-224', 'sha2-256', 'sha2-384', 'sha2-512', 'sha3-256', 'sha3-512'];
  const msg = Buffer.from('sign me, RSA');
  const msgFile = file(msg);

  describe('PSS, verified by openssl dgst', () => {
    it.each(HASHES)('%s with salt auto (the maximum), hash and 20', (hash) => {
      const max = 256 - 2 - digestSize(hash);
      for (const [saltLength, expectLen] of [['auto', max], ['hash', digestSize(hash)], [20, 20]] as const) {
        const sig = sign('rsa-2048', rsa2048.privateKey, msg, { hashAlgorithm: hash, saltLength });
        expect(sig).toHaveLength(256);
        const args = ['dgst', `-${nodeDigestName(hash)}`, '-sigopt', 'rsa_padding_mode:pss', '-sigopt', `rsa_pss_saltlen:${expectLen}`,
          '-verify', rsa2048.pub, '-signature', file(sig), msgFile];
        expect(ssl.succeeds(args)).toBe(true);
        expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { hashAlgorithm: hash, saltLength })).toBe(true);
        expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { hashAlgorithm: hash, saltLength: 'auto' })).toBe(true);
        expect(verify('rsa-2048', rsa2048.publicKey, Buffer.from('other'), sig, { hashAlgorithm: hash, saltLength })).toBe(false);
      }
    });

    it('openssl is a real check: it refuses a wrong salt length, a wrong message and a flipped bit', () => {
      const sig = sign('rsa-2048', rsa2048.privateKey, msg);
      const verifyWith = (saltlen: string, sigFile: string, input: string) => ssl.succeeds(['dgst', '-sha256', '-sigopt', 'rsa_padding_mode:pss',
        '-sigopt', `rsa_pss_saltlen:${saltlen}`, '-verify', rsa2048.pub, '-signature', sigFile, input]);
      expect(verifyWith('222', file(sig), msgFile)).toBe(true);
      expect(verifyWith('20', file(sig), msgFile)).toBe(false);
      expect(verifyWith('222', file(sig), file(Buffer.from('other')))).toBe(false);
      const flipped = Buffer.from(sig);
      flipped[100]! ^= 4;
      expect(verifyWith('auto', file(flipped), msgFile)).toBe(false);
    });

    it('odd modulus sizes work too (3072)', () => {
      const sig = sign('rsa-3072', rsa3072.privateKey, msg, { hashAlgorithm: 'sha2-384' });
      expect(ssl.succeeds(['dgst', '-sha384', '-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:-2',
        '-verify', rsa3072.pub, '-signature', file(sig), msgFile])).toBe(true);
    });
  });

  describe('PSS over a prehashed digest, verified by openssl pkeyutl', () => {
    it.each(HASHES)('%s', (hash) => {
      const digest = md(hash, msg);
      for (const [saltLength, expectLen] of [['auto', 256 - 2 - digestSize(hash)], ['hash', digestSize(hash)], [0, 0]] as const) {
        const sig = sign('rsa-2048', rsa2048.privateKey, digest, { hashAlgorithm: hash, prehashed: true, saltLength });
        expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', rsa2048.pub, '-in', file(digest), '-sigfile', file(sig),
          '-pkeyopt', 'rsa_padding_mode:pss', '-pkeyopt', `digest:${nodeDigestName(hash)}`, '-pkeyopt', `rsa_pss_saltlen:${expectLen}`])).toBe(true);
        // A prehashed signature is an ordinary signature of the message.
        expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { hashAlgorithm: hash, saltLength: 'auto' })).toBe(true);
        expect(verify('rsa-2048', rsa2048.publicKey, digest, sig, { hashAlgorithm: hash, prehashed: true, saltLength })).toBe(true);
      }
    });
  });

  it('verifies PSS signatures made by openssl, with the salt length detected or checked', () => {
    const sig = ssl.run(['dgst', '-sha256', '-sign', rsa2048.priv, '-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:32', msgFile]);
    const base: Partial<SignOptions> = { hashAlgorithm: 'sha2-256' };
    expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { ...base, saltLength: 'auto' })).toBe(true);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { ...base, saltLength: 'hash' })).toBe(true);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { ...base, saltLength: 32 })).toBe(true);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, sig, { ...base, saltLength: 20 })).toBe(false);

    const digest = md('sha2-512', msg);
    const pre = ssl.run(['pkeyutl', '-sign', '-inkey', rsa2048.priv, '-in', file(digest),
      '-pkeyopt', 'rsa_padding_mode:pss', '-pkeyopt', 'digest:sha512', '-pkeyopt', 'rsa_pss_saltlen:17']);
    expect(verify('rsa-2048', rsa2048.publicKey, digest, pre, { hashAlgorithm: 'sha2-512', prehashed: true })).toBe(true);
    expect(verify('rsa-2048', rsa2048.publicKey, digest, pre, { hashAlgorithm: 'sha2-512', prehashed: true, saltLength: 17 })).toBe(true);
    expect(verify('rsa-2048', rsa2048.publicKey, digest, pre, { hashAlgorithm: 'sha2-512', prehashed: true, saltLength: 'hash' })).toBe(false);
  });

  describe('PKCS#1 v1.5', () => {
    it.each(HASHES)('%s: openssl verifies ours, prehashed gives the same bytes, we verify openssl', (hash) => {
      const opts: Partial<SignOptions> = { hashAlgorithm: hash, signatureAlgorithm: 'pkcs1v15' };
      const sig = sign('rsa-2048', rsa2048.privateKey, msg, opts);
      expect(ssl.succeeds(['dgst', `-${nodeDigestName(hash)}`, '-verify', rsa2048.pub, '-signature', file(sig), msgFile])).toBe(true);
      const digest = md(hash, msg);
      const pre = sign('rsa-2048', rsa2048.privateKey, digest, { ...opts, prehashed: true });
      expect(pre.equals(sig)).toBe(true);
      expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', rsa2048.pub, '-in', file(digest), '-sigfile', file(pre),
        '-pkeyopt', 'rsa_padding_mode:pkcs1', '-pkeyopt', `digest:${nodeDigestName(hash)}`])).toBe(true);
      const theirs = ssl.run(['dgst', `-${nodeDigestName(hash)}`, '-sign', rsa2048.priv, msgFile]);
      expect(verify('rsa-2048', rsa2048.publicKey, msg, theirs, opts)).toBe(true);
      expect(verify('rsa-2048', rsa2048.publicKey, digest, theirs, { ...opts, prehashed: true })).toBe(true);
      expect(verify('rsa-2048', rsa2048.publicKey, digest, theirs, { ...opts, prehashed: true, hashAlgorithm: hash === 'sha1' ? 'sha2-256' : 'sha1' })).toBe(false);
    });

    it('hash_algorithm none pads the input with no DigestInfo (RFC 8017 section 9.2 without the OID)', () => {
      const raw = Buffer.from('exactly these bytes');
      const opts: Partial<SignOptions> = { hashAlgorithm: 'none', prehashed: true, signatureAlgorithm: 'pkcs1v15' };
      const sig = sign('rsa-2048', rsa2048.privateKey, raw, opts);
      // pkeyutl with no digest compares the padded block with the input as is.
      expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', rsa2048.pub, '-in', file(raw), '-sigfile', file(sig),
        '-pkeyopt', 'rsa_padding_mode:pkcs1'])).toBe(true);
      const theirs = ssl.run(['pkeyutl', '-sign', '-inkey', rsa2048.priv, '-in', file(raw), '-pkeyopt', 'rsa_padding_mode:pkcs1']);
      expect(theirs.equals(sig)).toBe(true);
      expect(verify('rsa-2048', rsa2048.publicKey, raw, sig, opts)).toBe(true);
      expect(verify('rsa-2048', rsa2048.publicKey, Buffer.from('exactly these bytez'), sig, opts)).toBe(false);
      expectInputError(() => sign('rsa-2048', rsa2048.privateKey, Buffer.alloc(246), opts), 'input', /too long/);
    });
  });

  it('answers false, not an error, for well-formed wrong signatures of any length', () => {
    const sig = sign('rsa-2048', rsa2048.privateKey, msg);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, sig.subarray(1))).toBe(false);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, Buffer.concat([Buffer.alloc(1), sig]))).toBe(false);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, Buffer.alloc(256, 0xff))).toBe(false);
    expect(verify('rsa-2048', rsa2048.publicKey, md('sha2-256', msg), Buffer.alloc(256, 0xff), { prehashed: true })).toBe(false);
    expect(verify('rsa-2048', rsa2048.publicKey, msg, Buffer.alloc(0))).toBe(false);
  });

  it('refuses bad options with errors naming the field', () => {
    const k = rsa2048.privateKey;
    expectInputError(() => sign('rsa-2048', k, msg, { hashAlgorithm: 'none' }), 'hash_algorithm', /prehashed=true and signature_algorithm=pkcs1v15/);
    expectInputError(() => sign('rsa-2048', k, msg, { hashAlgorithm: 'none', prehashed: true }), 'hash_algorithm');
    expectInputError(() => sign('rsa-2048', k, msg, { hashAlgorithm: 'md5' as never }), 'hash_algorithm');
    expectInputError(() => sign('rsa-2048', k, msg, { signatureAlgorithm: 'raw' as never }), 'signature_algorithm');
    expectInputError(() => sign('rsa-2048', k, msg, { saltLength: 223 }), 'salt_length', /at most 222/);
    expectInputError(() => verify('rsa-2048', rsa2048.publicKey, msg, Buffer.alloc(256), { saltLength: 500 }), 'salt_length');
    expectInputError(() => sign('rsa-2048', k, msg, { saltLength: -3 }), 'salt_length');
    expectInputError(() => sign('rsa-2048', k, Buffer.alloc(20), { prehashed: true }), 'input', /32-byte sha2-256 digest/);
    expectInputError(() => sign('rsa-2048', k, msg, { marshaling: 'pem' as never }), 'marshaling_algorithm');
  });

  it('refuses a key that does not match the type as a server fault', () => {
    expect(() => sign('rsa-3072', rsa2048.privateKey, msg)).toThrow(TypeError);
    expect(() => sign('ecdsa-p256', rsa2048.privateKey, msg)).toThrow(TypeError);
  });
});

describe.each([
  ['ecdsa-p256', 'P-256', 32, 'sha2-256'],
  ['ecdsa-p384', 'P-384', 48, 'sha2-384'],
  ['ecdsa-p521', 'P-521', 66, 'sha2-512'],
] as const)('%s', (type: EcdsaKeyType, curve, size, hash) => {
  const keys = pair(type, generateKeyPairSync('ec', { namedCurve: curve }));
  const msg = Buffer.from(`sign me, ${curve}`);
  const msgFile = file(msg);

  it('asn1 signatures verify with openssl dgst, for several hashes', () => {
    for (const h of ['sha1', 'sha2-256', 'sha2-512', 'sha3-384'] as const) {
      const sig = sign(type, keys.privateKey, msg, { hashAlgorithm: h });
      expect(ssl.succeeds(['dgst', `-${nodeDigestName(h)}`, '-verify', keys.pub, '-signature', file(sig), msgFile])).toBe(true);
      expect(verify(type, keys.publicKey, msg, sig, { hashAlgorithm: h })).toBe(true);
    }
  });

  it('jws signatures are r ‖ s at the curve width and mean the same thing', () => {
    const sig = sign(type, keys.privateKey, msg, { hashAlgorithm: hash, marshaling: 'jws' });
    expect(sig).toHaveLength(2 * size);
    expect(verify(type, keys.publicKey, msg, sig, { hashAlgorithm: hash, marshaling: 'jws' })).toBe(true);
    expect(verify(type, keys.publicKey, Buffer.from('x'), sig, { hashAlgorithm: hash, marshaling: 'jws' })).toBe(false);
    expect(encodeSignature(sig, 'jws')).not.toMatch(/[+/=]/);
  });

  it('prehashed: signs the digest itself, openssl pkeyutl agrees both ways', () => {
    const digest = md(hash, msg);
    const sig = sign(type, keys.privateKey, digest, { hashAlgorithm: hash, prehashed: true });
    expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', keys.pub, '-in', file(digest), '-sigfile', file(sig)])).toBe(true);
    expect(verify(type, keys.publicKey, msg, sig, { hashAlgorithm: hash })).toBe(true);
    const theirs = ssl.run(['pkeyutl', '-sign', '-inkey', keys.priv, '-in', file(digest)]);
    expect(verify(type, keys.publicKey, digest, theirs, { hashAlgorithm: hash, prehashed: true })).toBe(true);
    expect(verify(type, keys.publicKey, md(hash, Buffer.from('no')), theirs, { hashAlgorithm: hash, prehashed: true })).toBe(false);
    const jws = sign(type, keys.privateKey, digest, { prehashed: true, marshaling: 'jws' });
    expect(jws).toHaveLength(2 * size);
    expect(verify(type, keys.publicKey, digest, jws, { prehashed: true, marshaling: 'jws' })).toBe(true);
    const none = sign(type, keys.privateKey, digest, { hashAlgorithm: 'none', prehashed: true, signatureAlgorithm: 'pkcs1v15' });
    expect(verify(type, keys.publicKey, digest, none, { prehashed: true })).toBe(true);
  });

  it('openssl refuses our signature over another message (the oracle can say no)', () => {
    const sig = sign(type, keys.privateKey, msg, { hashAlgorithm: hash });
    expect(ssl.succeeds(['dgst', `-${nodeDigestName(hash)}`, '-verify', keys.pub, '-signature', file(sig), file(Buffer.from('x'))])).toBe(false);
    const digest = md(hash, Buffer.from('x'));
    expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', keys.pub, '-in', file(digest), '-sigfile', file(sig)])).toBe(false);
  });

  it('verifies signatures openssl made over the message', () => {
    const theirs = ssl.run(['dgst', `-${nodeDigestName(hash)}`, '-sign', keys.priv, msgFile]);
    expect(verify(type, keys.publicKey, msg, theirs, { hashAlgorithm: hash })).toBe(true);
    expect(verify(type, keys.publicKey, msg, theirs, { hashAlgorithm: 'sha1' })).toBe(false);
  });

  it('tells malformed asn1 (an error) from a wrong signature (false)', () => {
    const sig = sign(type, keys.privateKey, msg);
    expectInputError(() => verify(type, keys.publicKey, msg, Buffer.concat([sig, Buffer.from([0])])), 'signature', /extra data/);
    expectInputError(() => verify(type, keys.publicKey, msg, Buffer.from('not der')), 'signature', /invalid/);
    expectInputError(() => verify(type, keys.publicKey, msg, Buffer.from('3003020101', 'hex')), 'signature', /invalid/);
    const wrong = Buffer.from(sig);
    wrong[wrong.length - 1]! ^= 1;
    expect(verify(type, keys.publicKey, msg, wrong)).toBe(false);
    expect(verify(type, keys.publicKey, msg, Buffer.alloc(2 * size), { marshaling: 'jws' })).toBe(false);
    expect(verify(type, keys.publicKey, msg, Buffer.alloc(3), { marshaling: 'jws' })).toBe(false);
  });
});

describe('ed25519', () => {
  const keys = pair('ed25519', generateKeyPairSync('ed25519'));
  const msg = Buffer.from('sign me, Edwards');

  it('signs the raw input (RFC 8032 test 1)', () => {
    const der = Buffer.from('302e020100300506032b6570042204209d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
    const sig = sign('ed25519', createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }), Buffer.alloc(0));
    expect(sig.toString('hex')).toBe('e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b');
  });

  it('openssl pkeyutl -rawin agrees both ways; hash_algorithm and prehashed do not change anything', () => {
    const sig = sign('ed25519', keys.privateKey, msg, { hashAlgorithm: 'sha2-384', prehashed: true });
    expect(sig.equals(sign('ed25519', keys.privateKey, msg))).toBe(true);
    expect(ssl.succeeds(['pkeyutl', '-verify', '-pubin', '-inkey', keys.pub, '-rawin', '-in', file(msg), '-sigfile', file(sig)])).toBe(true);
    const theirs = ssl.run(['pkeyutl', '-sign', '-inkey', keys.priv, '-rawin', '-in', file(msg)]);
    expect(verify('ed25519', keys.publicKey, msg, theirs)).toBe(true);
    expect(verify('ed25519', keys.publicKey, Buffer.from('tampered'), theirs)).toBe(false);
    expect(verify('ed25519', keys.publicKey, msg, theirs.subarray(1))).toBe(false);
  });

  it('refuses sha2-512, which would mean Ed25519ph', () => {
    expectInputError(() => sign('ed25519', keys.privateKey, msg, { hashAlgorithm: 'sha2-512' }), 'hash_algorithm', /Ed25519ph/);
  });
});

describe('option parsing and signature text', () => {
  it('parses salt_length as Vault does, including Go meanings of 0 and -1', () => {
    expect(parseSaltLength('auto')).toBe('auto');
    expect(parseSaltLength('HASH')).toBe('hash');
    expect(parseSaltLength('0')).toBe('auto');
    expect(parseSaltLength('-1')).toBe('hash');
    expect(parseSaltLength('32')).toBe(32);
    expect(parseSaltLength(64)).toBe(64);
    expectInputError(() => parseSaltLength('-2'), 'salt_length');
    expectInputError(() => parseSaltLength('lots'), 'salt_length', /neither 'auto', 'hash', nor an int/);
  });

  it('encodes std base64 for asn1 and unpadded base64url for jws, and rejects bad text', () => {
    const sig = Buffer.from([0xfb, 0xff, 0xfe, 0x01]);
    expect(encodeSignature(sig, 'asn1')).toBe('+//+AQ==');
    expect(encodeSignature(sig, 'jws')).toBe('-__-AQ');
    expect(decodeSignature('+//+AQ==', 'asn1').equals(sig)).toBe(true);
    expect(decodeSignature('-__-AQ', 'jws').equals(sig)).toBe(true);
    expectInputError(() => decodeSignature('-__-AQ', 'asn1'), 'signature', /invalid base64/);
    expectInputError(() => decodeSignature('+//+AQ==', 'jws'), 'signature');
    expectInputError(() => decodeSignature('abc', 'asn1'), 'signature');
  });

  it('signs and verifies with the defaults (pss, sha2-256, auto salt)', () => {
    const all: [AsymmetricKeyType, KeyObject, KeyObject][] = [
      ['rsa-2048', rsa2048.privateKey, rsa2048.publicKey],
      ['rsa-3072', rsa3072.privateKey, rsa3072.publicKey],
    ];
    for (const [type, priv, pub] of all) {
      const input = randomBytes(10);
      expect(verify(type, pub, input, sign(type, priv, input))).toBe(true);
    }
  });
});

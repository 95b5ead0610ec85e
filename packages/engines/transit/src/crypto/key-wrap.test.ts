import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { CryptoInputError } from './errors';
import {
  WRAP_HASHES, aesKeyUnwrapPad, aesKeyWrapPad, parseWrapHash, rsaOaepDecrypt, rsaOaepEncrypt, unwrapImport, wrapForImport,
} from './key-wrap';
import { parseImportedPrivateKey } from './pem';
import { OpensslScratch } from './test-support/openssl';
import { thrown } from './test-support/errors';

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex');


const ssl = new OpensslScratch();
afterAll(() => ssl.cleanup());
let seq = 0;
const file = (data: Buffer | string) => ssl.write(`w${seq++}`, data);

describe('AES key wrap with padding (RFC 5649)', () => {
  const kek = hex('5840df6e29b02af1 ab493b705bf16ea1 ae8338f4dcc176a8');

  it('matches the RFC 5649 section 6 examples', () => {
    expect(aesKeyWrapPad(kek, hex('c37b7e6492584340 bed1220780894115 5068f738')).toString('hex'))
      .toBe('138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a');
    expect(aesKeyWrapPad(kek, hex('466f7250617369')).toString('hex')).toBe('afbeb0f07dfbf5419200f2ccb50bb24f');
    expect(aesKeyUnwrapPad(kek, hex('afbeb0f07dfbf5419200f2ccb50bb24f')).toString('hex')).toBe('466f7250617369');
  });

  it.each([1, 7, 8, 9, 16, 32, 1217])('agrees with openssl enc -id-aes256-wrap-pad both ways (%i bytes)', (len) => {
    const key = randomBytes(32);
    const pt = randomBytes(len);
    const ours = aesKeyWrapPad(key, pt);
    const theirs = ssl.run(['enc', '-id-aes256-wrap-pad', '-K', key.toString('hex'), '-iv', 'A65959A6', '-in', file(pt)]);
    expect(ours.equals(theirs)).toBe(true);
    const back = ssl.run(['enc', '-d', '-id-aes256-wrap-pad', '-K', key.toString('hex'), '-iv', 'A65959A6', '-in', file(ours)]);
    expect(back.equals(pt)).toBe(true);
    expect(aesKeyUnwrapPad(key, theirs).equals(pt)).toBe(true);
  });

  it('refuses tampered, truncated or wrongly keyed input as a ciphertext error', () => {
    const key = randomBytes(32);
    const wrapped = aesKeyWrapPad(key, randomBytes(32));
    const bad = Buffer.from(wrapped);
    bad[3]! ^= 1;
    for (const [k, w] of [[key, bad], [randomBytes(32), wrapped], [key, wrapped.subarray(0, 24)], [key, wrapped.subarray(0, 8)]] as const) {
      const err = thrown(() => aesKeyUnwrapPad(k, w));
      expect(err).toBeInstanceOf(CryptoInputError);
      expect((err as CryptoInputError).field).toBe('ciphertext');
    }
    expect(() => aesKeyWrapPad(key, Buffer.alloc(0))).toThrow(CryptoInputError);
  });
});

describe('RSA-OAEP', () => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pub = ssl.write('oaep.pub.pem', keys.publicKey.export({ format: 'pem', type: 'spki' }));
  const priv = ssl.write('oaep.key.pem', keys.privateKey.export({ format: 'pem', type: 'pkcs8' }));

  it.each(WRAP_HASHES)('%s for OAEP and MGF1, empty label: openssl and we agree both ways', (h) => {
    const secret = randomBytes(32);
    const md = h.toLowerCase();
    const theirs = ssl.run(['pkeyutl', '-encrypt', '-pubin', '-inkey', pub, '-in', file(secret),
      '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', `rsa_oaep_md:${md}`, '-pkeyopt', `rsa_mgf1_md:${md}`]);
    expect(rsaOaepDecrypt(keys.privateKey, theirs, h).equals(secret)).toBe(true);
    const ours = rsaOaepEncrypt(keys.publicKey, secret, h);
    const back = ssl.run(['pkeyutl', '-decrypt', '-inkey', priv, '-in', file(ours),
      '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', `rsa_oaep_md:${md}`, '-pkeyopt', `rsa_mgf1_md:${md}`]);
    expect(back.equals(secret)).toBe(true);
  });

  it('fails closed with one message when the hash does not match', () => {
    const ct = rsaOaepEncrypt(keys.publicKey, randomBytes(32), 'SHA256');
    expect(() => rsaOaepDecrypt(keys.privateKey, ct, 'SHA1')).toThrow(/RSA-OAEP decryption failed/);
    expect(() => rsaOaepDecrypt(keys.privateKey, ct.subarray(1), 'SHA256')).toThrow(CryptoInputError);
  });

  it('parses hash_function names', () => {
    expect(parseWrapHash('sha384')).toBe('SHA384');
    expect(() => parseWrapHash('MD5')).toThrow(/hash_function/);
  });
});

describe('import ciphertext: RSA-OAEP(ephemeral AES key) ‖ KWP(ephemeral, target)', () => {
  const wrapping = generateKeyPairSync('rsa', { modulusLength: 4096 });
  const wrapPub = ssl.write('wrap.pub.pem', wrapping.publicKey.export({ format: 'pem', type: 'spki' }));
  const wrapPriv = ssl.write('wrap.key.pem', wrapping.privateKey.export({ format: 'pem', type: 'pkcs8' }));

  it('unwraps a blob built with the openssl steps of the manual BYOK procedure', () => {
    const keyFile = ssl.path('target.pem');
    const targetFile = ssl.path('target.der');
    ssl.run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
    ssl.run(['pkcs8', '-topk8', '-nocrypt', '-in', keyFile, '-outform', 'DER', '-out', targetFile]);
    const target = ssl.read('target.der');
    const ephemeral = ssl.run(['rand', '32']);
    const wrappedTarget = ssl.run(['enc', '-id-aes256-wrap-pad', '-iv', 'A65959A6', '-K', ephemeral.toString('hex'), '-in', targetFile]);
    const wrappedKey = ssl.run(['pkeyutl', '-encrypt', '-pubin', '-inkey', wrapPub, '-in', file(ephemeral),
      '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', 'rsa_oaep_md:sha256', '-pkeyopt', 'rsa_mgf1_md:sha256']);
    expect(wrappedKey).toHaveLength(512);
    const blob = Buffer.concat([wrappedKey, wrappedTarget]);

    const unwrapped = unwrapImport(wrapping.privateKey, blob, 'SHA256');
    expect(unwrapped.equals(target)).toBe(true);
    const parsed = parseImportedPrivateKey('ecdsa-p256', unwrapped);
    expect(parsed.privateKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
  });

  it('builds blobs that openssl takes apart again (byok-export direction), for each hash', () => {
    for (const h of WRAP_HASHES) {
      const target = randomBytes(32);
      const blob = wrapForImport(wrapping.publicKey, target, h);
      const md = h.toLowerCase();
      const ephemeral = ssl.run(['pkeyutl', '-decrypt', '-inkey', wrapPriv, '-in', file(blob.subarray(0, 512)),
        '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', `rsa_oaep_md:${md}`, '-pkeyopt', `rsa_mgf1_md:${md}`]);
      expect(ephemeral).toHaveLength(32);
      const back = ssl.run(['enc', '-d', '-id-aes256-wrap-pad', '-iv', 'A65959A6', '-K', ephemeral.toString('hex'), '-in', file(blob.subarray(512))]);
      expect(back.equals(target)).toBe(true);
      expect(unwrapImport(wrapping.privateKey, blob, h).equals(target)).toBe(true);
    }
  });

  it('refuses short blobs, the wrong hash and damaged key material as ciphertext errors', () => {
    const blob = wrapForImport(wrapping.publicKey, randomBytes(32));
    expect(() => unwrapImport(wrapping.privateKey, blob.subarray(0, 512))).toThrow(/ciphertext too short/);
    expect(() => unwrapImport(wrapping.privateKey, blob, 'SHA1')).toThrow(CryptoInputError);
    const damaged = Buffer.from(blob);
    damaged[damaged.length - 1]! ^= 1;
    expect(() => unwrapImport(wrapping.privateKey, damaged)).toThrow(/unwrap/);
  });
});

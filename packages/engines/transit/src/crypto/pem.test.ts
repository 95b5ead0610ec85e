import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { AsymmetricKeyType } from './key-types';
import {
  checkImportedSymmetricKey, ed25519PrivateKeyFromRaw, ed25519PublicKeyFromRaw, ed25519RawPrivateKey, ed25519RawPublicKey,
  exportPrivateKey, exportPublicKey, exportSymmetricKey, formatPublicKey, keysMatch,
  parseImportedPrivateKey, parsePublicKeyPem, privateKeyFromDer,
} from './pem';
import { sign, verify } from './signing';
import { OpensslScratch } from './test-support/openssl';
import { expectInputError, thrown } from './test-support/errors';



const ssl = new OpensslScratch();
afterAll(() => ssl.cleanup());
let seq = 0;
const file = (data: Buffer | string) => ssl.write(`p${seq++}`, data);

/** A PKCS#8 DER private key made by openssl itself, as an importer would make it. */
function opensslPkcs8(genpkeyArgs: string[]): Buffer {
  const pem = ssl.path(`gen${seq++}.pem`);
  ssl.run(['genpkey', ...genpkeyArgs, '-out', pem]);
  return ssl.run(['pkcs8', '-topk8', '-nocrypt', '-in', pem, '-outform', 'DER']);
}

const OPENSSL_KEYS: [AsymmetricKeyType, string[]][] = [
  ['ed25519', ['-algorithm', 'ED25519']],
  ['ecdsa-p256', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']],
  ['ecdsa-p384', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384']],
  ['ecdsa-p521', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521']],
  ['rsa-2048', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']],
];
const generated = new Map(OPENSSL_KEYS.map(([type, args]) => [type, opensslPkcs8(args)]));
const der = (type: AsymmetricKeyType) => generated.get(type)!;

describe('export formats', () => {
  it('ECDSA private keys: SEC1 "EC PRIVATE KEY" PEM without a trailing newline, which openssl reads back', () => {
    const { privateKey } = parseImportedPrivateKey('ecdsa-p384', der('ecdsa-p384'));
    const pem = exportPrivateKey('ecdsa-p384', privateKey);
    expect(pem.startsWith('-----BEGIN EC PRIVATE KEY-----\n')).toBe(true);
    expect(pem.endsWith('-----END EC PRIVATE KEY-----')).toBe(true);
    const f = file(pem);
    expect(ssl.succeeds(['ec', '-in', f, '-check', '-noout'])).toBe(true);
    const theirPub = ssl.run(['pkey', '-in', f, '-pubout', '-outform', 'DER']);
    expect(theirPub.equals(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }))).toBe(true);
  });

  it('RSA private keys: PKCS#1 "RSA PRIVATE KEY" PEM ending in a newline, which openssl checks', () => {
    const { privateKey } = parseImportedPrivateKey('rsa-2048', der('rsa-2048'));
    const pem = exportPrivateKey('rsa-2048', privateKey);
    expect(pem.startsWith('-----BEGIN RSA PRIVATE KEY-----\n')).toBe(true);
    expect(pem.endsWith('-----END RSA PRIVATE KEY-----\n')).toBe(true);
    expect(ssl.succeeds(['rsa', '-in', file(pem), '-check', '-noout'])).toBe(true);
  });

  it('ed25519 private keys: base64 of seed ‖ public (64 bytes), matching what openssl derives', () => {
    const { privateKey } = parseImportedPrivateKey('ed25519', der('ed25519'));
    const raw = Buffer.from(exportPrivateKey('ed25519', privateKey), 'base64');
    expect(raw).toHaveLength(64);
    const theirPub = ssl.run(['pkey', '-inform', 'DER', '-in', file(der('ed25519')), '-pubout', '-outform', 'DER']);
    expect(raw.subarray(32).equals(theirPub.subarray(theirPub.length - 32))).toBe(true);
    expect(raw.subarray(0, 32).equals(der('ed25519').subarray(der('ed25519').length - 32))).toBe(true);
    const again = ed25519PrivateKeyFromRaw(raw);
    expect(ed25519RawPrivateKey(again).equals(raw)).toBe(true);
    expect(ed25519RawPrivateKey(ed25519PrivateKeyFromRaw(raw.subarray(0, 32))).equals(raw)).toBe(true);
    const forged = Buffer.concat([raw.subarray(0, 32), randomBytes(32)]);
    expectInputError(() => ed25519PrivateKeyFromRaw(forged), 'key', /public half/);
    expectInputError(() => ed25519PrivateKeyFromRaw(raw.subarray(0, 31)), 'key');
  });

  it('public keys: SPKI PEM (trimmed for ECDSA on export, newline-terminated in key reads and for RSA); raw base64 for ed25519', () => {
    const ec = parseImportedPrivateKey('ecdsa-p256', der('ecdsa-p256')).publicKey;
    const rsa = parseImportedPrivateKey('rsa-2048', der('rsa-2048')).publicKey;
    const ed = parseImportedPrivateKey('ed25519', der('ed25519')).publicKey;

    const ecExport = exportPublicKey('ecdsa-p256', ec);
    expect(ecExport.startsWith('-----BEGIN PUBLIC KEY-----\n') && ecExport.endsWith('-----END PUBLIC KEY-----')).toBe(true);
    expect(formatPublicKey('ecdsa-p256', ec)).toBe(`${ecExport}\n`);
    expect(exportPublicKey('rsa-2048', rsa).endsWith('-----END PUBLIC KEY-----\n')).toBe(true);
    expect(formatPublicKey('rsa-2048', rsa)).toBe(exportPublicKey('rsa-2048', rsa));
    for (const pem of [ecExport, exportPublicKey('rsa-2048', rsa)]) {
      expect(ssl.succeeds(['pkey', '-pubin', '-in', file(pem), '-noout'])).toBe(true);
    }
    const edText = exportPublicKey('ed25519', ed);
    expect(Buffer.from(edText, 'base64')).toHaveLength(32);
    expect(formatPublicKey('ed25519', ed)).toBe(edText);
    expect(ed25519RawPublicKey(ed25519PublicKeyFromRaw(Buffer.from(edText, 'base64'))).toString('base64')).toBe(edText);
  });

  it('symmetric keys: plain base64', () => {
    expect(exportSymmetricKey(Buffer.from([0xfb, 0xff]))).toBe('+/8=');
  });
});

describe('parseImportedPrivateKey', () => {
  it.each(OPENSSL_KEYS.map(([t]) => t))('takes openssl PKCS#8 for %s, and the key signs', (type) => {
    const parsed = parseImportedPrivateKey(type, der(type));
    const msg = Buffer.from('imported');
    expect(verify(type, parsed.publicKey, msg, sign(type, parsed.privateKey, msg))).toBe(true);
    expect(privateKeyFromDer(parsed.privateKeyDer).equals(parsed.privateKey)).toBe(true);
  });

  it.each([
    ['rsa-2048', 'ecdsa-p256', /holds an RSA key \(2048 bits\), which does not match key type ecdsa-p256/],
    ['ecdsa-p384', 'ecdsa-p256', /EC key on curve secp384r1/],
    ['ecdsa-p256', 'ed25519', /does not match key type ed25519/],
    ['ed25519', 'rsa-2048', /an ed25519 key/],
    ['rsa-2048', 'rsa-4096', /does not match key type rsa-4096/],
  ] as const)('refuses a %s key imported as %s', (actual, claimed, message) => {
    expectInputError(() => parseImportedPrivateKey(claimed, der(actual)), 'ciphertext', message);
  });

  it('refuses bytes that are not PKCS#8, including a PKCS#1 RSA key', () => {
    expectInputError(() => parseImportedPrivateKey('rsa-2048', randomBytes(100)), 'ciphertext', /PKCS#8/);
    const pkcs1 = privateKeyFromDer(der('rsa-2048')).export({ format: 'der', type: 'pkcs1' });
    expectInputError(() => parseImportedPrivateKey('rsa-2048', pkcs1), 'ciphertext');
  });

  it('takes RSA-PSS PKCS#8 (openssl genpkey -algorithm RSA-PSS) as a plain RSA key', () => {
    const pss = opensslPkcs8(['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048']);
    const parsed = parseImportedPrivateKey('rsa-2048', pss);
    expect(parsed.privateKey.asymmetricKeyType).toBe('rsa');
    const modulus = ssl.run(['rsa', '-inform', 'DER', '-in', file(pss), '-modulus', '-noout']).toString().trim();
    const n = Buffer.from(parsed.publicKey.export({ format: 'jwk' }).n!, 'base64url').toString('hex').toUpperCase();
    expect(modulus).toBe(`Modulus=${n}`);
    const msg = Buffer.from('pss key');
    const sig = sign('rsa-2048', parsed.privateKey, msg, { signatureAlgorithm: 'pkcs1v15' });
    const pubFile = file(exportPublicKey('rsa-2048', parsed.publicKey));
    expect(ssl.succeeds(['dgst', '-sha256', '-verify', pubFile, '-signature', file(sig), file(msg)])).toBe(true);
  });

  it('works for node-generated rsa-3072 keys too', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 3072 });
    const parsed = parseImportedPrivateKey('rsa-3072', privateKey.export({ format: 'der', type: 'pkcs8' }));
    expect(parsed.publicKey.asymmetricKeyDetails?.modulusLength).toBe(3072);
  });
});

describe('parsePublicKeyPem', () => {
  it('takes SPKI PEM from openssl, of the right type', () => {
    const pem = ssl.run(['pkey', '-inform', 'DER', '-in', file(der('ecdsa-p521')), '-pubout']).toString();
    const key = parsePublicKeyPem('ecdsa-p521', pem);
    expect(keysMatch(privateKeyFromDer(der('ecdsa-p521')), key)).toBe(true);
    expect(keysMatch(privateKeyFromDer(der('ecdsa-p256')), parsePublicKeyPem('ecdsa-p256',
      exportPublicKey('ecdsa-p256', createPublicKey(privateKeyFromDer(der('ecdsa-p256'))))))).toBe(true);
    expectInputError(() => parsePublicKeyPem('ecdsa-p384', pem), 'public_key', /secp521r1/);
  });

  it('refuses other PEM blocks and non-PEM text clearly', () => {
    const rsaPub = createPublicKey(privateKeyFromDer(der('rsa-2048')));
    const pkcs1 = rsaPub.export({ format: 'pem', type: 'pkcs1' }) as string;
    expectInputError(() => parsePublicKeyPem('rsa-2048', pkcs1), 'public_key', /RSA PUBLIC KEY/);
    expectInputError(() => parsePublicKeyPem('rsa-2048', 'MIIBIjANBg'), 'public_key', /not in PEM format/);
    expectInputError(() => parsePublicKeyPem('rsa-2048', '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n'), 'public_key');
  });

  it('tells whether a private key belongs to a public key', () => {
    const a = privateKeyFromDer(der('ecdsa-p256'));
    const b = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(keysMatch(a, createPublicKey(a))).toBe(true);
    expect(keysMatch(a, b.publicKey)).toBe(false);
  });
});

describe('checkImportedSymmetricKey', () => {
  it('wants the exact size for AEAD types and 32 to 512 bytes for hmac', () => {
    expect(checkImportedSymmetricKey('aes128-gcm96', randomBytes(16))).toHaveLength(16);
    expect(checkImportedSymmetricKey('chacha20-poly1305', randomBytes(32))).toHaveLength(32);
    expect(checkImportedSymmetricKey('hmac', randomBytes(512))).toHaveLength(512);
    expectInputError(() => checkImportedSymmetricKey('aes256-gcm96', randomBytes(16)), 'ciphertext', /invalid key size 16 bytes for key type aes256-gcm96/);
    expectInputError(() => checkImportedSymmetricKey('hmac', randomBytes(31)), 'ciphertext');
    expectInputError(() => checkImportedSymmetricKey('rsa-2048', randomBytes(32)), 'type');
  });
});

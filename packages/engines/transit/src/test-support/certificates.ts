import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto, type KeyObject } from 'node:crypto';

/*
 * @peculiar/x509 is typed against the DOM's WebCrypto types and node:crypto against its own;
 * they are the same objects at run time, so the helpers below cast between the two.
 */
type X509Crypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.create>[1]>;
type X509KeyPair = x509.X509CertificateCreateSelfSignedParams['keys'];
type X509PrivateKey = x509.X509CertificateCreateWithKeyParams['signingKey'];

export const x509Crypto = webcrypto as unknown as X509Crypto;
export const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' };

export function spkiBytes(key: KeyObject): Uint8Array<ArrayBuffer> {
  return new Uint8Array(key.export({ format: 'der', type: 'spki' }));
}

export interface TestCa {
  cert: x509.X509Certificate;
  key: X509PrivateKey;
}

export async function ecKeyPair(): Promise<X509KeyPair> {
  return await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']) as unknown as X509KeyPair;
}

export async function makeCa(name = 'CN=Test CA'): Promise<TestCa> {
  const keys = await ecKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name, keys, signingAlgorithm: ECDSA_SHA256, extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
  }, x509Crypto);
  return { cert, key: keys.privateKey };
}

/** A certificate for `publicKey` issued by `ca`; a CA certificate when `isCa`. */
export async function issue(ca: TestCa, publicKey: KeyObject, options: { subject?: string; isCa?: boolean } = {}): Promise<x509.X509Certificate> {
  return x509.X509CertificateGenerator.create({
    subject: options.subject ?? 'CN=leaf', issuer: ca.cert.subject, publicKey: spkiBytes(publicKey), signingKey: ca.key,
    signingAlgorithm: ECDSA_SHA256,
    extensions: options.isCa ? [new x509.BasicConstraintsExtension(true, undefined, true)] : [],
  }, x509Crypto);
}

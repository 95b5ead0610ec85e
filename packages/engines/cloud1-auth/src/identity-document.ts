/**
 * Verification of the instance identity document a `vm` login presents, in either form:
 * PKCS#7 SignedData that encapsulates the document (verified with pkijs), or the document and
 * its base64 RSA SHA-256 signature (verified with node:crypto).
 */
import { verify as verifySignature, webcrypto, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import type * as Pkijs from 'pkijs';
import { BadRequestError } from '@strongroom/core';
import type { VerifyingCertificate } from './certificates';

/** The fields of the document this method uses; the provider's names. */
export interface IdentityDocument {
  accountId: string;
  instanceId: string;
  region: string;
  imageId: string;
  pendingTime: string;
}

type EngineCrypto = ConstructorParameters<typeof Pkijs.CryptoEngine>[0]['crypto'];

// pkijs is loaded for the first PKCS#7 document, not when a server starts.
let loaded: { pkijs: typeof Pkijs; engine: Pkijs.CryptoEngine } | undefined;
function pkijsWithEngine(): { pkijs: typeof Pkijs; engine: Pkijs.CryptoEngine } {
  if (!loaded) {
    const pkijs = require('pkijs') as typeof Pkijs;
    // pkijs types its engine with the DOM's WebCrypto, which is Node's under another name.
    loaded = { pkijs, engine: new pkijs.CryptoEngine({ name: 'strongroom-cloud1-auth', crypto: webcrypto as unknown as EngineCrypto }) };
  }
  return loaded;
}

const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';

function decodeBase64(field: string, value: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    throw new BadRequestError(`invalid value for "${field}": expected base64`);
  }
  return Buffer.from(compact, 'base64');
}

function toArrayBuffer(buf: Buffer): ArrayBuffer {
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
}

/** Parses and checks the document's JSON; the fields named here are required. */
export function parseDocument(field: string, bytes: Buffer): IdentityDocument {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new BadRequestError(`invalid value for "${field}": the identity document is not JSON`);
  }
  const doc = json as Record<string, unknown>;
  const text = (name: string): string => {
    const v = doc[name];
    if (typeof v !== 'string' || v === '') throw new BadRequestError(`invalid value for "${field}": the identity document has no "${name}"`);
    return v;
  };
  const pendingTime = text('pendingTime');
  if (Number.isNaN(Date.parse(pendingTime))) throw new BadRequestError(`invalid value for "${field}": the identity document's "pendingTime" is not a time`);
  return { accountId: text('accountId'), instanceId: text('instanceId'), region: text('region'), imageId: text('imageId'), pendingTime };
}

/** The document inside a PKCS#7 signature, once one of `certificates` verifies it. */
export async function documentFromPkcs7(pkcs7: string, certificates: readonly VerifyingCertificate[]): Promise<IdentityDocument> {
  const der = decodeBase64('pkcs7', pkcs7);
  const { pkijs, engine } = pkijsWithEngine();
  let signedData: Pkijs.SignedData;
  try {
    const asn = asn1js.fromBER(toArrayBuffer(der));
    if (asn.offset === -1) throw new Error(asn.result.error);
    const info = new pkijs.ContentInfo({ schema: asn.result });
    if (info.contentType !== OID_SIGNED_DATA) throw new Error('not SignedData');
    signedData = new pkijs.SignedData({ schema: info.content });
  } catch (err) {
    throw new BadRequestError(`invalid value for "pkcs7": not a PKCS#7 signature (${(err as Error).message})`);
  }
  const content = signedData.encapContentInfo.eContent;
  if (!content) throw new BadRequestError('invalid value for "pkcs7": the signature encapsulates no document');
  const documentBytes = Buffer.from(content.getValue());
  const candidates = certificates.filter((c) => c.type === 'pkcs7');
  for (const candidate of candidates) {
    try {
      const cert = pkijs.Certificate.fromBER(new X509Certificate(candidate.pem).raw);
      // The provider's signatures embed no certificate: the verifier brings its own.
      signedData.certificates = [cert];
      const ok = await signedData.verify({ signer: 0, checkChain: false }, engine);
      if (ok) return parseDocument('pkcs7', documentBytes);
    } catch {
      // Not this certificate (wrong issuer, wrong key): try the next one.
    }
  }
  throw new BadRequestError(
    `invalid value for "pkcs7": no registered pkcs7 certificate verifies the signature (${candidates.length} tried); `
    + 'register the provider\'s certificate with config/certificate',
  );
}

/** The document of an identity/signature pair, once one of `certificates` verifies the signature. */
export function documentFromSignature(identity: string, signature: string, certificates: readonly VerifyingCertificate[]): IdentityDocument {
  const documentBytes = decodeBase64('identity', identity);
  const signatureBytes = decodeBase64('signature', signature);
  const candidates = certificates.filter((c) => c.type === 'identity');
  for (const candidate of candidates) {
    const key = new X509Certificate(candidate.pem).publicKey;
    if (verifySignature('sha256', documentBytes, key, signatureBytes)) return parseDocument('identity', documentBytes);
  }
  throw new BadRequestError(
    `invalid value for "signature": no registered identity certificate verifies the document's signature (${candidates.length} tried); `
    + 'register the provider\'s certificate with config/certificate',
  );
}

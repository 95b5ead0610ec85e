/**
 * Certificates that verify instance identity documents: the built-in set plus those registered
 * under config/certificate. `pkcs7` certificates verify PKCS#7 SignedData (the `pkcs7` and
 * `rsa2048` metadata endpoints); `identity` certificates verify the RSA signature of a
 * `document`/`signature` pair.
 */
import { X509Certificate } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';

export type CertificateType = 'pkcs7' | 'identity';

export interface VerifyingCertificate {
  name: string;
  type: CertificateType;
  pem: string;
}

/**
 * The provider's published public certificates.
 *
 * Deliberately empty. The provider publishes one DSA (pkcs7), one RSA (signature) and one
 * RSA-2048 (rsa2048) certificate per region at
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/regions-certs.html. This code was written
 * without network access; the only copies within reach were truncated search excerpts of that
 * page, so no certificate could be confirmed byte for byte, and an unconfirmed certificate is
 * worse than none (it either never verifies or trusts the wrong key). Until someone adds them
 * from that page (noting the region and retrieval date of each), operators register the
 * certificates of their regions with config/certificate. Note also that the published `pkcs7`
 * certificates are DSA with SHA-1, which the WebCrypto engine used for PKCS#7 here cannot verify;
 * the `rsa2048` endpoint (RSA with SHA-256) is the flow that works, as in Vault since 1.12.
 */
export const BUILT_IN_CERTIFICATES: readonly VerifyingCertificate[] = [];

const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

function derToPem(der: Buffer): string {
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
}

/**
 * Reads `cloud1_public_cert` as operators have it: a PEM certificate, the same base64 encoded,
 * or base64 DER. Answers the certificate as PEM, refusing anything that is not an X.509
 * certificate with an RSA key (what the signatures checked here use).
 */
export function parseCertificateInput(field: string, input: string): string {
  const text = input.trim();
  let pem: string | undefined;
  const direct = PEM.exec(text);
  if (direct) pem = direct[0];
  else if (/^[A-Za-z0-9+/=\s]+$/.test(text)) {
    const decoded = Buffer.from(text.replace(/\s+/g, ''), 'base64');
    const asText = PEM.exec(decoded.toString('utf8'));
    pem = asText ? asText[0] : derToPem(decoded);
  }
  if (!pem) throw new BadRequestError(`invalid value for "${field}": expected a PEM certificate or its base64 encoding`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (err) {
    throw new BadRequestError(`invalid value for "${field}": not an X.509 certificate (${(err as Error).message})`);
  }
  if (cert.publicKey.asymmetricKeyType !== 'rsa') {
    throw new BadRequestError(`invalid value for "${field}": the certificate's key is ${String(cert.publicKey.asymmetricKeyType)}, and only RSA keys can be verified`);
  }
  return cert.toString();
}

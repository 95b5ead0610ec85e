// reflect-metadata must be loaded before @peculiar/x509, which throws at import time without it.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { systemClock, type Clock } from '@strongroom/base';

/**
 * The CA a primary makes when it becomes one: it signs one client certificate per secondary,
 * which that secondary presents on the primary's cluster address. Unlike the cluster CA, its
 * key is kept (by the primary, inside its barrier), because secondaries are added for as long
 * as the primary is one. The cluster's own services refuse its certificates: it certifies
 * secondaries, not members.
 */
export interface ReplicationCa {
  caCert: string;
  /** PKCS#8, PEM. A secret. */
  caKey: string;
}

/** A secondary's client certificate and its PKCS#8 key (PEM; the key is a secret). */
export interface SecondaryCertificate {
  cert: string;
  key: string;
  /** SHA-256 of the certificate's DER, hex: what the primary records to revoke or mark used. */
  fingerprint: string;
}

const CA_VALIDITY_MS = 10 * 365 * 24 * 60 * 60 * 1000;
/** Certificates start a little in the past so that a peer whose clock is behind accepts them. */
const BACKDATE_MS = 5 * 60 * 1000;
/** The subject of every secondary certificate: the id travels in the SAN, which has no length limit. */
const SECONDARY_SUBJECT = 'CN=strongroom-replication-secondary';
const CA_SUBJECT = 'CN=strongroom-replication-ca';
/** A URI SAN `urn:strongroom:secondary:<id, percent-encoded>` names the secondary. */
const SECONDARY_URN = 'urn:strongroom:secondary:';

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256' };
const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' };

/*
 * @peculiar/x509 is typed against the DOM's WebCrypto types, node:crypto's webcrypto against
 * node's own; they are the same objects at run time, hence the casts between the two families.
 */
type X509Crypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.create>[1]>;
type X509KeyPair = x509.X509CertificateCreateSelfSignedParams['keys'];
type X509PrivateKey = X509KeyPair['privateKey'];
const x509Crypto = webcrypto as unknown as X509Crypto;

async function generateKeyPair(): Promise<X509KeyPair> {
  return (await webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify'])) as unknown as X509KeyPair;
}

async function exportKey(key: X509PrivateKey): Promise<string> {
  return x509.PemConverter.encode(await x509Crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** Positive and unique enough that no two certificates of one CA share a serial. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes.toString('hex');
}

/** A new replication CA; see ReplicationCa. */
export async function createReplicationCa(clock: Clock = systemClock): Promise<ReplicationCa> {
  const now = clock.now();
  const keys = await generateKeyPair();
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: CA_SUBJECT,
      keys,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + CA_VALIDITY_MS),
      signingAlgorithm: ECDSA_SHA256,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, x509Crypto),
      ],
    },
    x509Crypto,
  );
  return { caCert: ca.toString('pem'), caKey: await exportKey(keys.privateKey) };
}

/**
 * A client certificate for the secondary `secondaryId`, valid for `validityMs` from now, signed
 * by `ca`. The primary records its fingerprint, and identifies the caller by it and by the id
 * (readPeerIdentity).
 */
export async function issueSecondaryCertificate(ca: ReplicationCa, secondaryId: string, validityMs: number, clock: Clock = systemClock): Promise<SecondaryCertificate> {
  if (secondaryId === '') throw new TypeError('a secondary id must not be empty');
  if (!(validityMs > 0)) throw new RangeError('the validity of a secondary certificate must be positive');
  const now = clock.now();
  const caCert = new x509.X509Certificate(ca.caCert);
  const caKey = (await x509Crypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(ca.caKey), ECDSA_P256, false, ['sign'])) as unknown as X509PrivateKey;
  const keys = await generateKeyPair();
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: SECONDARY_SUBJECT,
      issuer: caCert.subject,
      publicKey: keys.publicKey,
      signingKey: caKey,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + validityMs),
      signingAlgorithm: ECDSA_SHA256,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: `${SECONDARY_URN}${encodeURIComponent(secondaryId)}` }]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, x509Crypto),
        await x509.AuthorityKeyIdentifierExtension.create(caCert, false, x509Crypto),
      ],
    },
    x509Crypto,
  );
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey), fingerprint: certificateFingerprint(Buffer.from(cert.rawData)) };
}

/** SHA-256 of a certificate's DER, hex. */
export function certificateFingerprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

/** The secondary id a certificate of issueSecondaryCertificate names, or null for any other certificate. */
export function secondaryIdOf(der: Buffer): string | null {
  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(der);
  } catch {
    return null;
  }
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const uris = san?.names.items.filter((n) => n.type === 'url' && n.value.startsWith(SECONDARY_URN)) ?? [];
  if (uris.length !== 1) return null;
  try {
    return decodeURIComponent((uris[0] as x509.GeneralName).value.slice(SECONDARY_URN.length));
  } catch {
    return null;
  }
}

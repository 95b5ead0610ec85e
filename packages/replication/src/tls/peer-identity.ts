import type { X509Certificate } from 'node:crypto';
import { isIssuedByAny } from '@strongroom/raft';
import { certificateFingerprint, secondaryIdOf } from './replication-ca';

/** Who called: the secondary a replication CA certified, and which of its certificates it used. */
export interface PeerIdentity {
  secondaryId: string;
  /** SHA-256 of the certificate's DER, hex (as issueSecondaryCertificate reported it). */
  fingerprint: string;
}

/** The part of a grpc-js server call that tells who is on the other end. */
export interface AuthenticatedCall {
  getAuthContext(): { sslPeerCertificate?: { raw: Buffer } };
}

/**
 * The secondary on the other end of `call`, or null when its certificate is not a secondary
 * certificate signed by one of `cas` (the replication CAs trusted now). TLS checked the chain
 * when the connection opened; this checks it again per call, because a connection outlives
 * the trust of the CA it was opened under.
 */
export function readPeerIdentity(call: AuthenticatedCall, cas: X509Certificate[]): PeerIdentity | null {
  const raw = call.getAuthContext().sslPeerCertificate?.raw;
  if (raw === undefined || !isIssuedByAny(raw, cas)) return null;
  const secondaryId = secondaryIdOf(raw);
  return secondaryId === null ? null : { secondaryId, fingerprint: certificateFingerprint(raw) };
}

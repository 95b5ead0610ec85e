import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';

/**
 * Errors of the replication wire. A handler on the primary throws the typed ones; the server
 * sends them as a gRPC status with a reason in the trailers, and the client throws the same
 * class again, so both ends speak of the same failure. Messages never carry a secret.
 */
export class ReplicationWireError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** This node is not the primary's active node; `activeClusterAddress` is, when known. */
export class NotActiveError extends ReplicationWireError {
  constructor(readonly activeClusterAddress: string | null) {
    super(activeClusterAddress ? `this node is not the active node; the active node is at ${activeClusterAddress}` : 'this node is not the active node, and no active node is known');
  }
}

export type CredentialRefusal = 'unknown' | 'used' | 'revoked';

/** The caller's certificate is not (or no longer) a credential the primary accepts. */
export class CredentialRefusedError extends ReplicationWireError {
  constructor(readonly reason: CredentialRefusal) {
    super(
      reason === 'used' ? 'this activation credential was already used'
        : reason === 'revoked' ? 'this secondary was revoked; it needs a new activation token'
          : 'this certificate is not a secondary credential of the primary',
    );
  }
}

/** The secondary asked for a cluster id that is not this primary's. */
export class WrongClusterError extends ReplicationWireError {
  constructor(readonly clusterId: string) {
    super(`this is cluster ${clusterId}, not the primary the secondary follows`);
  }
}

/** This cluster is not a DR primary (any more). */
export class NotPrimaryError extends ReplicationWireError {
  constructor() {
    super('this cluster is not a DR primary');
  }
}

/** No answer from `address`: nobody listens, TLS failed, the deadline passed, or the connection died. */
export class ReplicationUnavailableError extends ReplicationWireError {
  constructor(readonly address: string, detail: string, options?: { cause?: unknown }) {
    super(`the primary at ${address} did not answer: ${detail}`, options);
  }
}

/** Any other failed call, with its gRPC status code. */
export class ReplicationCallError extends ReplicationWireError {
  constructor(readonly code: status, message: string) {
    super(message);
  }
}

const REASON = 'strongroom-replication-reason';
const ACTIVE = 'strongroom-replication-active';
const CLUSTER = 'strongroom-replication-cluster';

/** The status a server answers for `err`; an untyped error becomes INTERNAL without its message. */
export function toStatus(err: unknown): Partial<StatusObject> & { code: status; details: string } {
  const metadata = new Metadata();
  const answer = (code: status, reason: string, details: string) => {
    metadata.set(REASON, reason);
    return { code, details, metadata };
  };
  if (err instanceof NotActiveError) {
    if (err.activeClusterAddress) metadata.set(ACTIVE, err.activeClusterAddress);
    return answer(status.FAILED_PRECONDITION, 'not-active', err.message);
  }
  if (err instanceof CredentialRefusedError) return answer(status.PERMISSION_DENIED, `credential-${err.reason}`, err.message);
  if (err instanceof WrongClusterError) {
    metadata.set(CLUSTER, err.clusterId);
    return answer(status.FAILED_PRECONDITION, 'wrong-cluster', err.message);
  }
  if (err instanceof NotPrimaryError) return answer(status.FAILED_PRECONDITION, 'not-primary', err.message);
  if (err instanceof ReplicationCallError) return { code: err.code, details: err.message };
  return { code: status.INTERNAL, details: 'the primary failed to answer; its log says why' };
}

/** The typed error for a failed call to `address`. */
export function fromServiceError(err: ServiceError, address: string): ReplicationWireError {
  const trailer = (key: string): string | undefined => {
    const value = err.metadata?.get(key)[0];
    return typeof value === 'string' ? value : undefined;
  };
  const reason = trailer(REASON);
  if (reason === 'not-active') return new NotActiveError(trailer(ACTIVE) ?? null);
  if (reason === 'credential-used' || reason === 'credential-revoked' || reason === 'credential-unknown') {
    return new CredentialRefusedError(reason.slice('credential-'.length) as CredentialRefusal);
  }
  if (reason === 'wrong-cluster') return new WrongClusterError(trailer(CLUSTER) ?? '');
  if (reason === 'not-primary') return new NotPrimaryError();
  if (err.code === status.UNAVAILABLE || err.code === status.DEADLINE_EXCEEDED) {
    return new ReplicationUnavailableError(address, err.code === status.DEADLINE_EXCEEDED ? 'no answer before the deadline' : err.details, { cause: err });
  }
  return new ReplicationCallError(err.code, `the primary at ${address} refused the call (${status[err.code]}): ${err.details}`);
}

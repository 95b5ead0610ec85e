import type { PrimaryState, ReplicationKind } from './role-state';
import type { PeerIdentity } from './tls/peer-identity';
import { CredentialRefusedError, NotPrimaryError } from './wire/errors';
import type { ReplicationHandler, ReplicationServer } from './wire/replication-server';
import type {
  ActivateRequest, ActivateResult, ForwardRequest, ForwardResult, KeyValue, MerkleDiffRequest, MerkleDiffResult, PingRequest, PingResult,
  StreamWalsRequest, WalStreamItem,
} from './wire/types';
import type { WalTracker } from './wal-tracker';

interface Served {
  handler: ReplicationHandler;
  state: () => PrimaryState | null;
  cas: string[];
}

/**
 * One replication service on the cluster listener for both kinds: each call goes to the kind
 * whose primary state issued the caller's certificate (its fingerprint, which the TLS layer
 * read from a certificate one of the trusted replication CAs signed). A secondary id may be
 * used by both kinds; the certificate tells them apart.
 */
export class KindRouter implements ReplicationHandler {
  private readonly kinds = new Map<ReplicationKind, Served>();
  private server: ReplicationServer | null = null;

  constructor(private readonly wal: WalTracker) {}

  /** The server this router answers for: it trusts the CAs of every kind that is a primary. */
  attach(server: ReplicationServer): void {
    this.server = server;
    this.trustAll();
  }

  serve(kind: ReplicationKind, handler: ReplicationHandler, state: () => PrimaryState | null): void {
    this.kinds.set(kind, { handler, state, cas: [] });
  }

  /** The replication CAs of one kind (empty when it is no primary). */
  trust(kind: ReplicationKind, pems: string[]): void {
    const served = this.kinds.get(kind);
    if (!served) return;
    served.cas = pems;
    this.trustAll();
  }

  private trustAll(): void {
    this.server?.trustCas([...this.kinds.values()].flatMap((k) => k.cas));
  }

  private route(caller: PeerIdentity): ReplicationHandler {
    let primary: ReplicationHandler | null = null;
    for (const served of this.kinds.values()) {
      const state = served.state();
      if (!state) continue;
      primary ??= served.handler;
      if (state.secondaries[caller.secondaryId]?.fingerprint === caller.fingerprint) return served.handler;
    }
    if (primary) throw new CredentialRefusedError('revoked');
    throw new NotPrimaryError();
  }

  lastWal(): number {
    return this.wal.lastWal;
  }

  async activate(request: ActivateRequest, caller: PeerIdentity): Promise<ActivateResult> {
    return this.route(caller).activate(request, caller);
  }

  async ping(request: PingRequest, caller: PeerIdentity): Promise<PingResult> {
    return this.route(caller).ping(request, caller);
  }

  streamWals(request: StreamWalsRequest, caller: PeerIdentity, signal: AbortSignal): AsyncIterable<WalStreamItem> {
    return this.route(caller).streamWals(request, caller, signal);
  }

  async merkleDiff(request: MerkleDiffRequest, caller: PeerIdentity): Promise<MerkleDiffResult> {
    return this.route(caller).merkleDiff(request, caller);
  }

  merkleSync(keys: string[], caller: PeerIdentity, signal: AbortSignal): AsyncIterable<KeyValue[]> {
    return this.route(caller).merkleSync(keys, caller, signal);
  }

  async forward(request: ForwardRequest, caller: PeerIdentity): Promise<ForwardResult> {
    return this.route(caller).forward(request, caller);
  }
}

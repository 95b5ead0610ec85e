import type { ForwardingAuth } from './forwarding-auth';

/** How the HTTP dispatcher takes part in a cluster: where requests go, and the calls standbys hand over. */
export interface ClusterRouting {
  /** The active node's API address while this node is a standby, else null. */
  activeAddress(): string | null;
  /**
   * Waits a little (an election's worth) for an active node: another's address, or null once
   * this node itself is active (or the wait is over).
   */
  awaitActive(): Promise<string | null>;
  /** Signs and checks the client address standbys pass along. */
  auth: ForwardingAuth;
  /** Trust anchors for the other members' API certificates, when they come from a private CA. */
  apiCa(): string | undefined;
  /**
   * On a standby: hands an encoded request to the active node over the cluster connection and
   * resolves with its encoded answer; null when the active node's cluster address is not known
   * (the request then goes over HTTP). Rejects when no answer came.
   */
  call(payload: Buffer): Promise<Buffer> | null;
  /** Sets what this node does with the requests standbys hand it over the cluster connection. */
  serveCalls(handler: (payload: Buffer) => Promise<Buffer>): void;
}

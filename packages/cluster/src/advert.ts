import type { Message, NodeId, Transport, TransportHandlers } from '@strongroom/raft';

/**
 * What a member tells the others about itself. Raft replicates one opaque address string per
 * member; ours carries both addresses a member has, so every node can reach the others' cluster
 * ports and send clients to the active node's API.
 */
export interface Advert {
  /** `host:port` of the cluster (Raft) listener as the others reach it. */
  cluster: string;
  /** The API's base URL, e.g. `http://127.0.0.1:8200`. */
  api: string;
  /** Joined with non_voter: autopilot never promotes it. */
  nonVoter: boolean;
}

export function encodeAdvert(a: Advert): string {
  return JSON.stringify({ cluster: a.cluster, api: a.api, nonVoter: a.nonVoter });
}

export function decodeAdvert(text: string | undefined): Advert | null {
  if (text === undefined) return null;
  try {
    const v = JSON.parse(text) as Partial<Advert>;
    if (typeof v.cluster !== 'string' || typeof v.api !== 'string') return null;
    return { cluster: v.cluster, api: v.api, nonVoter: v.nonVoter === true };
  } catch {
    return null;
  }
}

/** `https://host:port` (as cluster_addr is written) or `host:port` to `host:port`. */
export function hostPortOf(clusterAddr: string): string {
  if (!clusterAddr.includes('://')) return clusterAddr;
  const u = new URL(clusterAddr);
  return u.host;
}

/** Hands the transport the cluster address out of each member's advert. */
export class AdvertTransport implements Transport {
  constructor(private readonly inner: Transport) {}

  start(handlers: TransportHandlers): Promise<void> {
    return this.inner.start(handlers);
  }

  setPeer(id: NodeId, address: string): void {
    const advert = decodeAdvert(address);
    this.inner.setPeer(id, advert ? advert.cluster : address);
  }

  removePeer(id: NodeId): void {
    this.inner.removePeer(id);
  }

  send(messages: Message[]): void {
    this.inner.send(messages);
  }

  sendSnapshot(m: Message, data: () => AsyncIterable<Buffer>): Promise<void> {
    return this.inner.sendSnapshot(m, data);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

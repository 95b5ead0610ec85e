import { X509Certificate } from 'node:crypto';
import type { experimental } from '@grpc/grpc-js';

type CertificateProvider = experimental.CertificateProvider;
type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Every certificate in a PEM text (a CA bundle may hold more than one). */
export function parseCertificates(pem: string): X509Certificate[] {
  return (pem.match(PEM_CERTIFICATE) ?? []).map((block) => new X509Certificate(block));
}

/** Whether the DER certificate `raw` was signed by one of `cas`. */
export function isIssuedByAny(raw: Buffer, cas: X509Certificate[]): boolean {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(raw);
  } catch {
    return false;
  }
  return cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey));
}

/**
 * The server side of the cluster listener's TLS, as a grpc-js certificate provider: a fixed
 * identity (the cluster certificate) and a set of trusted client CAs that can grow and shrink
 * while the server listens. grpc-js applies each update to the bound server's secure context,
 * which governs the handshakes that follow.
 */
export class ServerTrust implements CertificateProvider {
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private clientCas: string[];

  constructor(private readonly tls: { ca: string; cert: string; key: string }, clientCas: string[]) {
    this.clientCas = validCas(clientCas);
  }

  setClientCas(pems: string[]): void {
    this.clientCas = validCas(pems);
    const update = this.caUpdate();
    for (const listener of this.caListeners) listener(update);
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    this.deliverSoon(listener, () => this.caListeners.has(listener), () => this.caUpdate());
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    this.deliverSoon(listener, () => this.identityListeners.has(listener), () => ({ certificate: Buffer.from(this.tls.cert), privateKey: Buffer.from(this.tls.key) }));
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }

  /**
   * The first update of a new listener. Not during the add: grpc-js registers the listener
   * before the server that it feeds, so an update delivered at once would reach no server, and
   * the server would refuse every connection until the next one. A microtask runs before the
   * listening socket can accept anything.
   */
  private deliverSoon<T>(listener: (update: T) => void, registered: () => boolean, update: () => T): void {
    queueMicrotask(() => {
      if (registered()) listener(update());
    });
  }

  private caUpdate(): { caCertificate: Buffer } {
    return { caCertificate: Buffer.from([this.tls.ca, ...this.clientCas].join('\n')) };
  }
}

/** Refuses a list with something that is not a PEM certificate before it reaches TLS, where it would stop every handshake. */
function validCas(pems: string[]): string[] {
  for (const pem of pems) {
    if (parseCertificates(pem).length === 0) throw new TypeError('a trusted client CA must be a PEM certificate');
  }
  return [...pems];
}

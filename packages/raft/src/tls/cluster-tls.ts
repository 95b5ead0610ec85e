// reflect-metadata must be loaded before @peculiar/x509, which throws at import time without it.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import { systemClock, type Clock } from '@strongroom/base';
import { CLUSTER_SERVER_NAME } from './cluster-name';

/**
 * The TLS material of one cluster, as PEM: the CA every node trusts, and the one certificate
 * (with its PKCS#8 private key) that every node presents, as a server to the peers that dial it
 * and as a client to the peers it dials.
 *
 * Why one shared certificate rather than one per node: a node joins through the leader before
 * it has any identity of its own, and receives this material with the join answer (over the
 * authenticated join path, after it proved it holds the unseal keys). That is the keyring-style
 * model Vault's integrated storage uses: membership is decided by Raft, and TLS only proves
 * "member of this cluster". Nothing in this package trusts a node id because of a certificate.
 *
 * The CA's private key is discarded once the cluster certificate is signed, so no one, this
 * process included, can mint another certificate the cluster would accept.
 *
 * Renewal: both certificates are valid for about a year. Before that, the leader creates new
 * material and rolls it out in two steps: every node first trusts both CAs (`ca` may hold two
 * PEM certificates), then every node switches to the new certificate and key, then the old CA
 * is dropped. Nothing here does that yet.
 */
export interface ClusterTls {
  caCert: string;
  cert: string;
  key: string;
}

const VALIDITY_MS = 365 * 24 * 60 * 60 * 1000;
/** Certificates start a little in the past so that a peer whose clock is behind accepts them. */
const BACKDATE_MS = 5 * 60 * 1000;

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256' };
const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' };

/*
 * @peculiar/x509 is typed against the DOM's WebCrypto types, node:crypto's webcrypto against
 * node's own; they are the same objects at run time, hence the casts between the two families.
 */
type X509Crypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.create>[1]>;
type X509KeyPair = x509.X509CertificateCreateSelfSignedParams['keys'];
const x509Crypto = webcrypto as unknown as X509Crypto;

async function generateKeyPair(): Promise<X509KeyPair> {
  return (await webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify'])) as unknown as X509KeyPair;
}

/** Creates a new cluster CA and the cluster certificate it signs; see ClusterTls. */
export async function createClusterTls(clock: Clock = systemClock): Promise<ClusterTls> {
  const now = clock.now();
  const notBefore = new Date(now - BACKDATE_MS);
  const notAfter = new Date(now + VALIDITY_MS);

  const caKeys = await generateKeyPair();
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      name: `CN=${CLUSTER_SERVER_NAME}-ca`,
      keys: caKeys,
      notBefore,
      notAfter,
      signingAlgorithm: ECDSA_SHA256,
      extensions: [
        // pathLength 0: this CA signs the cluster certificate and nothing that signs further.
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, x509Crypto),
      ],
    },
    x509Crypto,
  );

  const keys = await generateKeyPair();
  const cert = await x509.X509CertificateGenerator.create(
    {
      subject: `CN=${CLUSTER_SERVER_NAME}`,
      issuer: ca.subject,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      notBefore,
      notAfter,
      signingAlgorithm: ECDSA_SHA256,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        // Both: every node is a server to the peers that dial it and a client of those it dials.
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: CLUSTER_SERVER_NAME }]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, x509Crypto),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey, false, x509Crypto),
      ],
    },
    x509Crypto,
  );

  const pkcs8 = await x509Crypto.subtle.exportKey('pkcs8', keys.privateKey);
  return {
    caCert: ca.toString('pem'),
    cert: cert.toString('pem'),
    key: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
  };
}

// reflect-metadata must be loaded before @peculiar/x509, which throws at import time without it.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import { BadRequestError, definePath, type BackendResponse, type PathDefinition } from '@strongroom/core';
import { keyTypeInfo, type KeyType } from './crypto';
import { KeyVersion, type KeyPolicy } from './key-policy';
import { selectVersion } from './path-export';
import { keyNotFound } from './path-keys';
import { KEY_NAME, type TransitContext } from './transit-context';
import { derToPemChain } from './vault-backup';

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const BASIC_CONSTRAINTS = '2.5.29.19';

/*
 * @peculiar/x509 is typed against the DOM's WebCrypto types, node:crypto's webcrypto against
 * node's own; they describe the same objects, but TypeScript sees two unrelated families (and
 * only one of them exists in some compilations), hence the casts between them below.
 */
type X509Crypto = NonNullable<Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[1]>;
type X509KeyPair = x509.Pkcs10CertificateRequestCreateParams['keys'];
const x509Crypto = webcrypto as unknown as X509Crypto;

/** A copy whose type @peculiar/x509 accepts (a Uint8Array over a plain ArrayBuffer). */
function bytes(der: Buffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(der);
}

interface WebCryptoParams {
  importAlgorithm: webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm;
  signingAlgorithm: x509.Pkcs10CertificateRequestCreateParams['signingAlgorithm'];
}

/** The signature algorithm Go's x509 picks for each key, so our CSRs look like Vault's. */
function webCryptoParams(type: KeyType): WebCryptoParams {
  switch (type) {
    case 'ecdsa-p256':
      return { importAlgorithm: { name: 'ECDSA', namedCurve: 'P-256' }, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } };
    case 'ecdsa-p384':
      return { importAlgorithm: { name: 'ECDSA', namedCurve: 'P-384' }, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-384' } };
    case 'ecdsa-p521':
      return { importAlgorithm: { name: 'ECDSA', namedCurve: 'P-521' }, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-512' } };
    case 'rsa-2048':
    case 'rsa-3072':
    case 'rsa-4096':
      return { importAlgorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' } };
    case 'ed25519':
      return { importAlgorithm: { name: 'Ed25519' }, signingAlgorithm: { name: 'Ed25519' } };
    default:
      throw new Error(`no certificate support for key type ${type}`);
  }
}

/** The checks csr and set-certificate share: a signing key without derivation, and the version. */
function certificateVersion(policy: KeyPolicy, selector: string): KeyVersion {
  if (!policy.spec.supportsSigning) {
    throw new BadRequestError(`key type '${policy.type}' does not support signing, so key "${policy.name}" cannot have a CSR or certificate`);
  }
  if (policy.derived) {
    throw new BadRequestError(`operation not supported for keys with derivation enabled: key "${policy.name}" derives a key per context`);
  }
  return selectVersion(policy, selector);
}

export function pemEncode(label: string, der: Buffer): string {
  return `-----BEGIN ${label}-----\n${der.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

/** The PEM blocks of `text` with the given labels, decoded; other blocks are skipped. */
function pemBlocks(text: string, labels: readonly string[]): Buffer[] {
  const out: Buffer[] = [];
  for (const m of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)) {
    if (labels.includes(m[1] ?? '')) out.push(Buffer.from((m[2] ?? '').replace(/\s+/g, ''), 'base64'));
  }
  return out;
}

function parseTemplate(pem: string): x509.Pkcs10CertificateRequest | undefined {
  if (pem.trim() === '') return undefined;
  const [der] = pemBlocks(pem, ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST']);
  if (!der) throw new BadRequestError('invalid value for "csr": could not decode PEM CSR; give a "CERTIFICATE REQUEST" PEM block');
  try {
    return new x509.Pkcs10CertificateRequest(bytes(der));
  } catch (err) {
    throw new BadRequestError(`invalid value for "csr": could not parse the CSR template: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * A CSR for the key version: the template's subject, requested extensions and other attributes,
 * with the version's public key, signed by the version's private key inside the engine.
 */
async function createCsr(policy: KeyPolicy, v: KeyVersion, template: x509.Pkcs10CertificateRequest | undefined): Promise<string> {
  if (!v.hasPrivateKey()) {
    throw new BadRequestError(`invalid value for "version": version ${v.version} of key "${policy.name}" was imported as a public key only; import its private key through import_version first`);
  }
  const params = webCryptoParams(policy.type);
  const privateKey = await webcrypto.subtle.importKey(
    'pkcs8', v.privateKey().export({ format: 'der', type: 'pkcs8' }), params.importAlgorithm, false, ['sign'],
  );
  const publicKey = await webcrypto.subtle.importKey(
    'spki', v.publicKey().export({ format: 'der', type: 'spki' }), params.importAlgorithm, true, ['verify'],
  );
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    ...(template ? { name: template.subjectName } : {}),
    extensions: template?.extensions ?? [],
    attributes: template?.attributes.filter((a) => a.type !== EXTENSION_REQUEST) ?? [],
    signingAlgorithm: params.signingAlgorithm,
    keys: { privateKey, publicKey } as unknown as X509KeyPair,
  }, x509Crypto);
  return pemEncode('CERTIFICATE REQUEST', Buffer.from(csr.rawData));
}

/** Go's view: a certificate is a CA when it has basic constraints saying so. */
function isCa(cert: x509.X509Certificate): boolean {
  const ext = cert.getExtension(BASIC_CONSTRAINTS);
  return ext !== null && new x509.BasicConstraintsExtension(ext.rawData).ca;
}

function keyAlgorithmOf(key: KeyObject): string {
  return key.asymmetricKeyType === 'ec' ? `EC (${key.asymmetricKeyDetails?.namedCurve ?? '?'})`
    : key.asymmetricKeyType === 'rsa' ? `RSA (${key.asymmetricKeyDetails?.modulusLength ?? '?'} bits)`
      : String(key.asymmetricKeyType);
}

/** Checks a chain as Vault does and answers its certificates' DER, leaf first. */
function checkChain(policy: KeyPolicy, v: KeyVersion, text: string): Buffer[] {
  const ders = pemBlocks(text, ['CERTIFICATE', 'X509 CERTIFICATE']);
  if (ders.length === 0) {
    throw new BadRequestError('invalid value for "certificate_chain": no PEM-encoded certificate found; give one or more "CERTIFICATE" blocks, leaf first');
  }
  const certs = ders.map((der, i) => {
    try {
      return new x509.X509Certificate(bytes(der));
    } catch (err) {
      throw new BadRequestError(`invalid value for "certificate_chain": could not parse certificate ${i + 1} of the chain: ${(err as Error).message}`, { cause: err });
    }
  });
  const leaf = certs[0]!;
  if (isCa(leaf)) throw new BadRequestError('invalid value for "certificate_chain": the first certificate must be the leaf, but it is a CA certificate');
  if (certs.length > 1) {
    certs.slice(1).forEach((c, i) => {
      if (!isCa(c)) {
        throw new BadRequestError(`invalid value for "certificate_chain": certificate ${i + 2} follows the leaf, so it must be a CA certificate (basic constraints CA:TRUE)`);
      }
    });
  }
  let leafKey: KeyObject;
  try {
    leafKey = createPublicKey({ key: Buffer.from(leaf.publicKey.rawData), format: 'der', type: 'spki' });
  } catch (err) {
    throw new BadRequestError(`invalid value for "certificate_chain": the leaf certificate's public key cannot be read: ${(err as Error).message}`, { cause: err });
  }
  const own = v.publicKey();
  const spec = keyTypeInfo(policy.type);
  const sameKind = spec.family === 'ecdsa' ? leafKey.asymmetricKeyType === 'ec'
    : spec.family === 'rsa' ? leafKey.asymmetricKeyType === 'rsa' : leafKey.asymmetricKeyType === 'ed25519';
  if (!sameKind) {
    throw new BadRequestError(`invalid value for "certificate_chain": the leaf certificate holds an ${keyAlgorithmOf(leafKey)} key, which does not match key type ${policy.type}`);
  }
  const a = leafKey.export({ format: 'der', type: 'spki' });
  const b = own.export({ format: 'der', type: 'spki' });
  if (!a.equals(b)) {
    throw new BadRequestError(`invalid value for "certificate_chain": the leaf certificate's public key does not match version ${v.version} of key "${policy.name}"`);
  }
  return ders;
}

/** `keys/:name/csr` and `keys/:name/set-certificate`: certificates for signing keys. */
export function certificatePaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `keys/${KEY_NAME}/csr`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        version: { type: 'string', default: '', description: 'Key version to sign with: a number, or "latest"/empty for the current one.' },
        csr: { type: 'string', default: '', description: 'Optional PEM CSR template: its subject, requested extensions and attributes are kept.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          const policy = await ctx.keys.get(req.storage, name);
          if (!policy) throw keyNotFound(name);
          const v = certificateVersion(policy, fields.string('version'));
          const template = parseTemplate(fields.string('csr'));
          return { data: { name: policy.name, type: policy.type, csr: await createCsr(policy, v, template) } };
        },
      },
      help: 'Returns a CSR signed by the key version, from an optional template; the private key stays in the engine.',
    }),

    definePath({
      pattern: `keys/${KEY_NAME}/set-certificate`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        version: { type: 'string', default: '', description: 'Key version the chain certifies: a number, or "latest"/empty for the current one.' },
        certificate_chain: { type: 'string', default: '', description: 'PEM certificates, leaf first; the leaf must certify the key version\'s public key.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          const text = fields.string('certificate_chain');
          if (text.trim() === '') throw new BadRequestError('missing required field "certificate_chain": give PEM certificates, leaf first');
          return ctx.keys.update<BackendResponse>(req.storage, name, async (current) => {
            if (!current) throw keyNotFound(name);
            const v = certificateVersion(current, fields.string('version'));
            const chain = derToPemChain(checkChain(current, v, text));
            const next = current.clone();
            // Replaces any chain set before: the latest certificate of a key wins.
            next.versions.set(v.version, new KeyVersion(
              v.version, v.key, v.privateKeyDer, v.publicKeyText, v.hmacKey, v.createdAt, v.convergentVersion, chain, v.imported,
            ));
            return { change: { next }, result: { data: { name: current.name, type: current.type, version: v.version, certificate_chain: chain } } };
          });
        },
      },
      help: 'Sets the certificate chain of a key version, replacing any earlier one; shown in key read and export/certificate-chain.',
    }),
  ];
}

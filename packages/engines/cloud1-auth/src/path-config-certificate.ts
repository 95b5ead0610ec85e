import { definePath, getJson, putJson, type LogicalStorage, type PathDefinition } from '@strongroom/core';
import { BUILT_IN_CERTIFICATES, parseCertificateInput, type CertificateType, type VerifyingCertificate } from './certificates';
import type { Cloud1Context } from './context';
import { KEYS } from './storage-keys';

interface StoredCertificate {
  pem: string;
  type: CertificateType;
}

/** The built-in certificates and the registered ones, for verifying a login's document. */
export async function verifyingCertificates(storage: LogicalStorage): Promise<VerifyingCertificate[]> {
  const registered: VerifyingCertificate[] = [];
  for (const name of await storage.list(KEYS.certificatePrefix)) {
    const stored = await getJson<StoredCertificate>(storage, KEYS.certificatePrefix + name);
    if (stored) registered.push({ name, type: stored.type, pem: stored.pem });
  }
  return [...BUILT_IN_CERTIFICATES, ...registered];
}

export function configCertificatePaths(_ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/certificates/?',
      operations: { list: async (req) => ({ data: { keys: await req.storage.list(KEYS.certificatePrefix) } }) },
      help: 'Lists the registered certificates (the built-in ones are not listed).',
    }),
    definePath({
      pattern: 'config/certificate/(?<cert_name>[\\w.-]+)',
      fields: {
        cert_name: { type: 'string', required: true },
        cloud1_public_cert: { type: 'string', description: 'the provider\'s public certificate, PEM or base64' },
        type: { type: 'string', default: 'pkcs7', allowed: ['pkcs7', 'identity'] },
      },
      existenceCheck: async (req, f) => (await req.storage.get(KEYS.certificatePrefix + f.string('cert_name'))) !== null,
      operations: {
        read: async (req, f) => {
          const stored = await getJson<StoredCertificate>(req.storage, KEYS.certificatePrefix + f.string('cert_name'));
          return stored ? { data: { cloud1_public_cert: stored.pem, type: stored.type } } : null;
        },
        create: async (req, f) => {
          const key = KEYS.certificatePrefix + f.string('cert_name');
          const current = await getJson<StoredCertificate>(req.storage, key);
          // An update may change the type alone; a new entry needs the certificate.
          const pem = f.has('cloud1_public_cert') || !current
            ? parseCertificateInput('cloud1_public_cert', f.string('cloud1_public_cert'))
            : current.pem;
          const type = (f.has('type') || !current ? f.string('type') : current.type) as CertificateType;
          await putJson(req.storage, key, { pem, type } satisfies StoredCertificate);
          return null;
        },
        delete: async (req, f) => {
          await req.storage.delete(KEYS.certificatePrefix + f.string('cert_name'));
          return null;
        },
      },
      help: 'Registers a public certificate that verifies instance identity documents (type pkcs7 or identity).',
    }),
  ];
}

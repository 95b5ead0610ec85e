/**
 * A self-signed certificate for 127.0.0.1 and localhost, generated at start, for emulators whose
 * clients refuse plain HTTP (an identity library will not send a client secret to an http://
 * authority). Clients trust it by taking the PEM as their only CA.
 */
import 'reflect-metadata';
import { KeyObject, randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type X509Keys = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'];
type X509Crypto = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1];

const EC_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

export interface LoopbackCertificate {
  cert: string;
  key: string;
}

export async function loopbackCertificate(commonName: string): Promise<LoopbackCertificate> {
  const keys = await webcrypto.subtle.generateKey(EC_ALGORITHM, true, ['sign', 'verify']);
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: '01' + randomBytes(8).toString('hex'),
      name: `CN=${commonName}, O=Strongroom`,
      notBefore: new Date(now - 86_400_000),
      notAfter: new Date(now + 365 * 86_400_000),
      signingAlgorithm: EC_ALGORITHM,
      keys: keys as unknown as X509Keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          { type: 'ip', value: '127.0.0.1' },
          { type: 'dns', value: 'localhost' },
        ]),
      ],
    },
    webcrypto as unknown as X509Crypto,
  );
  const key = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString();
  return { cert: certificate.toString('pem'), key };
}

/**
 * The instance identity document and its three signed forms, as the metadata service serves
 * them under /latest/dynamic/instance-identity/:
 * - `document`: pretty-printed JSON, in the provider's layout;
 * - `signature`: base64 RSA SHA-256 signature of the document bytes;
 * - `pkcs7` and `rsa2048`: base64 DER of a CMS SignedData (PKCS#7) that encapsulates the document,
 *   signed over contentType, signingTime and messageDigest attributes, without embedded
 *   certificates (the verifier brings the provider's certificate, as with the real service).
 *
 * One RSA-2048 key with a self-signed certificate (the "emulator CA") signs all three. The
 * provider uses separate per-region certificates (DSA for `pkcs7`); here one certificate is enough
 * to register with the auth method's config/certificate for both its `pkcs7` and `identity` types.
 */
import 'reflect-metadata';
import { createHash, KeyObject, randomBytes, sign as rsaSign, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { Instance } from './state';

const OID_DATA = '1.2.840.113549.1.7.1';
const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const OID_CONTENT_TYPE = '1.2.840.113549.1.9.3';
const OID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const OID_SIGNING_TIME = '1.2.840.113549.1.9.5';

const RSA_ALGORITHM = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

// pkijs and @peculiar/x509 type their crypto parameters with the DOM's WebCrypto types, which are
// Node's own under a different name; these aliases are the one place the two are bridged.
type EngineCrypto = ConstructorParameters<typeof pkijs.CryptoEngine>[0]['crypto'];
type X509Keys = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'];
type X509Crypto = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1];
type PkijsPrivateKey = Parameters<pkijs.SignedData['sign']>[0];

const engine = new pkijs.CryptoEngine({ name: 'cloud1-emulator', crypto: webcrypto as unknown as EngineCrypto });

export class IdentitySigner {
  private constructor(
    readonly certificatePem: string,
    private readonly certificate: pkijs.Certificate,
    private readonly privateKey: webcrypto.CryptoKey,
    private readonly privateKeyObject: KeyObject,
  ) {}

  /** Generates the key and its self-signed certificate, valid from a day before `now` for ten years. */
  static async create(now: number): Promise<IdentitySigner> {
    const keys = await webcrypto.subtle.generateKey(RSA_ALGORITHM, true, ['sign', 'verify']);
    const certificate = await x509.X509CertificateGenerator.createSelfSigned(
      {
        // A positive serial (leading byte below 0x80), unique per emulator start.
        serialNumber: '01' + randomBytes(8).toString('hex'),
        name: 'CN=Strongroom cloud1 emulator instance identity, O=Strongroom',
        notBefore: new Date(now - 86_400_000),
        notAfter: new Date(now + 10 * 365 * 86_400_000),
        signingAlgorithm: RSA_ALGORITHM,
        keys: keys as unknown as X509Keys,
        extensions: [
          new x509.BasicConstraintsExtension(true, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
        ],
      },
      webcrypto as unknown as X509Crypto,
    );
    const pkijsCertificate = pkijs.Certificate.fromBER(certificate.rawData);
    return new IdentitySigner(
      certificate.toString('pem'),
      pkijsCertificate,
      keys.privateKey,
      KeyObject.from(keys.privateKey),
    );
  }

  /** Base64 RSA SHA-256 signature of the document, wrapped at 64 columns like the provider's. */
  signature(document: string): string {
    return wrap64(rsaSign('sha256', Buffer.from(document, 'utf8'), this.privateKeyObject).toString('base64'));
  }

  /** Base64 DER of a PKCS#7 SignedData encapsulating the document, wrapped at 64 columns. */
  async pkcs7(document: string, signingTime: number): Promise<string> {
    const content = Buffer.from(document, 'utf8');
    const digest = createHash('sha256').update(content).digest();
    const signedData = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({
        eContentType: OID_DATA,
        eContent: new asn1js.OctetString({ valueHex: toArrayBuffer(content) }),
      }),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({
            issuer: this.certificate.issuer,
            serialNumber: this.certificate.serialNumber,
          }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({
            type: 0,
            attributes: [
              new pkijs.Attribute({ type: OID_CONTENT_TYPE, values: [new asn1js.ObjectIdentifier({ value: OID_DATA })] }),
              new pkijs.Attribute({ type: OID_SIGNING_TIME, values: [new asn1js.UTCTime({ valueDate: new Date(signingTime) })] }),
              new pkijs.Attribute({ type: OID_MESSAGE_DIGEST, values: [new asn1js.OctetString({ valueHex: toArrayBuffer(digest) })] }),
            ],
          }),
        }),
      ],
    });
    // pkijs splits eContent into a constructed OCTET STRING; the primitive form keeps the
    // structure DER-like for strict parsers. The signature covers the attributes, not this encoding.
    signedData.encapContentInfo.eContent = new asn1js.OctetString({ valueHex: toArrayBuffer(content) });
    await signedData.sign(this.privateKey as unknown as PkijsPrivateKey, 0, 'SHA-256', undefined, engine);
    const contentInfo = new pkijs.ContentInfo({ contentType: OID_SIGNED_DATA, content: signedData.toSchema(true) });
    return wrap64(Buffer.from(contentInfo.toSchema().toBER(false)).toString('base64'));
  }
}

/** The identity document exactly as the provider lays it out (`"key" : value`, two-space indent). */
export function identityDocument(instance: Instance): string {
  const fields: Array<[string, string | null]> = [
    ['accountId', instance.accountId],
    ['architecture', instance.architecture],
    ['availabilityZone', instance.availabilityZone],
    ['billingProducts', null],
    ['devpayProductCodes', null],
    ['marketplaceProductCodes', null],
    ['imageId', instance.imageId],
    ['instanceId', instance.instanceId],
    ['instanceType', instance.instanceType],
    ['kernelId', null],
    ['pendingTime', new Date(instance.pendingTime).toISOString().replace(/\.\d{3}Z$/, 'Z')],
    ['privateIp', instance.privateIp],
    ['ramdiskId', null],
    ['region', instance.region],
    ['version', '2017-09-30'],
  ];
  return `{\n${fields.map(([k, v]) => `  ${JSON.stringify(k)} : ${JSON.stringify(v)}`).join(',\n')}\n}`;
}

function wrap64(base64: string): string {
  return base64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
}

function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
}

import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { createVerify, webcrypto, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { fromInstanceMetadata } from '@smithy/credential-provider-imds';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { Harness } from './test-support/harness';

const IDENTITY = '/latest/dynamic/instance-identity';

describe('cloud1 instance metadata service', () => {
  const h = new Harness();
  let accountId: string;
  let roleArn: string;
  const web = 'i-0123456789abcdef0';
  const worker = 'i-0fedcba9876543210';

  beforeAll(async () => {
    await h.start();
    accountId = h.account('123456789012').accountId;
    roleArn = h.emulator.createRole(accountId, { roleName: 'web-role', instanceProfile: true }).arn;
    h.emulator.createInstance({
      accountId,
      instanceId: web,
      imageId: 'ami-0abcdef1234567890',
      region: 'us-west-2',
      availabilityZone: 'us-west-2b',
      instanceType: 'c5.xlarge',
      privateIp: '172.31.38.89',
      instanceProfileName: 'web-role',
      pendingTime: '2026-05-04T03:02:01Z',
    });
    h.emulator.createInstance({ accountId, instanceId: worker });
    h.emulator.useInstance(web);
  });
  afterAll(() => h.stop());

  const token = async (base = h.endpoints.metadata, ttl = '60'): Promise<string> => {
    const response = await fetch(`${base}/latest/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': ttl } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-aws-ec2-metadata-token-ttl-seconds')).toBe(ttl);
    return response.text();
  };
  const get = async (path: string, metadataToken: string | undefined, base = h.endpoints.metadata) => {
    const response = await fetch(base + path, { headers: metadataToken === undefined ? {} : { 'x-aws-ec2-metadata-token': metadataToken } });
    return { status: response.status, text: await response.text() };
  };

  it('requires an IMDSv2 session token, bound to its instance and its TTL', async () => {
    expect((await get('/latest/meta-data/instance-id', undefined)).status).toBe(401);
    expect((await get('/latest/meta-data/instance-id', 'forged')).status).toBe(401);
    const noTtl = await fetch(`${h.endpoints.metadata}/latest/api/token`, { method: 'PUT' });
    expect(noTtl.status).toBe(400);
    const proxied = await fetch(`${h.endpoints.metadata}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60', 'x-forwarded-for': '10.0.0.1' },
    });
    expect(proxied.status).toBe(403);

    const t = await token();
    expect(await get('/latest/meta-data/instance-id', t)).toEqual({ status: 200, text: web });
    expect(await get('/latest/meta-data/placement/region', t)).toEqual({ status: 200, text: 'us-west-2' });
    expect(await get('/latest/meta-data/placement/availability-zone', t)).toEqual({ status: 200, text: 'us-west-2b' });
    expect((await get('/latest/meta-data/no-such-thing', t)).status).toBe(404);

    // Another instance, through a dedicated listener and through the path prefix.
    const workerUrl = await h.emulator.openMetadataEndpoint(worker);
    expect((await get('/latest/meta-data/instance-id', t, workerUrl)).status).toBe(401);
    expect(await get('/latest/meta-data/instance-id', await token(workerUrl), workerUrl)).toEqual({ status: 200, text: worker });
    const prefixed = `${h.endpoints.metadata}/instances/${worker}`;
    expect(await get('/latest/meta-data/instance-id', await token(prefixed), prefixed)).toEqual({ status: 200, text: worker });
    // A worker without an instance profile has no credentials to hand out.
    expect((await get('/latest/meta-data/iam/security-credentials/', await token(workerUrl), workerUrl)).status).toBe(404);

    h.emulator.advanceTime(61_000);
    try {
      expect((await get('/latest/meta-data/instance-id', t)).status).toBe(401);
    } finally {
      h.emulator.advanceTime(-61_000);
    }
  });

  it('serves the identity document and a signature that verifies with the emulator certificate', async () => {
    const t = await token();
    const document = (await get(`${IDENTITY}/document`, t)).text;
    expect(JSON.parse(document)).toEqual({
      accountId,
      architecture: 'x86_64',
      availabilityZone: 'us-west-2b',
      billingProducts: null,
      devpayProductCodes: null,
      marketplaceProductCodes: null,
      imageId: 'ami-0abcdef1234567890',
      instanceId: web,
      instanceType: 'c5.xlarge',
      kernelId: null,
      pendingTime: '2026-05-04T03:02:01Z',
      privateIp: '172.31.38.89',
      ramdiskId: null,
      region: 'us-west-2',
      version: '2017-09-30',
    });
    expect(document).toContain('"accountId" : "123456789012"');

    const signature = (await get(`${IDENTITY}/signature`, t)).text;
    const certificate = new X509Certificate(h.emulator.caCertificatePem());
    expect(certificate.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const verifier = createVerify('sha256').update(document);
    expect(verifier.verify(certificate.publicKey, Buffer.from(signature.replace(/\n/g, ''), 'base64'))).toBe(true);
    const admin = (await (await fetch(`${h.endpoints.admin}ca`)).json()) as { certificatePem: string };
    expect(admin.certificatePem).toBe(h.emulator.caCertificatePem());
  });

  it.each(['pkcs7', 'rsa2048'])('%s is a standard PKCS#7 SignedData that pkijs and openssl verify', async (endpoint) => {
    const t = await token();
    const document = (await get(`${IDENTITY}/document`, t)).text;
    const body = (await get(`${IDENTITY}/${endpoint}`, t)).text;
    expect(body).not.toContain('BEGIN');
    const der = Buffer.from(body.replace(/\n/g, ''), 'base64');

    // pkijs: the verifier supplies the registered certificate, as the auth method would.
    const contentInfo = pkijs.ContentInfo.fromBER(der);
    expect(contentInfo.contentType).toBe('1.2.840.113549.1.7.2');
    const signed = new pkijs.SignedData({ schema: contentInfo.content });
    const eContent = signed.encapContentInfo.eContent as asn1js.OctetString;
    expect(Buffer.from(eContent.getValue()).toString('utf8')).toBe(document);
    const caDer = new X509Certificate(h.emulator.caCertificatePem()).raw;
    signed.certificates = [pkijs.Certificate.fromBER(caDer)];
    const engine = new pkijs.CryptoEngine({ name: 'test', crypto: webcrypto as unknown as ConstructorParameters<typeof pkijs.CryptoEngine>[0]['crypto'] });
    expect(await signed.verify({ signer: 0, checkChain: false }, engine)).toBe(true);
    // A changed document no longer matches the signed digest.
    signed.encapContentInfo.eContent = new asn1js.OctetString({ valueHex: new TextEncoder().encode(document.replace(web, worker)).buffer });
    expect(await signed.verify({ signer: 0, checkChain: false }, engine).catch(() => false)).toBe(false);

    // openssl: the same structure is accepted by the standard tools.
    const dir = mkdtempSync(join(tmpdir(), 'cloud1-pkcs7-'));
    try {
      writeFileSync(join(dir, 'doc.p7'), der);
      writeFileSync(join(dir, 'ca.pem'), h.emulator.caCertificatePem());
      const viaCms = execFileSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', join(dir, 'doc.p7'), '-certfile', join(dir, 'ca.pem'), '-CAfile', join(dir, 'ca.pem')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(viaCms.toString('utf8')).toBe(document);
      const viaSmime = execFileSync('openssl', ['smime', '-verify', '-inform', 'DER', '-in', join(dir, 'doc.p7'), '-certfile', join(dir, 'ca.pem'), '-noverify'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(viaSmime.toString('utf8')).toBe(document);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hands out instance role credentials that the SDK provider accepts and the APIs honour', async () => {
    const t = await token();
    expect(await get('/latest/meta-data/iam/security-credentials/', t)).toEqual({ status: 200, text: 'web-role' });
    const info = JSON.parse((await get('/latest/meta-data/iam/info', t)).text) as { InstanceProfileArn: string };
    expect(info.InstanceProfileArn).toBe(`arn:aws:iam::${accountId}:instance-profile/web-role`);

    const previous = process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = h.endpoints.metadata;
    try {
      const credentials = await fromInstanceMetadata({ timeout: 2000, maxRetries: 0 })();
      expect(credentials.accessKeyId).toMatch(/^ASIA/);
      expect(credentials.sessionToken).toBeDefined();
      expect(credentials.expiration!.getTime()).toBeGreaterThan(Date.now() + 5 * 3600_000);

      const clients = h.clients(credentials, 'us-west-2');
      const identity = await clients.sts.send(new GetCallerIdentityCommand({}));
      expect(identity.Arn).toBe(`arn:aws:sts::${accountId}:assumed-role/web-role/${web}`);
      expect(roleArn).toBe(`arn:aws:iam::${accountId}:role/web-role`);
      const seen = await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: [web] }));
      expect(seen.Reservations?.[0]?.Instances?.[0]?.InstanceId).toBe(web);
    } finally {
      if (previous === undefined) delete process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
      else process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = previous;
    }
  });
});

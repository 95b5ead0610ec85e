import { request as httpRequest } from 'node:http';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { ListUsersCommand } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { Harness, sdkError } from './test-support/harness';
import type { Credentials } from './admin';

class Sha256 extends Hash {
  constructor(secret?: ConstructorParameters<typeof Hash>[1]) {
    super('sha256', secret);
  }
}

const BODY = 'Action=GetCallerIdentity&Version=2011-06-15';

/** Signs a GetCallerIdentity request the way an `iam` login client does, for a given Host. */
async function signLogin(credentials: Credentials, host: string, extraHeaders: Record<string, string> = {}, signingDate = new Date()) {
  const signer = new SignatureV4({ credentials, region: 'us-east-1', service: 'sts', sha256: Sha256 });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: 'https:',
      hostname: host,
      path: '/',
      query: {},
      headers: { host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8', ...extraHeaders },
      body: BODY,
    },
    { signingDate },
  );
  return signed.headers;
}

/** Sends raw bytes with exactly these headers, Host included, as a forwarding server would. */
function replay(url: string, method: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('cloud1 SigV4 verification', () => {
  const h = new Harness();
  let accountId: string;
  let user: { arn: string; accessKeys: Credentials[] };

  beforeAll(async () => {
    await h.start();
  });
  afterAll(() => h.stop());
  beforeEach(() => {
    h.emulator.reset();
    accountId = h.account().accountId;
    user = h.emulator.createUser(accountId, { userName: 'client', accessKeys: 1 });
  });

  it('refuses a request signed with the wrong secret or an unknown key', async () => {
    const key = user.accessKeys[0]!;
    const wrongSecret = h.clients({ accessKeyId: key.accessKeyId, secretAccessKey: 'A'.repeat(40) });
    expect(await sdkError(wrongSecret.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({
      name: 'SignatureDoesNotMatch',
      status: 403,
    });
    expect(await sdkError(wrongSecret.iam.send(new ListUsersCommand({})))).toMatchObject({ name: 'SignatureDoesNotMatch', status: 403 });
    const unknown = h.clients({ accessKeyId: 'AKIAAAAAAAAAAAAAAAAA', secretAccessKey: 'A'.repeat(40) });
    expect(await sdkError(unknown.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({ name: 'InvalidClientTokenId', status: 403 });
    // EC2 words it differently, as the provider does.
    expect(await sdkError(unknown.ec2.send(new DescribeInstancesCommand({})))).toMatchObject({ name: 'AuthFailure', status: 401 });
  });

  it('verifies a client-signed GetCallerIdentity forwarded verbatim, custom signed header and foreign Host included', async () => {
    const headers = await signLogin(user.accessKeys[0]!, 'sts.amazonaws.com', { 'x-service-cloud1-iam-server-id': 'vault.example.com' });
    expect(headers.authorization).toContain('x-service-cloud1-iam-server-id');

    const ok = await replay(h.endpoints.api, 'POST', headers, BODY);
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">');
    expect(ok.text).toContain(`<Arn>${user.arn}</Arn>`);
    expect(ok.text).toContain(`<Account>${accountId}</Account>`);

    const tamperedHeader = await replay(h.endpoints.api, 'POST', { ...headers, 'x-service-cloud1-iam-server-id': 'evil.example.com' }, BODY);
    expect(tamperedHeader.status).toBe(403);
    expect(tamperedHeader.text).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(tamperedHeader.text).toMatch(/^<ErrorResponse xmlns="https:\/\/sts\.amazonaws\.com\/doc\/2011-06-15\/"><Error><Type>Sender<\/Type>/);

    // The signed payload hash binds the body: swapping it is caught even with the signature intact.
    const swappedBody = await replay(h.endpoints.api, 'POST', headers, 'Action=GetSessionToken&Version=2011-06-15');
    expect(swappedBody.status).toBe(400);
    expect(swappedBody.text).toContain('XAmzContentSHA256Mismatch');
  });

  it('verifies a signed request replayed with plain fetch', async () => {
    const host = new URL(h.endpoints.api).host;
    const headers = await signLogin(user.accessKeys[0]!, host);
    const response = await fetch(h.endpoints.api + '/', { method: 'POST', headers, body: BODY });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain(`<Arn>${user.arn}</Arn>`);
    expect(response.headers.get('x-amzn-requestid')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('verifies a pre-signed (query string) GetCallerIdentity URL', async () => {
    const host = new URL(h.endpoints.api).host;
    const signer = new SignatureV4({ credentials: user.accessKeys[0]!, region: 'us-east-1', service: 'sts', sha256: Sha256 });
    const presigned = await signer.presign(
      { method: 'GET', protocol: 'http:', hostname: host, path: '/', query: { Action: 'GetCallerIdentity', Version: '2011-06-15' }, headers: { host } },
      { expiresIn: 60 },
    );
    const query = new URLSearchParams(presigned.query as Record<string, string>).toString();
    const response = await fetch(`${h.endpoints.api}/?${query}`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain(`<Arn>${user.arn}</Arn>`);
  });

  it('refuses signatures more than 15 minutes away from its clock, and unsigned requests', async () => {
    const host = new URL(h.endpoints.api).host;
    const old = await signLogin(user.accessKeys[0]!, host, {}, new Date(Date.now() - 16 * 60_000));
    const stale = await replay(h.endpoints.api, 'POST', old, BODY);
    expect(stale.status).toBe(403);
    expect(stale.text).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(stale.text).toContain('Signature expired');

    const unsigned = await fetch(h.endpoints.api + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: BODY,
    });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toContain('<Code>MissingAuthenticationToken</Code>');
  });
});

describe('cloud1 emulator with an injected clock', () => {
  const h = new Harness();
  const start = Date.UTC(2030, 0, 1);
  let now = start;

  beforeAll(async () => {
    await h.start({ clock: { now: () => now } });
  });
  afterAll(() => h.stop());

  it('SDK clients adopt the emulator time from the Date header and succeed', async () => {
    const { root } = h.account();
    const clients = h.clients(root);
    const identity = await clients.sts.send(new GetCallerIdentityCommand({}));
    expect(identity.$metadata.attempts).toBe(2);
    expect(h.emulator.now()).toBe(start);
    now += 60_000;
    h.emulator.advanceTime(30_000);
    expect(h.emulator.now()).toBe(start + 90_000);
  });
});

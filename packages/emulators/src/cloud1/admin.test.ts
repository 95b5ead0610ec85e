import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { GetSessionTokenCommand, GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { runCli } from '../cli';
import type { InstanceInfo, SeedDocument, SeedResult } from './admin';
import { Harness, sdkClients, sdkError, type Clients } from './test-support/harness';

describe('cloud1 admin API over HTTP', () => {
  const h = new Harness();

  beforeAll(async () => {
    await h.start();
  });
  afterAll(() => h.stop());
  beforeEach(() => h.emulator.reset());

  const call = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> => {
    const response = await fetch(h.endpoints.admin + path, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as T };
  };

  it('seeds an account, its principals and an instance that the SDK then sees', async () => {
    expect((await call<{ accountId: string }>('POST', 'accounts', { id: '210987654321' })).json).toEqual({ accountId: '210987654321' });
    const root = (await call<{ accessKeyId: string; secretAccessKey: string }>('POST', 'accounts/210987654321/root-credentials')).json;
    expect(root.accessKeyId).toMatch(/^AKIA/);
    const user = (await call<{ arn: string; accessKeys: Array<{ accessKeyId: string; secretAccessKey: string }> }>('POST', 'accounts/210987654321/users', {
      userName: 'ops',
      path: '/team/',
      accessKeys: 1,
    })).json;
    expect(user.arn).toBe('arn:aws:iam::210987654321:user/team/ops');
    const second = (await call<{ accessKeyId: string }>('POST', 'accounts/210987654321/users/ops/access-keys')).json;
    expect(second.accessKeyId).toMatch(/^AKIA/);
    const third = await call<{ error: { code: string } }>('POST', 'accounts/210987654321/users/ops/access-keys');
    expect(third).toEqual({ status: 409, json: { error: { code: 'LimitExceeded', message: 'Cannot exceed quota for AccessKeysPerUser: 2' } } });

    const role = (await call<{ instanceProfileName: string }>('POST', 'accounts/210987654321/roles', { roleName: 'app', instanceProfile: true })).json;
    const instance = (await call<InstanceInfo>('POST', 'instances', {
      accountId: '210987654321',
      instanceProfileName: role.instanceProfileName,
      tags: { Name: 'app-1' },
    })).json;
    expect(instance).toMatchObject({ state: 'running', region: 'us-east-1', roleArn: 'arn:aws:iam::210987654321:role/app', tags: { Name: 'app-1' } });
    const stopped = (await call<InstanceInfo>('POST', `instances/${instance.instanceId}/state`, { state: 'stopped' })).json;
    expect(stopped.state).toBe('stopped');
    expect((await call<InstanceInfo>('GET', `instances/${instance.instanceId}`)).json.state).toBe('stopped');

    const sdk = h.clients(user.accessKeys[0]!);
    const seen = await sdk.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instance.instanceId] }));
    expect(seen.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('stopped');

    // The metadata listener follows the current-instance selection.
    await call('POST', 'metadata/current-instance', { instanceId: instance.instanceId });
    const token = await (await fetch(`${h.endpoints.metadata}/latest/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '10' } })).text();
    const id = await (await fetch(`${h.endpoints.metadata}/latest/meta-data/instance-id`, { headers: { 'x-aws-ec2-metadata-token': token } })).text();
    expect(id).toBe(instance.instanceId);
    const dedicated = (await call<{ url: string }>('POST', `instances/${instance.instanceId}/metadata-endpoint`)).json.url;
    expect(dedicated).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('creates MFA devices, tells the expected code, and moves the clock', async () => {
    const seeded = (await call<SeedResult>('POST', 'seed', {
      accounts: [{ id: '333333333333', users: [{ userName: 'm', accessKeys: 1, mfaDevices: [{ serialNumber: 'GAHT00000001', fixedCode: '424242' }] }] }],
    } satisfies SeedDocument)).json;
    const user = seeded.accounts[0]!.users[0]!;
    expect(user.mfaDevices).toEqual([{ serialNumber: 'GAHT00000001' }]);
    const totp = (await call<{ serialNumber: string; totpSecret: string }>('POST', 'accounts/333333333333/mfa-devices', { userName: 'm' })).json;
    const code = (await call<{ code: string }>('POST', 'mfa-code', { serialNumber: totp.serialNumber })).json.code;
    expect(code).toMatch(/^\d{6}$/);
    const sdk = h.clients(user.accessKeys[0]!);
    await sdk.sts.send(new GetSessionTokenCommand({ SerialNumber: totp.serialNumber, TokenCode: code }));
    await sdk.sts.send(new GetSessionTokenCommand({ SerialNumber: 'GAHT00000001', TokenCode: '424242' }));

    const before = (await call<{ epochMs: number }>('GET', 'clock')).json.epochMs;
    const after = (await call<{ epochMs: number }>('POST', 'clock', { advanceSeconds: 3600 })).json.epochMs;
    expect(after - before).toBeGreaterThanOrEqual(3600_000);
    // The SDK follows the emulator's Date header, so calls keep working after the jump.
    expect((await sdk.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe('arn:aws:iam::333333333333:user/m');
    await call('POST', 'clock', { epochMs: Date.now() });
  });

  it('answers unknown routes, entities and bad JSON with JSON errors, and resets', async () => {
    expect((await call<{ error: { code: string } }>('GET', 'nowhere')).status).toBe(404);
    expect((await call<{ error: { code: string } }>('POST', 'accounts/999999999999/users', { userName: 'x' })).json.error.code).toBe('NoSuchEntity');
    const bad = await fetch(`${h.endpoints.admin}accounts`, { method: 'POST', body: '{' });
    expect(bad.status).toBe(400);
    expect((await call<{ api: string }>('GET', 'endpoints')).json.api).toBe(h.endpoints.api);

    const { root } = h.account('444444444444');
    const sdk = h.clients(root);
    await sdk.sts.send(new GetCallerIdentityCommand({}));
    await call('POST', 'reset');
    expect(await sdkError(sdk.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({ name: 'InvalidClientTokenId' });
  });
});

describe('strongroom-emulator cloud1 CLI', () => {
  it('starts from a seed file and prints endpoints and working root credentials', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cloud1-cli-'));
    const seedFile = join(dir, 'seed.json');
    const seed: SeedDocument = {
      accounts: [
        {
          id: '555555555555',
          rootCredentials: { accessKeyId: 'AKIADEMO000000000001', secretAccessKey: 'demo-secret-key-0000000000000000000000000' },
          instances: [{ instanceId: 'i-0abcdefabcdefabcd', tags: { Name: 'demo' } }],
        },
      ],
      currentInstance: 'i-0abcdefabcdefabcd',
    };
    writeFileSync(seedFile, JSON.stringify(seed));
    let printed = '';
    const running = await runCli(['cloud1', '--listen', '127.0.0.1:0', '--seed', seedFile], { write: (t: string) => (printed += t) });
    let clients: Clients | undefined;
    try {
      expect(running).toBeDefined();
      expect(printed).toContain('CLOUD1_ACCESS_KEY=AKIADEMO000000000001');
      expect(printed).toContain('account 555555555555 root credentials:');
      const api = /api \(IAM, STS, EC2\): (\S+)/.exec(printed)?.[1];
      expect(api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      clients = sdkClients(api!, { accessKeyId: 'AKIADEMO000000000001', secretAccessKey: 'demo-secret-key-0000000000000000000000000' });
      const seen = await clients.ec2.send(new DescribeInstancesCommand({}));
      expect(seen.Reservations?.[0]?.Instances?.[0]?.InstanceId).toBe('i-0abcdefabcdefabcd');
    } finally {
      if (clients) for (const client of Object.values(clients)) client.destroy();
      await running?.stop();
      rmSync(dir, { recursive: true, force: true });
    }

    let usage = '';
    expect(await runCli(['gcs'], { write: () => 0 }, { write: (t: string) => (usage += t) })).toBeUndefined();
    expect(usage).toContain('usage: strongroom-emulator cloud1 --listen');
  });
});

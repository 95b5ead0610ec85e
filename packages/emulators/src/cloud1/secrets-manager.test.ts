import {
  CreateSecretCommand,
  DeleteSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  ListSecretsCommand,
  PutSecretValueCommand,
  RestoreSecretCommand,
  SecretsManagerClient,
  TagResourceCommand,
  UpdateSecretCommand,
} from '@aws-sdk/client-secrets-manager';
import type { Credentials } from './admin';
import { Harness, sdkError } from './test-support/harness';

describe('cloud1 Secrets Manager', () => {
  const h = new Harness();
  const opened: SecretsManagerClient[] = [];
  const client = (credentials: Credentials, region = 'us-east-1', maxAttempts = 1): SecretsManagerClient => {
    const sm = new SecretsManagerClient({ endpoint: h.endpoints.api, region, credentials, maxAttempts });
    opened.push(sm);
    return sm;
  };

  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    for (const sm of opened) sm.destroy();
    await h.stop();
  });
  beforeEach(() => {
    h.emulator.reset();
    h.emulator.setTime(Date.now());
  });

  it('creates, updates as new versions, reads and force-deletes a secret', async () => {
    const { accountId, root } = h.account();
    const sm = client(root);
    const created = await sm.send(
      new CreateSecretCommand({ Name: 'app/db', SecretString: '{"password":"one"}', Tags: [{ Key: 'owner', Value: 'sync' }] }),
    );
    expect(created.ARN).toMatch(new RegExp(`^arn:aws:secretsmanager:us-east-1:${accountId}:secret:app/db-[A-Za-z0-9]{6}$`));
    expect(created.Name).toBe('app/db');

    const put = await sm.send(new PutSecretValueCommand({ SecretId: 'app/db', SecretString: '{"password":"two"}' }));
    expect(put.VersionStages).toEqual(['AWSCURRENT']);
    expect(put.VersionId).not.toBe(created.VersionId);
    const updated = await sm.send(new UpdateSecretCommand({ SecretId: created.ARN, SecretString: '{"password":"three"}', Description: 'd' }));

    const read = await sm.send(new GetSecretValueCommand({ SecretId: 'app/db' }));
    expect(read).toMatchObject({ SecretString: '{"password":"three"}', VersionId: updated.VersionId, VersionStages: ['AWSCURRENT'] });
    expect(read.CreatedDate).toBeInstanceOf(Date);
    const previous = await sm.send(new GetSecretValueCommand({ SecretId: 'app/db', VersionStage: 'AWSPREVIOUS' }));
    expect(previous.SecretString).toBe('{"password":"two"}');
    const first = await sm.send(new GetSecretValueCommand({ SecretId: 'app/db', VersionId: created.VersionId }));
    expect(first.SecretString).toBe('{"password":"one"}');

    const described = await sm.send(new DescribeSecretCommand({ SecretId: 'app/db' }));
    expect(described).toMatchObject({ Name: 'app/db', Description: 'd', Tags: [{ Key: 'owner', Value: 'sync' }] });
    expect(described.VersionIdsToStages).toEqual({ [put.VersionId!]: ['AWSPREVIOUS'], [updated.VersionId!]: ['AWSCURRENT'] });

    const deleted = await sm.send(new DeleteSecretCommand({ SecretId: 'app/db', ForceDeleteWithoutRecovery: true }));
    expect(deleted.DeletionDate).toBeInstanceOf(Date);
    expect(await sdkError(sm.send(new GetSecretValueCommand({ SecretId: 'app/db' })))).toMatchObject({
      name: 'ResourceNotFoundException',
      status: 400,
    });
  });

  it('answers a retried write with the same version and refuses to change a version', async () => {
    const { root } = h.account();
    const sm = client(root);
    const token = '11111111-2222-3333-4444-555555555555';
    const create = new CreateSecretCommand({ Name: 'idem', SecretString: 'v1', ClientRequestToken: token });
    const first = await sm.send(create);
    expect(await sm.send(create)).toMatchObject({ VersionId: token, ARN: first.ARN });

    const putToken = '66666666-2222-3333-4444-555555555555';
    const put = new PutSecretValueCommand({ SecretId: 'idem', SecretString: 'v2', ClientRequestToken: putToken });
    await sm.send(put);
    await sm.send(put);
    const secret = h.emulator.secretsManagerSecrets()[0];
    expect(secret?.versions.map((v) => v.secretString)).toEqual(['v1', 'v2']);
    expect(
      await sdkError(sm.send(new PutSecretValueCommand({ SecretId: 'idem', SecretString: 'other', ClientRequestToken: putToken }))),
    ).toMatchObject({ name: 'ResourceExistsException', status: 400 });
  });

  it('refuses an existing name, missing secrets and secrets scheduled for deletion', async () => {
    const { root } = h.account();
    const sm = client(root);
    await sm.send(new CreateSecretCommand({ Name: 'taken', SecretString: 'x' }));
    const exists = await sdkError(sm.send(new CreateSecretCommand({ Name: 'taken', SecretString: 'y' })));
    expect(exists).toMatchObject({ name: 'ResourceExistsException', status: 400 });
    expect(exists.message).toContain('taken');

    for (const command of [
      new GetSecretValueCommand({ SecretId: 'missing' }),
      new PutSecretValueCommand({ SecretId: 'missing', SecretString: 'x' }),
      new DescribeSecretCommand({ SecretId: 'missing' }),
      new DeleteSecretCommand({ SecretId: 'missing', ForceDeleteWithoutRecovery: true }),
    ]) {
      expect(await sdkError(sm.send(command as GetSecretValueCommand))).toMatchObject({ name: 'ResourceNotFoundException' });
    }

    const scheduled = await sm.send(new DeleteSecretCommand({ SecretId: 'taken', RecoveryWindowInDays: 7 }));
    expect(scheduled.DeletionDate!.getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect(await sdkError(sm.send(new GetSecretValueCommand({ SecretId: 'taken' })))).toMatchObject({ name: 'InvalidRequestException' });
    expect(await sdkError(sm.send(new PutSecretValueCommand({ SecretId: 'taken', SecretString: 'z' })))).toMatchObject({
      name: 'InvalidRequestException',
    });
    expect(await sdkError(sm.send(new CreateSecretCommand({ Name: 'taken', SecretString: 'z' })))).toMatchObject({
      name: 'InvalidRequestException',
    });
    expect((await sm.send(new ListSecretsCommand({}))).SecretList).toEqual([]);
    expect((await sm.send(new ListSecretsCommand({ IncludePlannedDeletion: true }))).SecretList?.map((s) => s.Name)).toEqual(['taken']);

    await sm.send(new RestoreSecretCommand({ SecretId: 'taken' }));
    expect((await sm.send(new GetSecretValueCommand({ SecretId: 'taken' }))).SecretString).toBe('x');

    // The recovery window passing purges the secret, and its name is free again.
    await sm.send(new DeleteSecretCommand({ SecretId: 'taken', RecoveryWindowInDays: 7 }));
    h.emulator.advanceTime(8 * 86_400_000);
    const late = client(root, 'us-east-1', 2);
    expect(await sdkError(late.send(new DescribeSecretCommand({ SecretId: 'taken' })))).toMatchObject({ name: 'ResourceNotFoundException' });
    await late.send(new CreateSecretCommand({ Name: 'taken', SecretString: 'again' }));
  });

  it('checks names, sizes and request fields as the provider does', async () => {
    const { root } = h.account();
    const sm = client(root);
    expect(await sdkError(sm.send(new CreateSecretCommand({ Name: 'has space', SecretString: 'x' })))).toMatchObject({
      name: 'InvalidParameterException',
      status: 400,
    });
    expect(await sdkError(sm.send(new CreateSecretCommand({ Name: 'a'.repeat(513), SecretString: 'x' })))).toMatchObject({
      name: 'ValidationException',
    });
    await sm.send(new CreateSecretCommand({ Name: 'a'.repeat(512) }));
    await sm.send(new CreateSecretCommand({ Name: 'ok/_+=.@-Name1' }));

    const tooBig = await sdkError(sm.send(new CreateSecretCommand({ Name: 'big', SecretString: 's'.repeat(65537) })));
    expect(tooBig).toMatchObject({ name: 'ValidationException' });
    expect(tooBig.message).not.toContain('sss');
    await sm.send(new CreateSecretCommand({ Name: 'big', SecretString: 's'.repeat(65536) }));

    expect(
      await sdkError(sm.send(new CreateSecretCommand({ Name: 'both', SecretString: 'x', SecretBinary: Buffer.from('y') }))),
    ).toMatchObject({ name: 'InvalidParameterException' });
    expect(await sdkError(sm.send(new PutSecretValueCommand({ SecretId: 'big' })))).toMatchObject({ name: 'InvalidRequestException' });
    expect(
      await sdkError(sm.send(new DeleteSecretCommand({ SecretId: 'big', ForceDeleteWithoutRecovery: true, RecoveryWindowInDays: 7 }))),
    ).toMatchObject({ name: 'InvalidParameterException' });
    expect(await sdkError(sm.send(new DeleteSecretCommand({ SecretId: 'big', RecoveryWindowInDays: 3 })))).toMatchObject({
      name: 'InvalidParameterException',
    });
    const manyTags = Array.from({ length: 51 }, (_, i) => ({ Key: `k${i}`, Value: 'v' }));
    expect(await sdkError(sm.send(new TagResourceCommand({ SecretId: 'big', Tags: manyTags })))).toMatchObject({
      name: 'ValidationException',
    });
  });

  it('verifies signatures and keeps accounts and regions apart', async () => {
    const { root } = h.account();
    const other = h.account();
    await client(root).send(new CreateSecretCommand({ Name: 'mine', SecretString: 'x' }));

    const wrongSecret = client({ accessKeyId: root.accessKeyId, secretAccessKey: 'not-the-secret-0000000000000000000000000' });
    expect(await sdkError(wrongSecret.send(new GetSecretValueCommand({ SecretId: 'mine' })))).toMatchObject({
      name: 'InvalidSignatureException',
      status: 400,
    });
    const unknownKey = client({ accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: root.secretAccessKey });
    expect(await sdkError(unknownKey.send(new GetSecretValueCommand({ SecretId: 'mine' })))).toMatchObject({
      name: 'UnrecognizedClientException',
    });
    expect(await sdkError(client(other.root).send(new GetSecretValueCommand({ SecretId: 'mine' })))).toMatchObject({
      name: 'ResourceNotFoundException',
    });
    expect(await sdkError(client(root, 'eu-west-1').send(new GetSecretValueCommand({ SecretId: 'mine' })))).toMatchObject({
      name: 'ResourceNotFoundException',
    });

    const unsigned = await fetch(h.endpoints.api, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' },
      body: JSON.stringify({ SecretId: 'mine' }),
    });
    expect(unsigned.status).toBe(400);
    expect(unsigned.headers.get('x-amzn-errortype')).toBe('MissingAuthenticationTokenException');
    expect(await unsigned.json()).toMatchObject({ __type: 'MissingAuthenticationTokenException' });
  });

  it('shows every secret with its values to the admin API and injects failures', async () => {
    const { accountId, root } = h.account();
    const sm = client(root);
    await sm.send(new CreateSecretCommand({ Name: 'seen', SecretString: 'one', Tags: [{ Key: 't', Value: 'v' }] }));
    await sm.send(new PutSecretValueCommand({ SecretId: 'seen', SecretString: 'two' }));

    const viewed = (await (await fetch(`${h.endpoints.admin}secretsmanager/secrets`)).json()) as { secrets: unknown[] };
    expect(viewed.secrets).toEqual([
      expect.objectContaining({
        accountId,
        region: 'us-east-1',
        name: 'seen',
        tags: { t: 'v' },
        versions: [
          expect.objectContaining({ secretString: 'one', stages: ['AWSPREVIOUS'] }),
          expect.objectContaining({ secretString: 'two', stages: ['AWSCURRENT'] }),
        ],
      }),
    ]);

    const armed = await fetch(`${h.endpoints.admin}secretsmanager/fail-next`, {
      method: 'POST',
      body: JSON.stringify({ count: 2, status: 503 }),
    });
    expect(armed.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      expect(await sdkError(sm.send(new GetSecretValueCommand({ SecretId: 'seen' })))).toMatchObject({ status: 503 });
    }
    expect((await sm.send(new GetSecretValueCommand({ SecretId: 'seen' }))).SecretString).toBe('two');

    // The SDK's own retries ride out a shorter outage.
    h.emulator.failNextSecretsManagerRequests(1);
    expect((await client(root, 'us-east-1', 3).send(new GetSecretValueCommand({ SecretId: 'seen' }))).SecretString).toBe('two');
    const refused = await fetch(`${h.endpoints.admin}secretsmanager/fail-next`, { method: 'POST', body: JSON.stringify({}) });
    expect(refused.status).toBe(400);
  });
});

import { DeleteSecretCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Cloud1Emulator } from '@strongroom/emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';
import { eventually, operatorSettings } from './test-support/sync-support';

/** The periodic reconciliation on a real server against the cloud1-sm emulator: out-of-band changes are put back. */
describe('secret sync reconciliation over HTTP', () => {
  let t: TestServer;
  let root: string;
  let cloud1: Cloud1Emulator;
  let sm: SecretsManagerClient;
  const settings = operatorSettings();
  const env = settings.set;

  beforeAll(async () => {
    cloud1 = new Cloud1Emulator();
    const { api } = await cloud1.start({ listen: '127.0.0.1:0' });
    // Operator settings, read when the server starts: a reconciliation every second.
    env('AWS_ENDPOINT_URL_SECRETS_MANAGER', api);
    env('STRONGROOM_SYNC_RECONCILE_INTERVAL', '1s');
    t = await startTestServer();
    root = await initAndUnseal(t);
  }, 60_000);
  afterAll(async () => {
    sm?.destroy();
    await t?.stop();
    await cloud1?.stop();
    settings.restore();
  });

  const send = (method: string, path: string, body?: unknown) => call(t.url, method, path, { token: root, ...(body !== undefined ? { body } : {}) });

  it('puts back a value changed at the destination, and a secret deleted there', async () => {
    const { accountId } = cloud1.createAccount({});
    const keys = cloud1.issueRootCredentials(accountId);
    sm = new SecretsManagerClient({ endpoint: cloud1.endpoints.api, region: 'us-east-1', credentials: keys, maxAttempts: 1 });
    await send('POST', 'sys/sync/destinations/cloud1-sm/aws', { access_key_id: keys.accessKeyId, secret_access_key: keys.secretAccessKey, region: 'us-east-1' });
    const accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
    const name = `vault/${accessor}/app/db`;
    const atCloud1 = () => cloud1.secretsManagerSecrets().find((s) => s.name === name);
    const current = () => atCloud1()?.versions.find((v) => v.stages.includes('AWSCURRENT'))?.secretString;
    const want = JSON.stringify({ password: 'one' });

    await send('POST', 'secret/data/app/db', { data: { password: 'one' } });
    expect((await send('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount: 'secret', secret_name: 'app/db' })).status).toBe(200);
    await eventually('the first sync', current, (v) => v === want);
    await eventually('SYNCED', () => send('GET', 'sys/sync/destinations/cloud1-sm/aws/associations'),
      (r) => r.json.data.associated_secrets[`${accessor}/app/db`]?.sync_status === 'SYNCED');

    // Someone changes the value at the cloud, out of band.
    await sm.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'changed by hand' }));
    expect(current()).toBe('changed by hand');
    await eventually('the value put back', current, (v) => v === want);
    // Rounds that find nothing changed write nothing: the put-back is the one version after the change.
    await new Promise((r) => setTimeout(r, 2500));
    expect(atCloud1()?.versions.map((v) => v.secretString)).toEqual([want, 'changed by hand', want]);

    await sm.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
    await eventually('the secret created again', current, (v) => v === want);
  }, 60_000);
});

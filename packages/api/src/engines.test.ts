import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

/** The server offers every engine, by the type names clients mount them with. */
describe('engines of the server', () => {
  let t: TestServer;
  let root: string;

  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
  });
  afterAll(async () => {
    await t.stop();
  });

  it('mounts the cloud1 auth method and the cloud1 secrets engine side by side', async () => {
    expect((await call(t.url, 'POST', 'sys/auth/cloud1', { token: root, body: { type: 'cloud1' } })).status).toBe(204);
    expect((await call(t.url, 'POST', 'sys/mounts/cloud1', { token: root, body: { type: 'cloud1' } })).status).toBe(204);
    const auths = await call(t.url, 'GET', 'sys/auth', { token: root });
    const mounts = await call(t.url, 'GET', 'sys/mounts', { token: root });
    expect(auths.json.data['cloud1/']).toMatchObject({ type: 'cloud1' });
    expect(mounts.json.data['cloud1/']).toMatchObject({ type: 'cloud1' });
    // Each answers its own paths.
    expect((await call(t.url, 'GET', 'auth/cloud1/config/client', { token: root })).status).toBeLessThan(500);
    expect((await call(t.url, 'GET', 'cloud1/config/lease', { token: root })).status).toBeLessThan(500);
    expect((await call(t.url, 'POST', 'sys/mounts/transit', { token: root, body: { type: 'transit' } })).status).toBe(204);
  });

  it('refuses an engine type that is not offered for that kind of mount', async () => {
    const wrongKind = await call(t.url, 'POST', 'sys/auth/tr', { token: root, body: { type: 'transit' } });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.json.errors[0]).toMatch(/auth method type "transit" is not available/);
  });
});

import { combineShares } from '@strongroom/core';
import { call } from '../test-support/servers';
import { relay, sealedServer, startUnsealer, transitStanza, until, type SealedServer } from '../test-support/auto-unseal';

let unsealer: Awaited<ReturnType<typeof startUnsealer>>;
let node: SealedServer;

beforeAll(async () => {
  unsealer = await startUnsealer();
});
afterAll(async () => {
  await unsealer?.stop();
});
beforeEach(() => {
  node = sealedServer();
});
afterEach(async () => {
  await node.remove();
});

const combineSharesForTest = (shares: string[]) => combineShares(shares.map((s) => Buffer.from(s, 'base64')));
const status = async () => (await call(node.url, 'GET', 'sys/seal-status')).json as Record<string, unknown>;
const activeAndUnsealed = () => until('the node to unseal itself and serve', 60_000, async () => {
  const health = await call(node.url, 'GET', 'sys/health');
  return health.status === 200 ? true : undefined;
});

test('init makes recovery keys, the node unseals itself at once and after a restart, and seal-status says so', async () => {
  await node.start(transitStanza(unsealer));
  expect(await status()).toMatchObject({ type: 'transit', initialized: false, sealed: true });
  const init = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 3, recovery_threshold: 2 } });
  expect(init.status).toBe(200);
  expect(init.json.keys).toEqual([]);
  expect(init.json.keys_base64).toEqual([]);
  expect(init.json.recovery_keys).toHaveLength(3);
  expect(init.json.recovery_keys_base64).toHaveLength(3);
  const token = init.json.root_token as string;
  await activeAndUnsealed();
  expect(await status()).toMatchObject({ type: 'transit', initialized: true, sealed: false, t: 2, n: 3, recovery_seal: true, migration: false });
  await call(node.url, 'POST', 'sys/mounts/kv', { token, body: { type: 'kv' } });
  expect((await call(node.url, 'PUT', 'kv/app', { token, body: { password: 'kept-across-restarts' } })).status).toBe(204);

  await node.stop();
  await node.start(transitStanza(unsealer));
  await activeAndUnsealed();
  expect((await call(node.url, 'GET', 'kv/app', { token })).json.data).toEqual({ password: 'kept-across-restarts' });

  // What operators hold authorizes (generate-root's check), and nothing else does.
  const core = node.server!.core;
  const recovery = await combineSharesForTest((init.json.recovery_keys_base64 as string[]).slice(0, 2));
  expect(await core.seal.checkCombinedKey(recovery)).toBe(true);
  expect(await core.seal.checkCombinedKey(Buffer.alloc(32, 7))).toBe(false);
  // The token never reaches the log.
  expect(node.logger.lines.join('\n')).not.toContain(unsealer.token);
});

test('bad init and unseal requests get a 400 naming the field', async () => {
  await node.start(transitStanza(unsealer));
  const missing = await call(node.url, 'PUT', 'sys/init', { body: { secret_shares: 1, secret_threshold: 1 } });
  expect(missing.status).toBe(400);
  expect(missing.json.errors[0]).toMatch(/recovery_shares/);
  const threshold = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 3, recovery_threshold: 4 } });
  expect(threshold.status).toBe(400);
  expect(threshold.json.errors[0]).toMatch(/recovery_threshold/);
  const pgp = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1, recovery_pgp_keys: ['abc'] } });
  expect(pgp.status).toBe(400);
  expect(pgp.json.errors[0]).toMatch(/recovery_pgp_keys/);
  expect(await status()).toMatchObject({ initialized: false });

  const init = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } });
  await activeAndUnsealed();
  await call(node.url, 'PUT', 'sys/seal', { token: init.json.root_token });
  const unseal = await call(node.url, 'PUT', 'sys/unseal', { body: { key: init.json.recovery_keys_base64[0] } });
  expect(unseal.status).toBe(400);
  expect(unseal.json.errors[0]).toMatch(/unseals itself/);
  const migrate = await call(node.url, 'PUT', 'sys/unseal', { body: { key: init.json.recovery_keys_base64[0], migrate: true } });
  expect(migrate.status).toBe(400);
  expect(migrate.json.errors[0]).toMatch(/migrate/);
});

test('with the unsealer down at start the node serves seal-status as sealed, logs why, and unseals once it is back', async () => {
  const link = await relay(unsealer.url);
  await node.start(transitStanza({ url: link.url, token: unsealer.token }));
  const init = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } });
  expect(init.status).toBe(200);
  await activeAndUnsealed();
  await node.stop();

  await link.shut();
  await node.start(transitStanza({ url: link.url, token: unsealer.token }));
  await until('a logged auto-unseal failure', 30_000, async () => (node.logger.lines.some((l) => l.includes('auto-unseal failed') && l.includes('connection refused') && l.includes(link.url)) ? true : undefined));
  expect(await status()).toMatchObject({ initialized: true, sealed: true, type: 'transit' });
  await link.open();
  await activeAndUnsealed();
  expect(node.logger.lines.join('\n')).not.toContain(unsealer.token);
  await link.shut();
});

test('migration from Shamir to transit and back keeps the data, with seal-status showing it pending', async () => {
  await node.start();
  const init = await call(node.url, 'PUT', 'sys/init', { body: { secret_shares: 3, secret_threshold: 2 } });
  const keys = init.json.keys_base64 as string[];
  const token = init.json.root_token as string;
  for (const key of keys.slice(0, 2)) await call(node.url, 'PUT', 'sys/unseal', { body: { key } });
  await activeAndUnsealed();
  await call(node.url, 'POST', 'sys/mounts/kv', { token, body: { type: 'kv' } });
  await call(node.url, 'PUT', 'kv/app', { token, body: { password: 'migrated' } });
  await node.stop();

  // Shamir -> transit: the unseal keys, with migrate, once; they are the recovery keys after.
  await node.start(transitStanza(unsealer));
  expect(await status()).toMatchObject({ type: 'shamir', sealed: true, migration: true, t: 2, n: 3 });
  const plain = await call(node.url, 'PUT', 'sys/unseal', { body: { key: keys[0] } });
  expect(plain.status).toBe(400);
  expect(plain.json.errors[0]).toMatch(/migrat/);
  for (const key of keys.slice(1, 3)) expect((await call(node.url, 'PUT', 'sys/unseal', { body: { key, migrate: true } })).status).toBe(200);
  await activeAndUnsealed();
  expect(await status()).toMatchObject({ type: 'transit', recovery_seal: true, migration: false, t: 2, n: 3 });
  expect((await call(node.url, 'GET', 'kv/app', { token })).json.data).toEqual({ password: 'migrated' });
  await node.stop();
  await node.start(transitStanza(unsealer));
  await activeAndUnsealed();
  expect(await node.server!.core.seal.checkCombinedKey(await combineSharesForTest(keys.slice(0, 2)))).toBe(true);
  await node.stop();

  // Transit -> Shamir: the seal marked disabled, the recovery keys with migrate; they unseal it after.
  await node.start(transitStanza(unsealer, { disabled: 'true' }));
  expect(await status()).toMatchObject({ type: 'transit', sealed: true, migration: true, recovery_seal: true });
  for (const key of [keys[2], keys[0]]) expect((await call(node.url, 'PUT', 'sys/unseal', { body: { key, migrate: true } })).status).toBe(200);
  await activeAndUnsealed();
  expect(await status()).toMatchObject({ type: 'shamir', recovery_seal: false, migration: false, t: 2, n: 3 });
  await node.stop();
  await node.start();
  expect(await status()).toMatchObject({ type: 'shamir', sealed: true, migration: false });
  for (const key of keys.slice(0, 2)) await call(node.url, 'PUT', 'sys/unseal', { body: { key } });
  await activeAndUnsealed();
  expect((await call(node.url, 'GET', 'kv/app', { token })).json.data).toEqual({ password: 'migrated' });
});

test('a stored transit seal the config no longer names is refused with a pointer, not unsealed', async () => {
  await node.start(transitStanza(unsealer));
  const init = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } });
  await activeAndUnsealed();
  await node.stop();
  await node.start();
  expect(await status()).toMatchObject({ type: 'transit', sealed: true });
  const unseal = await call(node.url, 'PUT', 'sys/unseal', { body: { key: init.json.recovery_keys_base64[0] } });
  expect(unseal.status).toBe(400);
  expect(unseal.json.errors[0]).toMatch(/disabled = "true"/);
});

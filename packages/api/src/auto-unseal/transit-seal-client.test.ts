import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, TransitSeal, type TransitSealOptions } from '@strongroom/core';
import { makeSelfSignedCert } from '../test-support/tls';
import { recordingLogger, sealedServer, startUnsealer, transitStanza, until } from '../test-support/auto-unseal';
import { call } from '../test-support/servers';

let dir: string;
let cert: { cert: string; key: string };
let unsealer: Awaited<ReturnType<typeof startUnsealer>>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-transit-tls-'));
  cert = makeSelfSignedCert(dir);
  unsealer = await startUnsealer({ tlsDisable: false, tlsCertFile: cert.cert, tlsKeyFile: cert.key });
});
afterAll(async () => {
  await unsealer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function seal(options: Partial<TransitSealOptions> = {}): TransitSeal {
  return new TransitSeal({
    address: unsealer.url, token: unsealer.token, keyName: 'autounseal', mountPath: 'transit',
    clock: new FakeClock(0), logger: recordingLogger(), disableRenewal: true, ...options,
  });
}

test('the tls_* settings are honoured: the CA, the server name, skip-verify', async () => {
  const root = Buffer.alloc(32, 9);
  await expect(seal().wrap(root)).rejects.toThrow(`the transit seal at ${unsealer.url} cannot be reached: certificate not trusted`);
  const trusted = seal({ tlsCaCert: readFileSync(cert.cert, 'utf8') });
  const wrapped = await trusted.wrap(root);
  expect(wrapped).toMatch(/^vault:v1:/);
  expect(await trusted.unwrap(wrapped)).toEqual(root);
  await expect(seal({ tlsCaCert: readFileSync(cert.cert, 'utf8'), tlsServerName: 'elsewhere.example' }).wrap(root))
    .rejects.toThrow(/does not name this host; set tls_server_name/);
  expect(await seal({ tlsCaCert: readFileSync(cert.cert, 'utf8'), tlsServerName: 'localhost' }).unwrap(wrapped)).toEqual(root);
  expect(await seal({ tlsSkipVerify: true }).unwrap(wrapped)).toEqual(root);
});

test('a refusal names the address, the status and the unsealer\'s reason, and never the token', async () => {
  const err = await seal({ tlsSkipVerify: true, token: 'not-a-token' }).wrap(Buffer.alloc(32)).catch((e: Error) => e);
  expect(err).toMatchObject({ status: 502 });
  expect((err as Error).message).toMatch(new RegExp(`^the transit seal at ${unsealer.url} refused POST /v1/transit/encrypt/autounseal with 403`));
  expect((err as Error).message).not.toContain('not-a-token');
});

test('a renewable token is renewed at half its TTL, unless disable_renewal', async () => {
  const created = await unsealer.server.core.handle({ operation: 'update', path: 'auth/token/create', token: unsealer.token, data: { ttl: '1h', policies: ['root'] } });
  const token = ((created.body as { auth: { client_token: string } }).auth).client_token;
  const clock = new FakeClock(0);
  const logger = recordingLogger();
  const renewing = seal({ tlsSkipVerify: true, token, clock, logger, disableRenewal: false });
  await renewing.wrap(Buffer.alloc(32, 1));
  // The first look at the token happens in the background once it has proved to work.
  await until('the renewal to be scheduled', 10_000, async () => (clock.pendingTimers() > 0 ? true : undefined));
  await clock.advance(30 * 60_000);
  await until('a renewal', 10_000, async () => (logger.lines.some((l) => l.includes('transit seal: token renewed')) ? true : undefined));
  renewing.close();
  expect(logger.lines.join('\n')).not.toContain(token);

  const fixedClock = new FakeClock(0);
  const fixed = seal({ tlsSkipVerify: true, token, clock: fixedClock, disableRenewal: true });
  await fixed.wrap(Buffer.alloc(32, 1));
  expect(fixedClock.pendingTimers()).toBe(0);
});

test('init with the unsealer unreachable is a 502 naming it, and leaves the server uninitialized', async () => {
  const node = sealedServer();
  try {
    await node.start(transitStanza({ url: 'http://127.0.0.1:9', token: 't' }));
    const init = await call(node.url, 'PUT', 'sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } });
    expect(init.status).toBe(502);
    expect(init.json.errors[0]).toMatch(/^the transit seal at http:\/\/127\.0\.0\.1:9 cannot be reached: connection refused/);
    expect((await call(node.url, 'GET', 'sys/seal-status')).json).toMatchObject({ initialized: false, type: 'transit' });
  } finally {
    await node.remove();
  }
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, startDevServer, type DevServer, type RunOptions } from './test-support/cli-runner';

/** operator generate-root against a real dev server (one unseal key), through the built binary. */
describe('strongroom operator generate-root', () => {
  let dev: DevServer;
  let env: Record<string, string>;
  const cli = (args: string[], options: RunOptions = {}) => run(args, { ...options, env: { ...env, ...options.env } });

  beforeAll(async () => {
    dev = await startDevServer();
    env = { VAULT_ADDR: dev.address };
  }, 90_000);
  afterAll(async () => {
    await dev?.stop();
  });

  it('starts an attempt, takes the key share from stdin, and decodes a working root token', async () => {
    const init = await cli(['operator', 'generate-root', '-init', '-format=json']);
    expect(init).toMatchObject({ code: 0, err: '' });
    const started = JSON.parse(init.out);
    expect(started).toMatchObject({ started: true, progress: 0, required: 1, otp_length: 28 });
    expect(started.otp).toHaveLength(28);

    const status = await cli(['operator', 'generate-root', '-status']);
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/^Started\s+true$/m);
    expect(status.out).toMatch(/^Progress\s+0\/1$/m);
    expect(status.out).toContain(started.nonce);
    expect(status.out).not.toContain(started.otp);

    const update = await cli(['operator', 'generate-root', '-'], { input: `${dev.unsealKey}\n` });
    expect(update).toMatchObject({ code: 0, err: '' });
    expect(update.out).toMatch(/^Complete\s+true$/m);
    const encoded = /^Encoded Token\s+(\S+)$/m.exec(update.out)?.[1] ?? '';
    expect(encoded).not.toBe('');
    expect(update.out).not.toContain(dev.unsealKey);

    const decoded = await cli(['operator', 'generate-root', `-decode=${encoded}`, `-otp=${started.otp}`]);
    expect(decoded.code).toBe(0);
    const token = decoded.out.trim();
    expect(token).toMatch(/^hvs\./);
    const json = await cli(['operator', 'generate-root', '-decode=-', `-otp=${started.otp}`, '-format=json'], { input: encoded });
    expect(JSON.parse(json.out)).toEqual({ token });

    const lookup = await cli(['token', 'lookup', '-format=json'], { env: { VAULT_TOKEN: token } });
    expect(lookup.code).toBe(0);
    expect(JSON.parse(lookup.out).data).toMatchObject({ policies: ['root'], ttl: 0 });
  });

  it('prints the OTP once at -init, refuses a second attempt, and cancels', async () => {
    const init = await cli(['operator', 'generate-root', '-init']);
    expect(init.code).toBe(0);
    expect(init.out).toMatch(/^OTP\s+[0-9A-Za-z]{28}$/m);
    expect(init.out).toMatch(/^OTP Length\s+28$/m);

    const again = await cli(['operator', 'generate-root', '-init']);
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already in progress/);

    const cancel = await cli(['operator', 'generate-root', '-cancel']);
    expect(cancel).toMatchObject({ code: 0, out: expect.stringMatching(/^Success! Root token generation canceled/) });
    expect((await cli(['operator', 'generate-root', '-status'])).out).toMatch(/^Started\s+false$/m);
    const noAttempt = await cli(['operator', 'generate-root', dev.unsealKey]);
    expect(noAttempt.code).toBe(1);
    expect(noAttempt.err).toMatch(/no root token generation is in progress/);
    expect(noAttempt.err).not.toContain(dev.unsealKey);
  });

  it('refuses flags that do not go together, and sends -dr-token to the DR secondary paths', async () => {
    expect((await cli(['operator', 'generate-root', '-init', '-cancel'])).code).toBe(1);
    const noOtp = await cli(['operator', 'generate-root', '-decode=abcd']);
    expect(noOtp).toMatchObject({ code: 1, err: expect.stringContaining('-otp') });
    const short = await cli(['operator', 'generate-root', '-decode=YWJj', '-otp=abcd']);
    expect(short).toMatchObject({ code: 1, err: expect.stringContaining('differ in length') });
    const otp = (await cli(['operator', 'generate-root', '-generate-otp'])).out.trim();
    expect(otp).toMatch(/^[0-9A-Za-z]{28}$/);

    // A caller-made OTP decodes the same way.
    const started = JSON.parse((await cli(['operator', 'generate-root', '-init', `-otp=${otp}`, '-format=json'])).out);
    expect(started.otp).toBe('');
    const done = JSON.parse((await cli(['operator', 'generate-root', '-format=json', `-nonce=${started.nonce}`, dev.unsealKey])).out);
    const token = (await cli(['operator', 'generate-root', `-decode=${done.encoded_token}`, `-otp=${otp}`])).out.trim();
    expect((await cli(['token', 'lookup'], { env: { VAULT_TOKEN: token } })).code).toBe(0);

    // A key file that is no OpenPGP key reaches the server (binary as base64) and is refused there.
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-pgp-'));
    try {
      writeFileSync(join(dir, 'key.bin'), Buffer.from([0x99, 0x00, 0xff, 0x10, 0x20]));
      writeFileSync(join(dir, 'key.asc'), '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot a key\n-----END PGP PUBLIC KEY BLOCK-----\n');
      for (const file of ['key.bin', 'key.asc']) {
        const refused = await cli(['operator', 'generate-root', '-init', `-pgp-key=${join(dir, file)}`]);
        expect(refused).toMatchObject({ code: 2, err: expect.stringContaining('"pgp_key"') });
      }
      const missing = await cli(['operator', 'generate-root', '-init', `-pgp-key=${join(dir, 'none')}`]);
      expect(missing).toMatchObject({ code: 1, err: expect.stringContaining('ENOENT') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // This server is no DR secondary: the path is not served, and the error names it.
    const dr = await cli(['operator', 'generate-root', '-dr-token', '-status']);
    expect(dr.code).toBe(2);
    expect(dr.err).toContain('sys/replication/dr/secondary/generate-operation-token/attempt');
  });
});

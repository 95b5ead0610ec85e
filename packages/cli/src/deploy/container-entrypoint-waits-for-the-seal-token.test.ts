/**
 * deploy/entrypoint.sh, run by the machine's sh with a stand-in for the server: a node sealed
 * by transit waits for bootstrap's seal token file, passes the token on as VAULT_TOKEN without
 * ever writing it out, and gives up with a clear message after a bounded wait.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ENTRYPOINT = resolve(__dirname, '../../../../deploy/entrypoint.sh');
// Generous: the machine may be busy, and nothing here asserts on time.
const LIMIT_MS = 60_000;

// Stands in for packages/cli/bin/strongroom.js: records its arguments and a hash of the token.
const FAKE_SERVER = `
const { createHash } = require('node:crypto');
const token = process.env.VAULT_TOKEN;
require('node:fs').writeFileSync(process.env.RESULT_FILE, JSON.stringify({
  argv: process.argv.slice(2),
  tokenHash: token === undefined ? null : createHash('sha256').update(token).digest('hex'),
}));
`;

interface Run {
  exit: Promise<number | null>;
  output(): string;
}

let home: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'entrypoint-'));
  mkdirSync(join(home, 'packages', 'cli', 'bin'), { recursive: true });
  writeFileSync(join(home, 'packages', 'cli', 'bin', 'strongroom.js'), FAKE_SERVER);
  mkdirSync(join(home, 'seal'));
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

function start(env: Record<string, string>): Run {
  const child = spawn('sh', [ENTRYPOINT], {
    env: { PATH: process.env['PATH'] ?? '', STRONGROOM_HOME: home, RESULT_FILE: join(home, 'result.json'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
  const exit = new Promise<number | null>((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), LIMIT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      done(code);
    });
  });
  return { exit, output: () => output };
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + LIMIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

function result(): { argv: string[]; tokenHash: string | null } {
  return JSON.parse(readFileSync(join(home, 'result.json'), 'utf8')) as { argv: string[]; tokenHash: string | null };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

it('starts the server with the config, and no token, when no seal token file is named (the unseal service)', async () => {
  const run = start({ STRONGROOM_CONFIG: '/strongroom/config/unseal.hcl' });
  expect(await run.exit).toBe(0);
  expect(result()).toEqual({ argv: ['server', '-config=/strongroom/config/unseal.hcl'], tokenHash: null });
});

it('waits for the seal token file, then hands the token to the server without printing it', async () => {
  const tokenFile = join(home, 'seal', 'primary.token');
  const token = 'hvs.CAESIstand-in-seal-token-0123456789';
  const run = start({ STRONGROOM_CONFIG: '/strongroom/config/primary.hcl', STRONGROOM_SEAL_TOKEN_FILE: tokenFile });
  await until(() => run.output().includes('waiting for the seal token file'));
  expect(run.output()).toContain(tokenFile);
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });

  expect(await run.exit).toBe(0);
  expect(result()).toEqual({ argv: ['server', '-config=/strongroom/config/primary.hcl'], tokenHash: sha256(token) });
  expect(run.output()).toContain(`seal token read from ${tokenFile}`);
  expect(run.output()).not.toContain(token);
  expect(run.output()).not.toContain('stand-in-seal-token');
});

it('starts at once when the token file is already there (a restarted node)', async () => {
  const tokenFile = join(home, 'seal', 'dr-secondary.token');
  writeFileSync(tokenFile, 'stand-in-dr-token', { mode: 0o600 });
  const run = start({ STRONGROOM_CONFIG: '/c/dr-secondary.hcl', STRONGROOM_SEAL_TOKEN_FILE: tokenFile });
  expect(await run.exit).toBe(0);
  expect(result().tokenHash).toBe(sha256('stand-in-dr-token'));
  expect(run.output()).not.toContain('waiting');
  expect(run.output()).not.toContain('stand-in-dr-token');
});

it('gives up after the bounded wait, saying which file it waited for and why it may be missing', async () => {
  const tokenFile = join(home, 'seal', 'perf-secondary.token');
  const run = start({ STRONGROOM_CONFIG: '/c/perf.hcl', STRONGROOM_SEAL_TOKEN_FILE: tokenFile, STRONGROOM_SEAL_TOKEN_WAIT: '2' });
  expect(await run.exit).toBe(1);
  expect(run.output()).toContain(`no seal token in ${tokenFile}`);
  expect(run.output()).toContain('has the bootstrap service run?');
  expect(() => result()).toThrow();
});

it('refuses to start without a config, or with a wait that is not a number of seconds', async () => {
  const noConfig = start({});
  expect(await noConfig.exit).not.toBe(0);
  expect(noConfig.output()).toContain('STRONGROOM_CONFIG');

  const badWait = start({ STRONGROOM_CONFIG: '/c/p.hcl', STRONGROOM_SEAL_TOKEN_FILE: join(home, 'seal', 'x.token'), STRONGROOM_SEAL_TOKEN_WAIT: '10m' });
  expect(await badWait.exit).toBe(2);
  expect(badWait.output()).toContain('STRONGROOM_SEAL_TOKEN_WAIT must be a whole number of seconds');
});

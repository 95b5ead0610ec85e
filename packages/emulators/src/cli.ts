/**
 * `strongroom-emulator <name> [options]`: starts one emulator for people (demos, manual tests)
 * and prints how to reach it.
 *
 *   strongroom-emulator cloud1 --listen 127.0.0.1:4599 [--metadata-listen 127.0.0.1:4600] [--seed seed.json]
 *   strongroom-emulator cloud3 --listen 127.0.0.1:4610
 *   strongroom-emulator s3 --listen 127.0.0.1:4566
 *   strongroom-emulator repohost --listen 127.0.0.1:4620
 *   strongroom-emulator cloud2-kv | cloud3-sm | deployhost-project --listen 127.0.0.1:0
 *
 * The seed file is a cloud1 SeedDocument (see README.md). Unless it gives some account root
 * credentials, an account 123456789012 with generated root credentials is created, so there is
 * always a key to start from.
 */
import { readFileSync } from 'node:fs';
import { Cloud1Emulator } from './cloud1/emulator';
import { Cloud3StorageEmulator } from './cloud3/emulator';
import { RepohostEmulator } from './repohost/emulator';
import { SECRET_STORE_NAMES, SECRET_STORE_USAGE, startSecretStore } from './secret-store-cli';
import type { Credentials, SeedDocument } from './cloud1/admin';

export const USAGE =
  'usage: strongroom-emulator cloud1 --listen HOST:PORT [--metadata-listen HOST:PORT] [--seed FILE.json]\n' +
  '       strongroom-emulator cloud3 --listen HOST:PORT\n' +
  '       strongroom-emulator s3 --listen HOST:PORT\n' +
  '       strongroom-emulator repohost --listen HOST:PORT\n' +
  SECRET_STORE_USAGE;

const DEFAULT_ACCOUNT = '123456789012';

interface FauxqsApp {
  listen(options: { host: string; port: number }): Promise<unknown>;
  close(): Promise<unknown>;
  server: { address(): { port: number } | string | null };
}

// fauxqs is the workspace's S3 emulator (a dev dependency, ESM only). Its own CLI binds every
// interface; this listens only where asked. A name in a variable keeps it out of this package's
// compile-time dependencies: it is loaded only when someone runs `s3`.
const FAUXQS = 'fauxqs';

async function startS3(host: string, port: number): Promise<{ url: string; close(): Promise<unknown> }> {
  const { buildApp } = (await import(FAUXQS)) as { buildApp(options: { logger: boolean; host: string }): FauxqsApp };
  const app = buildApp({ logger: false, host });
  await app.listen({ host, port });
  const address = app.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return { url: `http://${host}:${bound}`, close: () => app.close() };
}

export interface CliOutput {
  write(text: string): unknown;
}

export interface RunningEmulator {
  stop(): Promise<void>;
}

/** Starts the emulator the arguments name; undefined (and a message on `err`) for bad arguments. */
export async function runCli(
  argv: string[],
  out: CliOutput = process.stdout,
  err: CliOutput = process.stderr,
): Promise<RunningEmulator | undefined> {
  const [name, ...rest] = argv;
  const options = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i] ?? '';
    const value = rest[i + 1];
    if (!['--listen', '--metadata-listen', '--seed'].includes(flag) || value === undefined) {
      err.write(`unexpected argument '${flag}'\n${USAGE}`);
      return undefined;
    }
    options.set(flag, value);
  }
  const listen = /^\[?([^\]]*?)\]?:(\d+)$/.exec(options.get('--listen') ?? '');
  if (name === 'cloud3' && listen && options.size === 1) {
    const storage = await Cloud3StorageEmulator.start({ host: listen[1] || '127.0.0.1', port: Number(listen[2]) });
    out.write(`cloud3 storage emulator ready\n  apiEndpoint: ${storage.url}\n`);
    return { stop: () => storage.close() };
  }
  if (name === 's3' && listen && options.size === 1) {
    const s3 = await startS3(listen[1] || '127.0.0.1', Number(listen[2]));
    out.write(`s3 emulator (fauxqs) ready\n  endpoint: ${s3.url}\n`);
    return { stop: async () => { await s3.close(); } };
  }
  if (name === 'repohost' && listen && options.size === 1) {
    const repohost = await RepohostEmulator.start({ host: listen[1] || '127.0.0.1', port: Number(listen[2]) });
    const repository = repohost.createRepository('demo/app');
    const token = repohost.addToken();
    out.write(`repohost emulator ready\n  api (baseUrl): ${repohost.url}\n  repository:    ${repository.fullName}\n  token:         ${token}\n`);
    return { stop: () => repohost.close() };
  }
  if (name !== undefined && SECRET_STORE_NAMES.includes(name) && listen && options.size === 1) {
    return startSecretStore(name, listen[1] || '127.0.0.1', Number(listen[2]), out);
  }
  if (name !== 'cloud1' || !options.has('--listen')) {
    err.write(USAGE);
    return undefined;
  }

  const emulator = new Cloud1Emulator();
  const metadataListen = options.get('--metadata-listen');
  const endpoints = await emulator.start({
    listen: options.get('--listen'),
    ...(metadataListen === undefined ? {} : { metadataListen }),
  });
  try {
    const seedFile = options.get('--seed');
    const document = seedFile === undefined ? {} : (JSON.parse(readFileSync(seedFile, 'utf8')) as SeedDocument);
    const seeded = emulator.seed(document);
    let root: { accountId: string; credentials: Credentials } | undefined;
    for (const account of seeded.accounts) {
      if (account.rootCredentials && !root) root = { accountId: account.id, credentials: account.rootCredentials };
    }
    if (!root) {
      const accountId = seeded.accounts[0]?.id ?? emulator.createAccount({ id: DEFAULT_ACCOUNT }).accountId;
      root = { accountId, credentials: emulator.issueRootCredentials(accountId) };
    }
    out.write(
      [
        'cloud1 emulator ready',
        `  api (IAM, STS, EC2): ${endpoints.api}`,
        `  metadata:            ${endpoints.metadata}`,
        `  admin:               ${endpoints.admin}`,
        '  (Secrets Manager answers on the api URL too)',
        `account ${root.accountId} root credentials:`,
        `  CLOUD1_ACCESS_KEY=${root.credentials.accessKeyId}`,
        `  CLOUD1_SECRET_KEY=${root.credentials.secretAccessKey}`,
        '  CLOUD1_REGION=us-east-1',
        '',
      ].join('\n'),
    );
  } catch (error) {
    await emulator.stop();
    throw error;
  }
  return { stop: () => emulator.stop() };
}

/** The bin's entry point: runs until SIGTERM or SIGINT, then closes the listeners. */
export function main(argv: string[]): void {
  runCli(argv).then(
    (running) => {
      if (!running) {
        process.exitCode = 2;
        return;
      }
      const shutdown = (): void => {
        running.stop().then(() => process.exit(0), () => process.exit(1));
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    },
    (error: unknown) => {
      process.stderr.write(`strongroom-emulator: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

import { ConfigError, loadConfigFile, startDevServer, startServer, type RunningServer } from '@strongroom/api';
import { limitHeapGrowth } from '../heap-growth';
import { parseArgs, stringFlag, UsageError } from '../args';

export const SERVER_USAGE = `Usage: strongroom server --dev [--dev-root-token ID] [--listen HOST:PORT] [--data-dir DIR]
       strongroom server --config FILE`;

/**
 * Catches SIGINT and SIGTERM from the start, before the server announces itself, so that a
 * supervisor that signals as soon as it reads the banner never meets the default action (an
 * abrupt exit). `stopped` resolves once `serve` has been given its close function and a signal
 * has come, in either order.
 */
function signalGate(out: NodeJS.WritableStream) {
  let signalled: (signal: string) => void = () => {};
  const signal = new Promise<string>((resolve) => { signalled = resolve; });
  const onSignal = (name: string) => () => signalled(name);
  const onInt = onSignal('SIGINT');
  const onTerm = onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  const release = () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
  return {
    release,
    /**
     * Settles with `start`'s result, or with the signal's name if one comes first: no start-up
     * step, however stuck, may leave the process deaf to SIGTERM. A start that finishes after
     * the signal is closed at once.
     */
    async starting<T extends { close(): Promise<void> }>(start: Promise<T>): Promise<T | { signal: string }> {
      const first = await Promise.race([start.then((value) => ({ value })), signal.then((name) => ({ signal: name }))]);
      if ('value' in first) return first.value;
      out.write(`==> ${first.signal} received during start-up, exiting\n`);
      start.then((late) => late.close(), () => {});
      // A step stuck on a thread-pool thread (a read from a FIFO, a hung network file system)
      // keeps the process alive, and even process.exit() waits for that thread. By then our
      // handlers are released, so the signal's default action ends the process as it would have.
      setTimeout(() => process.kill(process.pid, first.signal), 2000).unref();
      return { signal: first.signal };
    },
    async serve(close: () => Promise<void>): Promise<number> {
      const name = await signal;
      out.write(`==> ${name} received, shutting down\n`);
      try {
        await close();
        return 0;
      } catch (err) {
        out.write(`shutdown failed: ${(err as Error).message}\n`);
        return 1;
      } finally {
        release();
      }
    },
  };
}

export async function serverCommand(argv: string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  const args = parseArgs(argv, new Set(['dev', 'help', 'h']));
  if (args.flags.has('help') || args.flags.has('h')) {
    out.write(`${SERVER_USAGE}\n`);
    return 0;
  }
  limitHeapGrowth();
  const gate = signalGate(out);
  try {
    return await runServer(args, gate, out, err);
  } finally {
    gate.release();
  }
}

async function runServer(args: ReturnType<typeof parseArgs>, gate: ReturnType<typeof signalGate>, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  if (args.flags.get('dev') === true) {
    const listen = stringFlag(args, 'listen') ?? stringFlag(args, 'dev-listen-address');
    const rootTokenId = stringFlag(args, 'dev-root-token') ?? stringFlag(args, 'dev-root-token-id');
    const dataDir = stringFlag(args, 'data-dir');
    const dev = await gate.starting(startDevServer({ ...(listen ? { listen } : {}), ...(rootTokenId ? { rootTokenId } : {}), ...(dataDir ? { dataDir } : {}) }));
    if ('signal' in dev) return 1;
    out.write([
      'WARNING: dev mode. The server is unsealed, its key and root token are printed below and kept',
      `in ${dev.dataDir}. Do not use dev mode for real secrets.`,
      '',
      'You may need to set the following environment variables:',
      '',
      `    $ export VAULT_ADDR='${dev.address}'`,
      '',
      `Address:    ${dev.address}`,
      `Unseal Key: ${dev.unsealKey}`,
      `Root Token: ${dev.rootToken}`,
      '',
      'KV version 2 is mounted at secret/.',
      '',
    ].join('\n'));
    return gate.serve(() => dev.close());
  }
  const configFile = stringFlag(args, 'config');
  if (!configFile) throw new UsageError(`either --dev or --config FILE is required\n${SERVER_USAGE}`);
  let server: RunningServer;
  try {
    const started = await gate.starting((async () => {
      const config = await loadConfigFile(configFile);
      for (const w of config.warnings) err.write(`warning: ${w}\n`);
      return startServer(config);
    })());
    if ('signal' in started) return 1;
    server = started;
  } catch (e) {
    if (e instanceof ConfigError) {
      err.write(`Error: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  out.write(`==> Strongroom server started on ${server.addresses.join(', ')}\n`);
  const status = await server.core.seal.status();
  if (!status.initialized) out.write('==> not initialized: run `strongroom operator init`\n');
  else if (status.migration) out.write('==> seal migration pending: run `strongroom operator unseal -migrate` with the current seal\'s keys\n');
  else if (status.recoverySeal) out.write(`==> unsealing itself through its ${status.type} seal\n`);
  else out.write('==> sealed: run `strongroom operator unseal` with the unseal keys\n');
  return gate.serve(() => server.close());
}

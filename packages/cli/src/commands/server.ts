import { ConfigError, loadConfigFile, startDevServer, startServer, type RunningServer } from '@strongroom/api';
import { parseArgs, stringFlag, UsageError } from '../args';

export const SERVER_USAGE = `Usage: strongroom server --dev [--dev-root-token ID] [--listen HOST:PORT] [--data-dir DIR]
       strongroom server --config FILE`;

/** Waits for SIGINT or SIGTERM, then shuts the server down gracefully. */
function untilSignal(close: () => Promise<void>, out: NodeJS.WritableStream): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      out.write(`==> ${signal} received, shutting down\n`);
      close().then(() => resolve(0), (err: unknown) => {
        out.write(`shutdown failed: ${(err as Error).message}\n`);
        resolve(1);
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}

export async function serverCommand(argv: string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  const args = parseArgs(argv, new Set(['dev', 'help', 'h']));
  if (args.flags.has('help') || args.flags.has('h')) {
    out.write(`${SERVER_USAGE}\n`);
    return 0;
  }
  if (args.flags.get('dev') === true) {
    const listen = stringFlag(args, 'listen') ?? stringFlag(args, 'dev-listen-address');
    const rootTokenId = stringFlag(args, 'dev-root-token') ?? stringFlag(args, 'dev-root-token-id');
    const dataDir = stringFlag(args, 'data-dir');
    const dev = await startDevServer({ ...(listen ? { listen } : {}), ...(rootTokenId ? { rootTokenId } : {}), ...(dataDir ? { dataDir } : {}) });
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
    return untilSignal(() => dev.close(), out);
  }
  const configFile = stringFlag(args, 'config');
  if (!configFile) throw new UsageError(`either --dev or --config FILE is required\n${SERVER_USAGE}`);
  let server: RunningServer;
  try {
    const config = await loadConfigFile(configFile);
    for (const w of config.warnings) err.write(`warning: ${w}\n`);
    server = await startServer(config);
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
  else out.write('==> sealed: run `strongroom operator unseal` with the unseal keys\n');
  return untilSignal(() => server.close(), out);
}

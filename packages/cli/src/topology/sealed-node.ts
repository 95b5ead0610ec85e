import { existsSync, readFileSync } from 'node:fs';
import { main } from '../main';
import { sleep } from './process-control';

const NODE_VARIABLES = new Set(['VAULT_RAFT_NODE_ID', 'VAULT_API_ADDR', 'VAULT_CLUSTER_ADDR', 'VAULT_RAFT_PATH']);

/** How long a node waits for its seal token: bootstrap writes it once the seal provider runs. */
const TOKEN_WAIT_MS = 15 * 60_000;

/**
 * A node's entry point, as the container's: waits for the seal token file, takes the token from
 * it into VAULT_TOKEN (so it is never on a command line, in the state file or in a log), then
 * runs `server -config FILE`. `unseal` has no token file and starts at once.
 */
export async function serveNode(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const i = argv.indexOf('--config');
  const config = i === -1 ? env['STRONGROOM_CONFIG'] : argv[i + 1];
  if (!config) throw new Error('serve-node needs --config FILE (or STRONGROOM_CONFIG)');
  // The shell that ran the topology may hold a Vault client's settings (VAULT_TOKEN,
  // VAULT_NAMESPACE, ...), which the seal stanza would take for its own: a node gets only these.
  for (const name of Object.keys(env)) if (name.startsWith('VAULT_') && !NODE_VARIABLES.has(name)) delete env[name];
  const tokenFile = env['STRONGROOM_SEAL_TOKEN_FILE'];
  if (tokenFile) {
    const deadline = Date.now() + TOKEN_WAIT_MS;
    while (!existsSync(tokenFile)) {
      if (Date.now() > deadline) throw new Error(`the seal token file ${tokenFile} did not appear in ${TOKEN_WAIT_MS / 60_000} minutes`);
      await sleep(500);
    }
    env['VAULT_TOKEN'] = readFileSync(tokenFile, 'utf8').trim();
  }
  return main(['server', '-config', config]);
}

import { apiRequest, clientFromEnv } from '../client';
import { UsageError } from '../args';

/** `key=value` pairs as Vault's CLI takes them; a value of `-` is not supported (no stdin). */
function pairs(items: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`"${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** read, write, list and delete of any API path, printing the response's JSON. */
export async function logicalCommand(verb: string, argv: string[], out: NodeJS.WritableStream): Promise<number> {
  const [path, ...rest] = argv;
  if (!path) throw new UsageError(`Usage: strongroom ${verb} PATH${verb === 'write' ? ' key=value...' : ''}`);
  const client = clientFromEnv();
  const method = { read: 'GET', write: 'PUT', list: 'LIST', delete: 'DELETE' }[verb] as string;
  const { status, body } = await apiRequest(client, method, path, verb === 'write' ? pairs(rest) : undefined);
  if (status === 204 || body === null) out.write(`Success! Data written to: ${path}\n`);
  else out.write(`${JSON.stringify(body, null, 2)}\n`);
  return 0;
}

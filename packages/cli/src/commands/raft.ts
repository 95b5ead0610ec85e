import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, apiRequest, type ApiClientOptions } from '../client';
import { parseArgs, UsageError } from '../args';

const USAGE = `Usage: strongroom operator raft <subcommand>

  join [-non-voter] LEADER_API_ADDR   Join this server (STRONGROOM_ADDR) to the cluster LEADER_API_ADDR leads;
                                      then unseal it with the cluster's keys
  list-peers                          The cluster's members, their addresses and roles
  remove-peer SERVER_ID               Remove a member
  autopilot state                     Health of each member as the leader sees it
  snapshot save FILE                  Write a snapshot of the cluster's data to FILE
  snapshot restore [-force] FILE      Replace the cluster's data with a snapshot
`;

interface Peer {
  node_id: string;
  address: string;
  leader: boolean;
  voter: boolean;
}

function table(out: NodeJS.WritableStream, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('    ').trimEnd() + '\n';
  out.write(line(header));
  out.write(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) out.write(line(r));
}

function url(client: ApiClientOptions, path: string): string {
  return `${client.address.replace(/\/+$/, '')}/v1/${path}`;
}

async function failIfError(res: Response): Promise<void> {
  if (res.status < 400) return;
  const text = await res.text();
  let errors: string[] = [];
  try {
    errors = (JSON.parse(text) as { errors?: string[] }).errors ?? [];
  } catch {
    errors = text === '' ? [] : [text];
  }
  throw new ApiError(res.status, errors);
}

function headers(client: ApiClientOptions): Record<string, string> {
  return client.token ? { 'X-Vault-Token': client.token } : {};
}

export async function raftCommand(argv: string[], client: ApiClientOptions, out: NodeJS.WritableStream): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'join': {
      const args = parseArgs(rest, new Set(['non-voter']));
      const leader = args.positional[0];
      if (!leader || args.positional.length > 1) throw new UsageError(USAGE);
      const { body } = await apiRequest(client, 'POST', 'sys/storage/raft/join', {
        leader_api_addr: leader, non_voter: args.flags.get('non-voter') === true,
      });
      out.write(`Key       Value\n---       -----\nJoined    ${String((body as { joined?: boolean }).joined)}\n`);
      out.write('Unseal this server with the cluster\'s unseal keys to complete the join: strongroom operator unseal KEY\n');
      return 0;
    }
    case 'list-peers': {
      const { body } = await apiRequest(client, 'GET', 'sys/storage/raft/configuration');
      const servers = (body as { data: { config: { servers: Peer[] } } }).data.config.servers;
      table(out, ['Node', 'Address', 'State', 'Voter'], servers.map((s) => [s.node_id, s.address, s.leader ? 'leader' : 'follower', String(s.voter)]));
      return 0;
    }
    case 'remove-peer': {
      const id = rest[0];
      if (!id || rest.length > 1) throw new UsageError(USAGE);
      await apiRequest(client, 'POST', 'sys/storage/raft/remove-peer', { server_id: id });
      out.write(`Peer removed successfully!\n`);
      return 0;
    }
    case 'autopilot': {
      if (rest[0] !== 'state') throw new UsageError(USAGE);
      const { body } = await apiRequest(client, 'GET', 'sys/storage/raft/autopilot/state');
      const state = (body as { data: Record<string, unknown> }).data;
      out.write(`Healthy:             ${String(state['healthy'])}\nFailure Tolerance:   ${String(state['failure_tolerance'])}\nLeader:              ${String(state['leader'])}\n`);
      const servers = Object.values(state['servers'] as Record<string, Record<string, unknown>>);
      // The reason goes last: it is the one column with spaces in it.
      table(out, ['Node', 'Address', 'Status', 'Healthy', 'Last Index', 'Last Contact', 'Reason'], servers.map((s) => [
        String(s['id']), String(s['address']), String(s['status']), String(s['healthy']), String(s['last_index']), String(s['last_contact']),
        typeof s['reason'] === 'string' && s['reason'] !== '' ? s['reason'] : '-',
      ]));
      return 0;
    }
    case 'snapshot':
      return snapshotCommand(rest, client, out);
    default:
      throw new UsageError(USAGE);
  }
}

async function snapshotCommand(argv: string[], client: ApiClientOptions, out: NodeJS.WritableStream): Promise<number> {
  const [action, ...rest] = argv;
  const args = parseArgs(rest, new Set(['force']));
  const file = args.positional[0];
  if (!file || args.positional.length > 1 || (action !== 'save' && action !== 'restore')) throw new UsageError(USAGE);
  if (action === 'save') {
    const res = await fetch(url(client, 'sys/storage/raft/snapshot'), { headers: headers(client) });
    await failIfError(res);
    if (!res.body) throw new ApiError(res.status, ['the server sent no snapshot']);
    // Written beside the target and renamed, so an interrupted save never leaves a torn file under FILE.
    const partial = `${file}.partial`;
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(partial, { mode: 0o600 }));
    await fsp.rename(partial, file);
    const { size } = await fsp.stat(file);
    out.write(`Snapshot saved to ${file} (${size} bytes)\n`);
    return 0;
  }
  const { size } = await fsp.stat(file);
  const path = args.flags.get('force') === true ? 'sys/storage/raft/snapshot-force' : 'sys/storage/raft/snapshot';
  const res = await fetch(url(client, path), {
    method: 'POST',
    headers: { ...headers(client), 'content-type': 'application/octet-stream', 'content-length': String(size) },
    body: Readable.toWeb(createReadStream(file)),
    duplex: 'half',
  } as RequestInit);
  await failIfError(res);
  out.write(`Snapshot restored from ${file} (${size} bytes)\n`);
  return 0;
}

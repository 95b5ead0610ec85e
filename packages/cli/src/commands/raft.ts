import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { boolFlag, UsageError } from '../args';
import { apiRequest, failIfError, rawRequest, type ApiClientOptions } from '../client';
import { clientOf, type Command, type Context } from '../command';
import { columns, kvTable, outputOptions, printStructured } from '../output';
import { progressLine, type Progress } from '../progress';

interface Peer {
  node_id: string;
  address: string;
  leader: boolean;
  voter: boolean;
}

const urlOf = (client: ApiClientOptions, path: string) => `${client.address.replace(/\/+$/, '')}/v1/${path}`;

function oneFile(positional: string[], usage: string): string {
  const file = positional[0];
  if (!file || positional.length > 1) throw new UsageError(usage);
  return file;
}

/** Passes bytes through unchanged, telling `progress` how many went by. */
function counted(progress: Progress): Transform {
  let done = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      progress.update(done);
      callback(null, chunk);
    },
  });
}

function bytesProgress(ctx: Context, label: string, total: number | undefined): Progress {
  return progressLine({ stream: ctx.err, tty: ctx.errIsTTY === true, unit: 'bytes', label, ...(total !== undefined ? { total } : {}) });
}

async function snapshotSave(client: ApiClientOptions, file: string, ctx: Context): Promise<number> {
  const path = 'sys/storage/raft/snapshot';
  const res = await rawRequest(client, { method: 'GET', path });
  await failIfError(res, 'GET', urlOf(client, path));
  const length = Number(res.headers['content-length']);
  // A streamed snapshot has no length up front: then there is a rate but no ETA.
  const progress = bytesProgress(ctx, 'Saving snapshot', Number.isSafeInteger(length) && length >= 0 ? length : undefined);
  // Written beside the target and renamed, so an interrupted save never leaves a torn file under FILE.
  const partial = `${file}.partial`;
  try {
    await pipeline(res, counted(progress), createWriteStream(partial, { mode: 0o600 }));
  } finally {
    progress.finish();
  }
  await fsp.rename(partial, file);
  const { size } = await fsp.stat(file);
  ctx.out.write(`Snapshot saved to ${file} (${size} bytes)\n`);
  return 0;
}

async function snapshotRestore(client: ApiClientOptions, file: string, force: boolean, ctx: Context): Promise<number> {
  const { size } = await fsp.stat(file);
  const path = force ? 'sys/storage/raft/snapshot-force' : 'sys/storage/raft/snapshot';
  const progress = bytesProgress(ctx, 'Restoring snapshot', size);
  try {
    const body = createReadStream(file).pipe(counted(progress));
    const res = await rawRequest(client, {
      method: 'POST', path, headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) }, body,
    });
    await failIfError(res, 'POST', urlOf(client, path));
    res.resume();
  } finally {
    progress.finish();
  }
  ctx.out.write(`Snapshot restored from ${file} (${size} bytes)\n`);
  return 0;
}

export const raftCommands: Command[] = [
  {
    name: ['operator', 'raft', 'join'], summary: 'Join this server to a cluster', client: true, booleans: ['non-voter'],
    help: `Usage: strongroom operator raft join [options] LEADER_API_ADDR

  Joins the server at STRONGROOM_ADDR (or -address) to the cluster LEADER_API_ADDR leads; then
  unseal it with the cluster's keys.

  -non-voter   Join as a member that gets the data but does not vote

  Example:
    $ STRONGROOM_ADDR=http://127.0.0.1:8220 strongroom operator raft join http://127.0.0.1:8210`,
    async run(args, ctx) {
      const leader = oneFile(args.positional, 'Usage: strongroom operator raft join [options] LEADER_API_ADDR');
      const { body } = await apiRequest(clientOf(args, ctx), 'POST', 'sys/storage/raft/join', {
        leader_api_addr: leader, non_voter: boolFlag(args, 'non-voter'),
      });
      ctx.out.write(kvTable([['Joined', (body as { joined?: boolean }).joined]]));
      ctx.out.write('Unseal this server with the cluster\'s unseal keys to complete the join: strongroom operator unseal\n');
      return 0;
    },
  },
  {
    name: ['operator', 'raft', 'list-peers'], summary: 'List the cluster\'s members', client: true, output: true,
    help: `Usage: strongroom operator raft list-peers [options]

  Lists the cluster's members, their addresses and roles.

  Example:
    $ strongroom operator raft list-peers`,
    async run(args, ctx) {
      const { body } = await apiRequest(clientOf(args, ctx), 'GET', 'sys/storage/raft/configuration');
      if (printStructured(ctx.out, outputOptions(args, ctx.env), body)) return 0;
      const servers = (body as { data: { config: { servers: Peer[] } } }).data.config.servers;
      columns(ctx.out, ['Node', 'Address', 'State', 'Voter'], servers.map((s) => [s.node_id, s.address, s.leader ? 'leader' : 'follower', String(s.voter)]));
      return 0;
    },
  },
  {
    name: ['operator', 'raft', 'remove-peer'], summary: 'Remove a member from the cluster', client: true,
    help: `Usage: strongroom operator raft remove-peer [options] SERVER_ID

  Removes the member SERVER_ID from the cluster.

  Example:
    $ strongroom operator raft remove-peer node3`,
    async run(args, ctx) {
      const id = oneFile(args.positional, 'Usage: strongroom operator raft remove-peer [options] SERVER_ID');
      await apiRequest(clientOf(args, ctx), 'POST', 'sys/storage/raft/remove-peer', { server_id: id });
      ctx.out.write('Peer removed successfully!\n');
      return 0;
    },
  },
  {
    name: ['operator', 'raft', 'autopilot', 'state'], summary: 'Show the health of each member as the leader sees it', client: true, output: true,
    help: `Usage: strongroom operator raft autopilot state [options]

  Shows whether the cluster is healthy, how many failures it tolerates and each member's state.

  Example:
    $ strongroom operator raft autopilot state`,
    async run(args, ctx) {
      const { body } = await apiRequest(clientOf(args, ctx), 'GET', 'sys/storage/raft/autopilot/state');
      if (printStructured(ctx.out, outputOptions(args, ctx.env), body)) return 0;
      const state = (body as { data: Record<string, unknown> }).data;
      ctx.out.write(`Healthy:             ${String(state['healthy'])}\nFailure Tolerance:   ${String(state['failure_tolerance'])}\nLeader:              ${String(state['leader'])}\n`);
      const servers = Object.values(state['servers'] as Record<string, Record<string, unknown>>);
      // The reason goes last: it is the one column with spaces in it.
      columns(ctx.out, ['Node', 'Address', 'Status', 'Healthy', 'Last Index', 'Last Contact', 'Reason'], servers.map((s) => [
        String(s['id']), String(s['address']), String(s['status']), String(s['healthy']), String(s['last_index']), String(s['last_contact']),
        typeof s['reason'] === 'string' && s['reason'] !== '' ? s['reason'] : '-',
      ]));
      return 0;
    },
  },
  {
    name: ['operator', 'raft', 'snapshot', 'save'], summary: 'Save a snapshot of the cluster\'s data to a file', client: true,
    help: `Usage: strongroom operator raft snapshot save [options] FILE

  Writes a snapshot of the cluster's data to FILE (readable by its owner only).

  Example:
    $ strongroom operator raft snapshot save backup.snap`,
    run: (args, ctx) => snapshotSave(clientOf(args, ctx), oneFile(args.positional, 'Usage: strongroom operator raft snapshot save [options] FILE'), ctx),
  },
  {
    name: ['operator', 'raft', 'snapshot', 'restore'], summary: 'Replace the cluster\'s data with a snapshot', client: true, booleans: ['force'],
    help: `Usage: strongroom operator raft snapshot restore [options] FILE

  Replaces all of the cluster's data with the snapshot in FILE.

  -force   Restore a snapshot taken of another cluster (sealed by other keys)

  Example:
    $ strongroom operator raft snapshot restore backup.snap`,
    run: (args, ctx) => snapshotRestore(clientOf(args, ctx), oneFile(args.positional, 'Usage: strongroom operator raft snapshot restore [options] FILE'), boolFlag(args, 'force'), ctx),
  },
];

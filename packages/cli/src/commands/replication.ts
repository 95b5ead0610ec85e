import { boolFlag, UsageError } from '../args';
import { apiRequest, type ApiClientOptions } from '../client';
import { clientOf, type Command, type Context } from '../command';
import { columns, kvTable, outputOptions, printStructured } from '../output';
import { progressLine } from '../progress';
import { secretArgument } from './key-share';

type Status = Record<string, unknown>;

const FORMAT_HELP = `  -format=table|json|yaml   How to print it (VAULT_FORMAT; default table); json and yaml print
                            the server's whole answer`;

/** Enough of a Merkle root to tell two apart at a glance; the full one is in -format=json. */
const SHORT_ROOT = 12;
const POLL_MS = 500;

const text = (v: unknown): string => (v === undefined || v === null || v === '' ? '-' : String(v));

/** How long ago an ISO time was, as an operator reads a heartbeat; the time itself if it does not parse. */
function ago(iso: unknown, now: number): string {
  if (typeof iso !== 'string' || iso === '') return '-';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

function reindexText(s: Status): string | undefined {
  if (s['reindex_in_progress'] !== true) return undefined;
  return `${text(s['reindex_stage'])}, ${text(s['reindex_keys_done'])}/${text(s['reindex_keys_total'])} keys`;
}

/** One kind's block: its own rows, then a row per peer (secondaries of a primary, primaries of a secondary). */
function printKind(ctx: Context, title: string, s: Status, now: number): void {
  ctx.out.write(`== ${title} ==\n`);
  const mode = s['mode'];
  if (mode !== 'primary' && mode !== 'secondary') {
    ctx.out.write(kvTable([['Mode', text(mode)]]));
    return;
  }
  const root = typeof s['merkle_root'] === 'string' ? s['merkle_root'].slice(0, SHORT_ROOT) : '';
  const rows: Array<[string, unknown]> = mode === 'primary'
    ? [['Mode', mode], ['State', text(s['state'])], ['Cluster ID', text(s['cluster_id'])], ['Last WAL', text(s['last_wal'])]]
    : [['Mode', mode], ['State', text(s['state'])], ['Connection State', text(s['connection_state'])], ['Cluster ID', text(s['cluster_id'])],
      ['Secondary ID', text(s['secondary_id'])], ['Last Remote WAL', text(s['last_remote_wal'])]];
  rows.push(['Merkle Root', text(root)], ['Primary Cluster Addr', text(s['primary_cluster_addr'])]);
  if (s['corrupted_merkle_tree'] === true) rows.push(['Corrupted Merkle Tree', true]);
  const reindex = reindexText(s);
  if (reindex) rows.push(['Reindex', reindex]);
  ctx.out.write(kvTable(rows));
  if (mode === 'primary') {
    const secondaries = Array.isArray(s['secondaries']) ? (s['secondaries'] as Status[]) : [];
    ctx.out.write('\n');
    if (secondaries.length === 0) {
      ctx.out.write('No secondaries are connected or activated.\n');
      return;
    }
    const lastWal = typeof s['last_wal'] === 'number' ? s['last_wal'] : undefined;
    // Lag in WAL entries needs both ends' indexes; a server that reports no remote one shows '-'.
    const lag = (r: Status) => (lastWal !== undefined && typeof r['last_remote_wal'] === 'number' ? String(Math.max(0, lastWal - r['last_remote_wal'])) : '-');
    columns(ctx.out, ['Secondary', 'Connection', 'Last Heartbeat', 'Lag (WAL)', 'Cluster Address'], secondaries.map((r) => [
      text(r['node_id']), text(r['connection_status']), ago(r['last_heartbeat'], now), lag(r), text(r['cluster_address']),
    ]));
    return;
  }
  const primaries = Array.isArray(s['primaries']) ? (s['primaries'] as Status[]) : [];
  if (primaries.length === 0) return;
  ctx.out.write('\n');
  columns(ctx.out, ['Primary', 'Connection', 'Last Heartbeat', 'Clock Skew'], primaries.map((r) => [
    text(r['cluster_address']), text(r['connection_status']), ago(r['last_heartbeat'], now),
    typeof r['clock_skew_ms'] === 'number' ? `${r['clock_skew_ms']}ms` : '-',
  ]));
}

async function drStatus(client: ApiClientOptions): Promise<Status> {
  const { body } = await apiRequest(client, 'GET', 'sys/replication/dr/status');
  return ((body as { data?: Status } | null)?.data ?? {});
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const STAGES: Record<string, string> = { scan: 'scanning storage', build: 'building the tree', done: 'writing the tree' };

async function reindex(client: ApiClientOptions, token: string, options: { diff: boolean; force: boolean }, ctx: Context): Promise<number> {
  // A finished reindex is told by its new epoch: right after the request the rebuild may not have begun.
  const before = (await drStatus(client))['last_reindex_epoch'];
  await apiRequest(client, 'POST', 'sys/replication/dr/secondary/reindex', { dr_operation_token: token, ...options });
  const progress = progressLine({ stream: ctx.err, tty: ctx.errIsTTY === true, unit: 'keys', label: 'Reindex' });
  let status: Status;
  try {
    for (;;) {
      status = await drStatus(client);
      if (status['reindex_in_progress'] === true) {
        const stage = String(status['reindex_stage'] ?? '');
        progress.relabel(`Reindex: ${STAGES[stage] ?? stage}`);
        const total = status['reindex_keys_total'];
        progress.update(Number(status['reindex_keys_done'] ?? 0), typeof total === 'number' ? total : undefined);
      } else if (status['last_reindex_epoch'] !== before) {
        break;
      }
      await sleep(POLL_MS);
    }
  } finally {
    progress.finish();
  }
  const root = typeof status['merkle_root'] === 'string' ? status['merkle_root'].slice(0, SHORT_ROOT) : '';
  ctx.out.write(`Success! The Merkle index was rebuilt from storage at ${text(status['last_reindex_epoch'])} (Merkle root ${text(root)}).\n`);
  return 0;
}

export const replicationCommands: Command[] = [
  {
    name: ['operator', 'replication', 'status'], summary: 'Show DR and performance replication: role, state, WAL, peers', client: true,
    help: `Usage: strongroom operator replication status [options]

  Shows both kinds of replication on the server: its mode (primary, secondary or disabled),
  state, cluster ID, last WAL index, Merkle root (shortened), the primary's cluster address
  and any reindex running. A primary lists each secondary with its connection, last
  heartbeat and lag in WAL entries (as of that heartbeat: secondaries send one every 2 s);
  a secondary lists the primary addresses it knows.
  Vault's CLI has no such command (it reads sys/replication/status); this one reads the same.
  Needs no token.

${FORMAT_HELP}

  Example:
    $ strongroom operator replication status`,
    async run(args, ctx) {
      if (args.positional.length > 0) throw new UsageError('Usage: strongroom operator replication status [options] (it takes no arguments)');
      const opts = outputOptions(args, ctx.env);
      const { body } = await apiRequest(clientOf(args, ctx), 'GET', 'sys/replication/status');
      if (printStructured(ctx.out, opts, body)) return 0;
      const data = (body as { data?: { dr?: Status; performance?: Status } } | null)?.data ?? {};
      const now = Date.now();
      printKind(ctx, 'DR', data.dr ?? {}, now);
      ctx.out.write('\n');
      printKind(ctx, 'Performance', data.performance ?? {}, now);
      return 0;
    },
  },
  {
    name: ['operator', 'replication', 'reindex'], summary: 'Rebuild a DR secondary\'s Merkle index and follow it to the end', client: true,
    booleans: ['diff', 'force'],
    help: `Usage: strongroom operator replication reindex [options] [DR_OPERATION_TOKEN]

  Rebuilds the Merkle index of the DR secondary at the address from its storage, then waits
  for the rebuild to end. On a terminal it shows the keys done, the rate and the time left;
  piped, it prints only the result. Vault's CLI has no such command (it writes to
  sys/replication/dr/secondary/reindex); this one sends the same request. Only a DR
  secondary takes it, with a DR operation token (strongroom operator generate-root -dr-token).
  Without the token argument it asks for it without echo on a terminal, and reads the first
  line of stdin otherwise. Stopping this command does not stop the reindex: its progress
  stays in strongroom operator replication status.

  -diff    Compare the index with storage key by key (slower)
  -force   Start over even if a reindex is running

  Example:
    $ strongroom operator replication reindex
    DR Operation Token (will be hidden):`,
    async run(args, ctx) {
      if (args.positional.length > 1) throw new UsageError('Usage: strongroom operator replication reindex [options] [DR_OPERATION_TOKEN]');
      const client = clientOf(args, ctx);
      const token = await secretArgument(args, ctx, 'DR operation token', 'DR Operation Token');
      return reindex(client, token, { diff: boolFlag(args, 'diff'), force: boolFlag(args, 'force') }, ctx);
    },
  },
];

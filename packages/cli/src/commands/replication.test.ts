import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from '../command';
import { main } from '../main';

/**
 * The replication commands against a stand-in that answers with the server's shapes, through
 * main() in this process: a real primary with secondaries, a DR secondary and a reindex's
 * stages would take several clusters.
 */

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

interface StandIn {
  url: string;
  requests: Array<{ method: string; path: string; body: string }>;
  close(): Promise<void>;
}

function standIn(handler: Handler): Promise<StandIn> {
  const requests: StandIn['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', body });
      handler(req, body, res);
    });
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((done) => server.close(() => done())),
  })));
}

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

function sink(): { stream: NodeJS.WritableStream; text: () => string } {
  let text = '';
  const stream = { write: (chunk: string) => { text += chunk; return true; } } as unknown as NodeJS.WritableStream;
  return { stream, text: () => text };
}

async function cli(argv: string[], addr: string, options: { tty?: boolean; stdin?: string } = {}): Promise<{ code: number; out: string; err: string }> {
  const out = sink();
  const err = sink();
  const ctx: Context = {
    out: out.stream, err: err.stream, env: { VAULT_ADDR: addr }, stdin: () => options.stdin ?? '', errIsTTY: options.tty ?? false,
  };
  const code = await main(argv, out.stream, err.stream, ctx);
  return { code, out: out.text(), err: err.text() };
}

const ROOT = 'ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12';
const seconds = (n: number) => new Date(Date.now() - n * 1000).toISOString();

describe('strongroom operator replication status', () => {
  let server: StandIn;
  let answer: unknown;
  beforeAll(async () => {
    server = await standIn((req, _body, res) => (req.url === '/v1/sys/replication/status' ? json(res, 200, answer) : json(res, 404, { errors: ['no handler'] })));
  });
  afterAll(() => server.close());

  it('shows a DR primary with a row per secondary (connection, heartbeat, lag in WAL entries) and a disabled kind as such', async () => {
    answer = {
      data: {
        dr: {
          mode: 'primary', state: 'running', cluster_id: 'c-primary', last_wal: 120, last_dr_wal: 120, merkle_root: ROOT, primary_cluster_addr: 'https://10.0.0.1:8201',
          known_secondaries: ['dr-east', 'dr-west'],
          secondaries: [
            { node_id: 'dr-east', connection_status: 'connected', last_heartbeat: seconds(2), last_remote_wal: 117, cluster_address: 'https://10.1.0.1:8201' },
            // An older server reports no remote WAL for its secondaries: no lag to compute.
            { node_id: 'dr-west', connection_status: 'disconnected', last_heartbeat: '', cluster_address: '' },
          ],
        },
        performance: { mode: 'disabled' },
      },
    };
    const r = await cli(['operator', 'replication', 'status'], server.url);
    expect(r).toMatchObject({ code: 0, err: '' });
    const [dr, performance] = r.out.split('\n\n== Performance ==\n');
    expect(dr).toMatch(/^== DR ==\n/);
    expect(dr).toMatch(/^Mode\s+primary$/m);
    expect(dr).toMatch(/^State\s+running$/m);
    expect(dr).toMatch(/^Cluster ID\s+c-primary$/m);
    expect(dr).toMatch(/^Last WAL\s+120$/m);
    expect(dr).toMatch(/^Merkle Root\s+ab12cd34ef56$/m);
    expect(dr).not.toContain(ROOT);
    expect(dr).toMatch(/^Primary Cluster Addr\s+https:\/\/10\.0\.0\.1:8201$/m);
    expect(dr).toMatch(/^Secondary\s+Connection\s+Last Heartbeat\s+Lag \(WAL\)\s+Cluster Address$/m);
    expect(dr).toMatch(/^dr-east\s+connected\s+\d+s ago\s+3\s+https:\/\/10\.1\.0\.1:8201$/m);
    expect(dr).toMatch(/^dr-west\s+disconnected\s+-\s+-\s+-$/m);
    expect(performance).toMatch(/^Mode\s+disabled$/m);
    expect(performance).not.toMatch(/State/);
  });

  it('shows a secondary\'s connection state, last remote WAL, a reindex under way and its primaries', async () => {
    answer = {
      data: {
        dr: { mode: 'disabled' },
        performance: {
          mode: 'secondary', state: 'stream-wals', connection_state: 'ready', cluster_id: 'c-perf', secondary_id: 'perf-1', last_remote_wal: 88,
          merkle_root: ROOT, primary_cluster_addr: 'https://10.0.0.1:8201', reindex_in_progress: true, reindex_stage: 'scan',
          reindex_keys_done: 40, reindex_keys_total: 100,
          primaries: [{ cluster_address: 'https://10.0.0.1:8201', connection_status: 'connected', last_heartbeat: seconds(1), clock_skew_ms: -3 }],
        },
      },
    };
    const r = await cli(['operator', 'replication', 'status'], server.url);
    expect(r.code).toBe(0);
    const [dr, performance] = r.out.split('\n\n== Performance ==\n');
    expect(dr).toMatch(/^Mode\s+disabled$/m);
    expect(performance).toMatch(/^Mode\s+secondary$/m);
    expect(performance).toMatch(/^State\s+stream-wals$/m);
    expect(performance).toMatch(/^Connection State\s+ready$/m);
    expect(performance).toMatch(/^Secondary ID\s+perf-1$/m);
    expect(performance).toMatch(/^Last Remote WAL\s+88$/m);
    expect(performance).toMatch(/^Reindex\s+scan, 40\/100 keys$/m);
    expect(performance).toMatch(/^Primary\s+Connection\s+Last Heartbeat\s+Clock Skew$/m);
    expect(performance).toMatch(/^https:\/\/10\.0\.0\.1:8201\s+connected\s+\d+s ago\s+-3ms$/m);
  });

  it('prints the server\'s whole answer with -format=json, and refuses a bad format or an argument with exit 1', async () => {
    answer = { data: { dr: { mode: 'disabled' }, performance: { mode: 'disabled' } } };
    const r = await cli(['operator', 'replication', 'status', '-format=json'], server.url);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(answer);
    expect(await cli(['operator', 'replication', 'status', '-format=xml'], server.url)).toMatchObject({ code: 1, err: expect.stringContaining('-format must be') });
    expect(await cli(['operator', 'replication', 'status', 'extra'], server.url)).toMatchObject({ code: 1, err: expect.stringContaining('takes no arguments') });
    expect(await cli(['operator', 'replication', 'status', '-field=mode'], server.url)).toMatchObject({ code: 1, err: expect.stringContaining('flag provided but not defined: -field') });
  });

  it('exits 2 with the server\'s error when the server refuses', async () => {
    const refusing = await standIn((_req, _body, res) => json(res, 503, { errors: ['Vault is sealed'] }));
    try {
      const r = await cli(['operator', 'replication', 'status'], refusing.url);
      expect(r.code).toBe(2);
      expect(r.err).toContain('Code: 503');
      expect(r.err).toContain('Vault is sealed');
    } finally {
      await refusing.close();
    }
  });
});

describe('strongroom operator replication reindex', () => {
  const TOKEN = 'dr-op-token-value';
  let server: StandIn;
  /** The DR statuses the stand-in gives, one a read; the last repeats. */
  let statuses: Array<Record<string, unknown>>;
  let reindexAnswer: { status: number; body: unknown };

  beforeEach(async () => {
    const base = { mode: 'secondary', state: 'stream-wals', merkle_root: ROOT };
    statuses = [
      { ...base, last_reindex_epoch: '2026-01-01T00:00:00.000Z' },
      // Asked but not begun yet: the same epoch and nothing running is not the end.
      { ...base, last_reindex_epoch: '2026-01-01T00:00:00.000Z' },
      { ...base, last_reindex_epoch: '2026-01-01T00:00:00.000Z', reindex_in_progress: true, reindex_stage: 'scan', reindex_keys_done: 200, reindex_keys_total: 1000 },
      { ...base, last_reindex_epoch: '2026-01-01T00:00:00.000Z', reindex_in_progress: true, reindex_stage: 'build', reindex_keys_done: 1000, reindex_keys_total: 1000 },
      { ...base, merkle_root: `ff${ROOT.slice(2)}`, last_reindex_epoch: '2026-02-02T00:00:00.000Z' },
    ];
    reindexAnswer = { status: 200, body: { data: {} } };
    server = await standIn((req, _body, res) => {
      if (req.method === 'GET' && req.url === '/v1/sys/replication/dr/status') return json(res, 200, { data: statuses.length > 1 ? statuses.shift() : statuses[0] });
      if (req.method === 'POST' && req.url === '/v1/sys/replication/dr/secondary/reindex') return json(res, reindexAnswer.status, reindexAnswer.body);
      return json(res, 404, { errors: ['no handler'] });
    });
  });
  afterEach(() => server.close());

  it('starts the reindex with the DR operation token and flags, follows it to the end, and shows its stages on a terminal', async () => {
    const r = await cli(['operator', 'replication', 'reindex', '-diff', TOKEN], server.url, { tty: true });
    expect(r.code).toBe(0);
    const post = server.requests.find((q) => q.method === 'POST');
    expect(JSON.parse(post?.body ?? '{}')).toEqual({ dr_operation_token: TOKEN, diff: true, force: false });
    // Read until the epoch changed: five status reads.
    expect(server.requests.filter((q) => q.method === 'GET')).toHaveLength(5);
    expect(r.out).toBe('Success! The Merkle index was rebuilt from storage at 2026-02-02T00:00:00.000Z (Merkle root ff12cd34ef56).\n');
    const draws = r.err.split('\r\x1b[K').filter((l) => l !== '');
    expect(draws[0]).toMatch(/^Reindex: scanning storage {2}200 keys \/ 1000 keys {2}20% {2}\d+(\.\d)?k? keys\/s {2}ETA \S+$/);
    expect(draws[1]).toMatch(/^Reindex: building the tree {2}1000 keys \/ 1000 keys {2}100% /);
    expect(draws).toHaveLength(2);
    // The line is cleared at the end, and the token is never shown.
    expect(r.err.endsWith('\r\x1b[K')).toBe(true);
    expect(r.err + r.out).not.toContain(TOKEN);
  }, 30_000);

  it('prints only the result when stderr is not a terminal, and reads the token from stdin', async () => {
    const r = await cli(['operator', 'replication', 'reindex', '-force'], server.url, { stdin: `${TOKEN}\n` });
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toContain('Success! The Merkle index was rebuilt');
    expect(JSON.parse(server.requests.find((q) => q.method === 'POST')?.body ?? '{}')).toEqual({ dr_operation_token: TOKEN, diff: false, force: true });
  }, 30_000);

  it('exits 2 with the server\'s words when the server refuses the reindex, and 1 without a token', async () => {
    reindexAnswer = { status: 400, body: { errors: ['this cluster is not a DR secondary'] } };
    const refused = await cli(['operator', 'replication', 'reindex', TOKEN], server.url, { tty: true });
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('this cluster is not a DR secondary');
    expect(refused.err).not.toContain(TOKEN);
    expect(await cli(['operator', 'replication', 'reindex'], server.url)).toMatchObject({ code: 1, err: expect.stringContaining('no DR operation token') });
    expect(await cli(['operator', 'replication', 'reindex', 'a', 'b'], server.url)).toMatchObject({ code: 1, err: expect.stringContaining('Usage:') });
  });
});

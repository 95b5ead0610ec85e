import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Ack } from './canary-load';
import { verifyCanaries } from './verify-canaries';

/**
 * RPO is counted from what the promoted cluster answers: a canary that is not there, or is there
 * with another write's nonce, is lost; one that cannot be read fails the check instead.
 */

let server: Server;
let addr: string;
const stored = new Map<number, { seq: number; nonce: string }>();
let failing = -1;

beforeAll(async () => {
  server = createServer((req, res) => {
    const seq = Number(/canary-(\d+)$/.exec(req.url ?? '')?.[1]);
    if (req.headers['x-vault-token'] !== 'root') {
      res.writeHead(403).end(JSON.stringify({ errors: ['permission denied'] }));
    } else if (seq === failing) {
      res.writeHead(503).end(JSON.stringify({ errors: ['Vault is sealed'] }));
    } else if (stored.has(seq)) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { data: stored.get(seq) } }));
    } else {
      res.writeHead(404).end(JSON.stringify({ errors: [] }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const ack = (seq: number, nonce = `n${seq}`): Ack => ({ seq, nonce, addr: 'x', at: 0 });

it('counts the canaries missing or overwritten, in seq order', async () => {
  for (const seq of [1, 2, 4, 5, 7]) stored.set(seq, { seq, nonce: `n${seq}` });
  stored.set(5, { seq: 5, nonce: 'an earlier drill' });
  const acks = [7, 6, 5, 4, 3, 2, 1].map((s) => ack(s));
  expect((await verifyCanaries(addr, 'root', acks, 3)).map((a) => a.seq)).toEqual([3, 5, 6]);
  expect(await verifyCanaries(addr, 'root', [], 3)).toEqual([]);
});

it('fails rather than counts a canary it could not read', async () => {
  failing = 2;
  await expect(verifyCanaries(addr, 'root', [ack(1), ack(2)], 2)).rejects.toThrow(/reading canary-2 answered Vault is sealed/);
  failing = -1;
  await expect(verifyCanaries(addr, 'wrong', [ack(1)], 1)).rejects.toThrow(/permission denied/);
});

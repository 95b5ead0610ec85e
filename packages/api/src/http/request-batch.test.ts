import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { batchRequests } from './request-batch';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function fakeRequest(id: number): [http.IncomingMessage, http.ServerResponse] {
  return [{ id } as unknown as http.IncomingMessage, { id } as unknown as http.ServerResponse];
}

describe('batchRequests', () => {
  it('runs the requests of one turn together, in arrival order, after the turn has read them all', async () => {
    const seen: number[] = [];
    const run = batchRequests((req) => { seen.push((req as unknown as { id: number }).id); });
    for (const id of [1, 2, 3]) run(...fakeRequest(id));
    expect(seen).toEqual([]);
    await nextTurn();
    expect(seen).toEqual([1, 2, 3]);
    run(...fakeRequest(4));
    await nextTurn();
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('passes each request with its own response', async () => {
    const pairs: Array<[unknown, unknown]> = [];
    const run = batchRequests((req, res) => { pairs.push([(req as unknown as { id: number }).id, (res as unknown as { id: number }).id]); });
    run(...fakeRequest(7));
    run(...fakeRequest(8));
    await nextTurn();
    expect(pairs).toEqual([[7, 7], [8, 8]]);
  });

  it('runs the rest of a batch when one request\'s listener throws', async () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const run = batchRequests((req) => {
      const { id } = req as unknown as { id: number };
      if (id === 1) throw new Error('listener bug');
      seen.push(id);
    }, (err) => errors.push(err));
    for (const id of [1, 2]) run(...fakeRequest(id));
    await nextTurn();
    expect(seen).toEqual([2]);
    expect(errors).toEqual([new Error('listener bug')]);
  });

  it('answers every request of many concurrent clients on a real server', async () => {
    let calledInline = false;
    let emitting = false;
    const run = batchRequests((req, res) => {
      if (emitting) calledInline = true;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(JSON.stringify({ echo: Buffer.concat(chunks).toString(), url: req.url })));
    });
    const server = http.createServer((req, res) => {
      emitting = true;
      run(req, res);
      emitting = false;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => new Promise<{ echo: string; url: string }>((resolve, reject) => {
        const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: `/r/${i}`, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => { body += d; });
          res.on('end', () => resolve(JSON.parse(body) as { echo: string; url: string }));
        });
        req.on('error', reject);
        req.end(`body ${i}`);
      })));
      expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => ({ echo: `body ${i}`, url: `/r/${i}` })));
      expect(calledInline).toBe(false);
    } finally {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@strongroom/core';
import { startServer, type RunningServer } from '../server';
import { call, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';
import { makeSelfSignedCert } from '../test-support/tls';

/**
 * retry_join to a leader whose API has a private CA: the CA comes from leader_ca_cert_file and
 * the name checked on its certificate from leader_tls_servername. The first entry names a host
 * the certificate is not for, so its attempt fails on the name and the loop moves to the next.
 */
describe('retry_join over TLS', () => {
  let dir: string;
  let leader: TestServer;
  let joiner: RunningServer;
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-retry-join-tls-'));
    const { cert, key } = makeSelfSignedCert(dir);
    leader = await startTestServer({ tlsDisable: false, tlsCertFile: cert, tlsKeyFile: key });
    await initAndUnseal(leader);
    joiner = await startServer({
      storage: {
        type: 'raft', path: join(dir, 'joiner'), nodeId: 'joiner',
        retryJoin: [
          { leaderApiAddr: leader.url, leaderCaCertFile: cert, leaderTlsServername: 'not-this.example' },
          { leaderApiAddr: leader.url, leaderCaCertFile: cert, leaderTlsServername: 'localhost' },
        ],
      },
      listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1 << 20, clusterAddress: { host: '127.0.0.1', port: 0 } }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }) });
  });

  afterAll(async () => {
    await joiner?.close(1000);
    await leader?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('checks the leader under leader_tls_servername with the CA file, moves past a wrong name, and joins', async () => {
    for (let i = 0; i < 500 && !lines.some((l) => l['@message'] === 'join pending: unseal this node with the cluster\'s keys'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const failed = lines.filter((l) => l['@message'] === 'retry_join: could not join through this leader');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.['err']).toMatch(/not-this\.example/);
    const key = (leader.key as Buffer).toString('base64');
    const unsealed = await call(joiner.addresses[0] as string, 'PUT', 'sys/unseal', { body: { key } });
    expect({ status: unsealed.status, sealed: unsealed.json?.sealed }).toEqual({ status: 200, sealed: false });
    expect(joiner.cluster.configuration().servers.map((s) => s.node_id).sort()).toEqual(['joiner', 'test']);
  });
});

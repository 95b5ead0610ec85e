import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import { startServer } from '../server';

/**
 * A join stores the cluster's TLS identity only once the cluster's data has arrived. A node
 * killed before that has Raft data and no identity: it starts as a new node, the half-joined
 * data gone, so that it can join again (rather than answer "already belongs to a cluster").
 */
test('a server that finds Raft data without the cluster identity starts as a new node, able to join', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-unfinished-join-'));
  try {
    const data = join(dir, 'data');
    mkdirSync(join(data, 'raft', 'state'), { recursive: true });
    writeFileSync(join(data, 'raft', 'state', 'leftover'), 'from a join that did not finish');
    const server = await startServer({
      storage: { type: 'raft', path: data, nodeId: 'joiner' },
      listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1024 * 1024, clusterAddress: { host: '127.0.0.1', port: 0 } }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    try {
      expect(existsSync(join(data, 'raft'))).toBe(false);
      expect(await server.core.seal.status()).toMatchObject({ initialized: false, sealed: true });
    } finally {
      await server.close(1000);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

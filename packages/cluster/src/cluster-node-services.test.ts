import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { silentLogger } from '@strongroom/base';
import { createClusterTls, type ClusterTls } from '@strongroom/raft';
import { callEcho as callEchoWith, echo, echoService } from '../../raft/src/test-support/echo-service';
import { ClusterNode } from './cluster-node';

let tls: ClusterTls;
let foreign: ClusterTls;
let dir: string;
let node: ClusterNode | null = null;

beforeAll(async () => {
  [tls, foreign] = await Promise.all([createClusterTls(), createClusterTls()]);
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cluster-node-services-'));
});

afterEach(async () => {
  await node?.close();
  node = null;
  await rm(dir, { recursive: true, force: true });
});

const callEcho = (address: string, name: string, identity: ClusterTls) => callEchoWith(address, name, tls.caCert, identity);

describe('ClusterNode services on the cluster address', () => {
  it('serves services added before and after its transport starts, to the client CAs trusted at the time', async () => {
    // A member of a cluster: it starts its transport at start().
    await writeFile(join(dir, 'tls.json'), JSON.stringify(tls), { mode: 0o600 });
    node = new ClusterNode({ dir, nodeId: 'n1', listen: { host: '127.0.0.1', port: 0 }, logger: silentLogger });
    node.addService(echoService('Before'), echo('before'));
    node.trustClientCas([foreign.caCert]);
    expect(node.clusterCa()).toBeNull();
    await node.start('https://127.0.0.1:8200');
    expect(node.clusterCa()).toBe(tls.caCert);
    const address = node.advert.cluster;

    expect(await callEcho(address, 'Before', tls)).toBe('before: hi');
    expect(await callEcho(address, 'Before', foreign)).toBe('before: hi');
    node.addService(echoService('After'), echo('after'));
    expect(await callEcho(address, 'After', foreign)).toBe('after: hi');

    node.trustClientCas([]);
    await expect(callEcho(address, 'After', foreign)).rejects.toMatchObject({ code: status.UNAVAILABLE });
    expect(await callEcho(address, 'After', tls)).toBe('after: hi');
  });
});

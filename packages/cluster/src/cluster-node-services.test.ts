import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Metadata, credentials, status, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition } from '@grpc/grpc-js';
import { silentLogger } from '@strongroom/base';
import { CLUSTER_SERVER_NAME, createClusterTls, type ClusterTls } from '@strongroom/raft';
import { ClusterNode } from './cluster-node';

/** A service without a proto: its messages are the raw bytes. */
const echoService = (name: string): ServiceDefinition => ({
  Echo: {
    path: `/test.${name}/Echo`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
});
const echo = (name: string) => ({
  Echo: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, Buffer.from(`${name}: ${call.request.toString()}`)),
});

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

/** One call over a new connection, presenting `identity`; the server is checked against the cluster CA. */
async function callEcho(address: string, name: string, identity: ClusterTls): Promise<string> {
  const client = new Client(address, credentials.createSsl(Buffer.from(tls.caCert), Buffer.from(identity.key), Buffer.from(identity.cert)), {
    'grpc.ssl_target_name_override': CLUSTER_SERVER_NAME,
    'grpc.use_local_subchannel_pool': 1,
  });
  const method = echoService(name)['Echo']!;
  try {
    return await new Promise<string>((resolve, reject) => {
      client.makeUnaryRequest<Buffer, Buffer>(method.path, method.requestSerialize, method.responseDeserialize, Buffer.from('hi'), new Metadata(), { deadline: Date.now() + 10_000 }, (err, answer) =>
        err ? reject(err) : resolve(answer!.toString()),
      );
    });
  } finally {
    client.close();
  }
}

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

import { Client, Metadata, credentials, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { CLUSTER_SERVER_NAME } from '../tls/cluster-name';
import type { ClusterTls } from '../tls/cluster-tls';

/** A service without a proto, for tests of services served beside Raft: its messages are the raw bytes. */
export const echoService = (name: string): ServiceDefinition => ({
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

/** Answers `<name>: <request>`. */
export const echo = (name: string): UntypedServiceImplementation => ({
  Echo: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, Buffer.from(`${name}: ${call.request.toString()}`)),
});

/** One call of `name`'s Echo over a new connection, presenting `identity`; the server is checked against `caCert`. */
export async function callEcho(address: string, name: string, caCert: string, identity: ClusterTls): Promise<string> {
  const client = new Client(address, credentials.createSsl(Buffer.from(caCert), Buffer.from(identity.key), Buffer.from(identity.cert)), {
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

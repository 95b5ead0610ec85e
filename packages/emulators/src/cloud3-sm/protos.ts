/**
 * The Secret Manager service definition, loaded from the .proto files the official client ships
 * (and google-gax's for the common google.api and google.rpc types), so the emulator speaks the
 * exact messages the client encodes.
 */
import { dirname, join } from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const SERVICE_NAME = 'google.cloud.secretmanager.v1.SecretManagerService';

let cached: ServiceDefinition | undefined;

export function secretManagerService(): ServiceDefinition {
  if (cached) return cached;
  const client = dirname(require.resolve('@google-cloud/secret-manager'));
  const gax = dirname(require.resolve('google-gax', { paths: [client] }));
  const definition = protoLoader.loadSync('google/cloud/secretmanager/v1/service.proto', {
    includeDirs: [join(client, '..', 'protos'), join(gax, '..', 'protos')],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  cached = definition[SERVICE_NAME] as ServiceDefinition;
  return cached;
}

import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

/**
 * How proto-loader converts decoded messages to plain objects; the codecs are written against
 * exactly these. `defaults` fills the fields that have no presence (a missing `term` reads 0)
 * and leaves absent the `optional` ones, which is what keeps them distinguishable.
 */
const LOADER_OPTIONS: Options = {
  keepCase: false,
  longs: Number,
  enums: Number,
  bytes: Buffer,
  defaults: true,
  arrays: true,
};

/**
 * A file of the repository's proto/ folder, found from `dir`, a folder two levels under a
 * package (src/transport in sources, run by Jest, or dist/transport in the build: the same depth).
 */
export function repositoryProtoPath(dir: string, name: string): string {
  const file = path.resolve(dir, '../../../../proto', name);
  if (!existsSync(file)) throw new Error(`${name} not found at ${file}: the proto/ folder of the repository must ship beside the packages`);
  return file;
}

/** Loads `service` (package-qualified) from a proto file; `oneofs` names the member of a oneof that is set. */
export function loadService(file: string, service: string, options: { oneofs?: boolean } = {}): ServiceDefinition {
  return loadSync(file, { ...LOADER_OPTIONS, oneofs: options.oneofs ?? false })[service] as ServiceDefinition;
}

import { randomBytes } from 'node:crypto';
import { BadRequestError, definePath, type FieldData, type PathDefinition } from '@strongroom/core';
import { outputFormat } from './path-hash';

export const RANDOM_DEFAULT_BYTES = 32;
/**
 * The spec sets no ceiling; without one a single request could make the server build and
 * encode an arbitrarily large buffer. 128 KiB is Vault's own ceiling, so nothing a Vault
 * client could ask for is refused here.
 */
export const RANDOM_MAX_BYTES = 128 * 1024;

const SOURCES: readonly string[] = ['platform', 'seal', 'all'];

function parseBytes(field: string, text: string): number {
  if (!/^-?\d+$/.test(text)) throw new BadRequestError(`invalid value for "${field}": expected an integer number of bytes, got "${text}"`);
  return Number(text);
}

/**
 * Source and byte count from the URL or the body. With one path segment it is the byte count
 * when it is a number and the source otherwise, so both `random/64` and `random/all` work; a
 * count in the URL can then be controlled by ACL path rules.
 */
function sourceAndBytes(fields: FieldData): { source: string; bytes: number } {
  const first = fields.string('url_first');
  const second = fields.string('url_second');
  let source = fields.string('source') || 'platform';
  let bytes = fields.int('bytes');
  if (second !== '') {
    source = first;
    bytes = parseBytes('bytes', second);
  } else if (first !== '') {
    if (/^-?\d+$/.test(first)) bytes = parseBytes('bytes', first);
    else source = first;
  }
  return { source, bytes };
}

/** `random(/:source)(/:bytes)`: random bytes from node's CSPRNG; needs no key. */
export function randomPaths(): PathDefinition[] {
  return [
    definePath({
      pattern: 'random(?:/(?<url_first>[^/]+))?(?:/(?<url_second>[^/]+))?',
      fields: {
        bytes: { type: 'int', default: RANDOM_DEFAULT_BYTES, description: `Number of bytes, 1 to ${RANDOM_MAX_BYTES}; may be the last path segment.` },
        format: { type: 'string', default: 'base64', description: 'Encoding of the bytes: base64 or hex.' },
        source: { type: 'string', default: 'platform', description: 'platform or all (both the system CSPRNG); seal is not available.' },
      },
      operations: {
        async update(_req, fields) {
          const { source, bytes } = sourceAndBytes(fields);
          const format = outputFormat(fields.string('format') || 'base64');
          if (!SOURCES.includes(source)) {
            throw new BadRequestError(`invalid value for "source": unsupported entropy source "${source}"; must be "platform", "seal" or "all"`);
          }
          if (source === 'seal') {
            // Entropy augmentation draws on an HSM seal, a licensed Vault feature this server does not have.
            throw new BadRequestError('invalid value for "source": the seal entropy source is not available on this server (it needs entropy augmentation from an HSM seal); use "platform" or "all"');
          }
          if (bytes < 1) throw new BadRequestError('invalid value for "bytes": must be at least 1');
          if (bytes > RANDOM_MAX_BYTES) throw new BadRequestError(`invalid value for "bytes": must be at most ${RANDOM_MAX_BYTES}`);
          // "all" mixes every source there is; here that is the platform CSPRNG alone.
          return { data: { random_bytes: randomBytes(bytes).toString(format) } };
        },
      },
      help: 'Returns random bytes from the platform CSPRNG, base64- or hex-encoded.',
    }),
  ];
}

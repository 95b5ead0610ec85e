import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { decodeBase64 } from './codec';
import { hash } from './crypto';
import { hmacAlgorithm, pickField } from './path-hmac';

export function outputFormat(value: string): 'hex' | 'base64' {
  if (value !== 'hex' && value !== 'base64') {
    throw new BadRequestError(`invalid value for "format": unsupported encoding format "${value}"; must be "hex" or "base64"`);
  }
  return value;
}

/** `hash(/:algorithm)`: a digest of base64 input; needs no key. */
export function hashPaths(): PathDefinition[] {
  return [
    definePath({
      pattern: 'hash(?:/(?<algorithm>[\\w-]+))?',
      fields: {
        algorithm: { type: 'string', default: 'sha2-256', description: 'sha2-224/256/384/512 or sha3-224/256/384/512; may be the last path segment.' },
        input: { type: 'string', description: 'Base64 of the data to hash.' },
        format: { type: 'string', default: 'hex', description: 'Encoding of the sum: hex or base64.' },
      },
      operations: {
        async update(_req, fields) {
          const picked = pickField(fields, ['algorithm'], 'sha2-256');
          const algorithm = hmacAlgorithm(picked.field, picked.value);
          const format = outputFormat(fields.string('format') || 'hex');
          if (!fields.has('input')) throw new BadRequestError('missing required field "input"');
          const sum = hash(algorithm, decodeBase64('input', fields.string('input')));
          return { data: { sum: sum.toString(format) } };
        },
      },
      help: 'Hashes base64 input with the chosen algorithm and returns the sum as hex or base64.',
    }),
  ];
}

import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemInt, itemString, parseBatchInput, parsePartialFailureCode, runItems } from './batch';
import { decodeOptionalBase64 } from './codec';
import { decryptWithKey, encryptWithKey } from './encryption';
import type { KeyPolicy } from './key-policy';
import { encryptionKeyNotFound } from './path-encrypt';
import { KEY_NAME, type TransitContext } from './transit-context';

interface RewrapItem {
  ciphertext: string;
  context: string;
  nonce: string;
  keyVersion: number;
}

/** The plaintext exists only inside this function; rewrap never hands it out. */
function rewrapOne(policy: KeyPolicy, item: RewrapItem): Record<string, unknown> {
  if (item.ciphertext === '') throw new BadRequestError('missing required field "ciphertext"');
  const context = decodeOptionalBase64('context', item.context);
  const nonce = decodeOptionalBase64('nonce', item.nonce);
  const { plaintext } = decryptWithKey(policy, item.ciphertext, { context, nonce });
  try {
    const result = encryptWithKey(policy, { plaintext, context, nonce, keyVersion: item.keyVersion });
    return { ciphertext: result.ciphertext, key_version: result.keyVersion };
  } finally {
    plaintext.fill(0);
  }
}

/** `rewrap/:name`: re-encrypts ciphertext under the latest (or a chosen) version. */
export function rewrapPaths(ctx: TransitContext): PathDefinition[] {
  async function handle(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const batch = parseBatchInput(fields);
    const partialFailureCode = parsePartialFailureCode(fields);
    const items: RewrapItem[] = batch
      ? batch.map((raw, i) => ({
        ciphertext: itemString(raw, i, 'ciphertext'),
        context: itemString(raw, i, 'context'),
        nonce: itemString(raw, i, 'nonce'),
        keyVersion: itemInt(raw, i, 'key_version'),
      }))
      : [{
        ciphertext: fields.string('ciphertext'),
        context: fields.string('context'),
        nonce: fields.string('nonce'),
        keyVersion: fields.int('key_version'),
      }];
    const policy = await ctx.keys.get(req.storage, name);
    if (!policy) throw encryptionKeyNotFound(name);
    if (!batch) return { data: rewrapOne(policy, items[0] as RewrapItem) };
    const outcomes = await runItems(items, async (item) => rewrapOne(policy, item));
    return batchReply(batch, outcomes, partialFailureCode, ctx.logger);
  }

  return [
    definePath({
      pattern: `rewrap/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        ciphertext: { type: 'string', description: 'Ciphertext to re-encrypt (vault:v<N>:...).' },
        context: { type: 'string', description: 'Base64 key-derivation context; required by derived keys.' },
        nonce: { type: 'string', description: 'Base64 12-byte nonce; only for convergent keys from release 0.6.1.' },
        key_version: { type: 'int', default: 0, description: 'Version to re-encrypt with; 0 is the latest.' },
        reference: { type: 'string', description: 'Echoed back in batch results.' },
        batch_input: { type: 'any', description: 'List of items to rewrap; top-level ciphertext, context and nonce are then ignored.' },
        partial_failure_response_code: { type: 'int', description: 'Status of a batch reply where some items failed; 400 unless given.' },
      },
      operations: { update: handle },
      help: 'Re-encrypts ciphertext with the latest key version without returning the plaintext.',
    }),
  ];
}

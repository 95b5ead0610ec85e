import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemString, parseBatchInput, parsePartialFailureCode, runItems } from './batch';
import { decodeOptionalBase64 } from './codec';
import { decryptWithKey } from './encryption';
import type { KeyPolicy } from './key-policy';
import { encryptionKeyNotFound } from './path-encrypt';
import { KEY_NAME, type TransitContext } from './transit-context';

interface DecryptItem {
  ciphertext: string;
  context: string;
  nonce: string;
  associatedData: string;
}

function decryptOne(policy: KeyPolicy, item: DecryptItem): Record<string, unknown> {
  if (item.ciphertext === '') throw new BadRequestError('missing required field "ciphertext"');
  const { plaintext } = decryptWithKey(policy, item.ciphertext, {
    context: decodeOptionalBase64('context', item.context),
    nonce: decodeOptionalBase64('nonce', item.nonce),
    associatedData: decodeOptionalBase64('associated_data', item.associatedData),
  });
  return { plaintext: plaintext.toString('base64') };
}

/** `decrypt/:name`: opens ciphertext made by encrypt, rewrap or datakey. */
export function decryptPaths(ctx: TransitContext): PathDefinition[] {
  async function handle(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const batch = parseBatchInput(fields);
    const partialFailureCode = parsePartialFailureCode(fields);
    const items: DecryptItem[] = batch
      ? batch.map((raw, i) => ({
        ciphertext: itemString(raw, i, 'ciphertext'),
        context: itemString(raw, i, 'context'),
        nonce: itemString(raw, i, 'nonce'),
        associatedData: itemString(raw, i, 'associated_data'),
      }))
      : [{
        ciphertext: fields.string('ciphertext'),
        context: fields.string('context'),
        nonce: fields.string('nonce'),
        associatedData: fields.string('associated_data'),
      }];
    const policy = await ctx.keys.get(req.storage, name);
    if (!policy) throw encryptionKeyNotFound(name);
    if (!batch) return { data: decryptOne(policy, items[0] as DecryptItem) };
    const outcomes = await runItems(items, async (item) => decryptOne(policy, item));
    return batchReply(batch, outcomes, partialFailureCode, ctx.logger);
  }

  return [
    definePath({
      pattern: `decrypt/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        ciphertext: { type: 'string', description: 'Ciphertext as encrypt returned it (vault:v<N>:...).' },
        context: { type: 'string', description: 'Base64 key-derivation context; required by derived keys.' },
        nonce: { type: 'string', description: 'Base64 12-byte nonce; only for convergent keys from release 0.6.1.' },
        associated_data: { type: 'string', description: 'Base64 data authenticated with the ciphertext (AEAD types).' },
        reference: { type: 'string', description: 'Echoed back in batch results.' },
        batch_input: { type: 'any', description: 'List of items to decrypt; top-level ciphertext, context and nonce are then ignored.' },
        partial_failure_response_code: { type: 'int', description: 'Status of a batch reply where some items failed; 400 unless given.' },
      },
      operations: { update: handle },
      help: 'Decrypts ciphertext with a named key; the plaintext comes back base64-encoded.',
    }),
  ];
}

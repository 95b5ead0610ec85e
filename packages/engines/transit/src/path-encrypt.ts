import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemInt, itemString, parseBatchInput, parsePartialFailureCode, type ItemOutcome } from './batch';
import { sealBatch } from './batch-seal';
import { decodeBase64, decodeOptionalBase64 } from './codec';
import { isAeadKeyType, isKeyType } from './crypto';
import { encryptWithKey, isSealJob, prepareEncryption, type EncryptInput, type SealJob } from './encryption';
import { generateKeyPolicy, type KeyPolicy } from './key-policy';
import { loadKeysConfig } from './key-store';
import { KEY_NAME, type TransitContext } from './transit-context';

interface EncryptItem {
  plaintext: string;
  context: string;
  nonce: string;
  associatedData: string;
  keyVersion: number;
}

export function encryptionKeyNotFound(name: string): BadRequestError {
  return new BadRequestError(`encryption key not found: no key named "${name}"`);
}

/** convergent_encryption on encrypt is documented as a string; take the spellings of a bool. */
function parseLooseBool(field: string, value: unknown): boolean {
  if (value === undefined || value === null || value === '') return false;
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value === 'string' && /^(true|false|1|0|t|f)$/i.test(value)) return /^(true|1|t)$/i.test(value);
  throw new BadRequestError(`invalid value for "${field}": expected a boolean`);
}

/**
 * Creates the key an encrypt names when the caller was allowed to create it (the ACL let a
 * `create` through) and config/keys does not forbid it. Derivation follows whether the
 * request carried a context, as in Vault.
 */
async function upsertKey(ctx: TransitContext, req: BackendRequest, fields: FieldData, name: string, contextGiven: boolean): Promise<KeyPolicy> {
  if (req.operation !== 'create') throw encryptionKeyNotFound(name);
  if ((await loadKeysConfig(req.storage)).disable_upsert) {
    throw new BadRequestError(`encryption key not found: no key named "${name}", and config/keys disable_upsert stops encrypt from creating it`);
  }
  const type = fields.string('type');
  if (!isKeyType(type)) throw new BadRequestError(`invalid value for "type": unknown key type "${type}"`);
  if (!isAeadKeyType(type)) {
    throw new BadRequestError(`invalid value for "type": encrypt creates only aes128-gcm96, aes256-gcm96 and chacha20-poly1305 keys; create ${type} keys with keys/${name}`);
  }
  const convergent = parseLooseBool('convergent_encryption', fields.get('convergent_encryption'));
  if (convergent && !contextGiven) {
    throw new BadRequestError('invalid value for "convergent_encryption": convergent encryption requires derivation, so the request must carry a context');
  }
  return ctx.keys.update(req.storage, name, async (current) => {
    if (current) return { change: null, result: current };
    const policy = await generateKeyPolicy({
      name, type, derived: contextGiven, convergentEncryption: convergent, exportable: false, allowPlaintextBackup: false,
      keySize: 0, autoRotatePeriod: 0,
    }, ctx.clock.now());
    return { change: { next: policy }, result: policy };
  });
}

function encryptInput(item: EncryptItem): EncryptInput {
  return {
    plaintext: decodeBase64('plaintext', item.plaintext),
    context: decodeOptionalBase64('context', item.context),
    nonce: decodeOptionalBase64('nonce', item.nonce),
    associatedData: decodeOptionalBase64('associated_data', item.associatedData),
    keyVersion: item.keyVersion,
  };
}

function encryptOne(policy: KeyPolicy, item: EncryptItem): Record<string, unknown> {
  const result = encryptWithKey(policy, encryptInput(item));
  return { ciphertext: result.ciphertext, key_version: result.keyVersion };
}

/**
 * A batch's items: each checked and prepared in order (a failure is that item's error), then
 * sealed together, so that a large batch can share the work with the helper thread.
 */
async function encryptItems(policy: KeyPolicy, items: readonly EncryptItem[], contextGiven: boolean): Promise<ItemOutcome[]> {
  const outcomes = new Array<ItemOutcome>(items.length);
  const jobs = new Array<SealJob | undefined>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as EncryptItem;
    try {
      // A batch either derives every item or none, which is what decided upsert's `derived`.
      if ((item.context !== '') !== contextGiven) {
        throw new BadRequestError('invalid value for "context": give a context in every batch item or in none');
      }
      const prepared = prepareEncryption(policy, encryptInput(item));
      if (isSealJob(prepared)) jobs[i] = prepared;
      else outcomes[i] = { ok: { ciphertext: prepared.ciphertext, key_version: prepared.keyVersion } };
    } catch (error) {
      outcomes[i] = { error };
    }
  }
  const sealed = await sealBatch(jobs);
  for (let i = 0; i < items.length; i++) {
    const job = jobs[i];
    const result = sealed[i];
    if (!job || !result) continue;
    outcomes[i] = 'ciphertext' in result ? { ok: { ciphertext: result.ciphertext, key_version: job.version } } : { error: result.error };
  }
  return outcomes;
}

/** `encrypt/:name`: encrypts base64 plaintext, creating the key on the way if allowed. */
export function encryptPaths(ctx: TransitContext): PathDefinition[] {
  async function handle(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const batch = parseBatchInput(fields);
    const partialFailureCode = parsePartialFailureCode(fields);
    let items: EncryptItem[];
    if (batch) {
      items = batch.map((raw, i) => ({
        plaintext: itemString(raw, i, 'plaintext'),
        context: itemString(raw, i, 'context'),
        nonce: itemString(raw, i, 'nonce'),
        associatedData: itemString(raw, i, 'associated_data'),
        keyVersion: itemInt(raw, i, 'key_version'),
      }));
    } else {
      if (!fields.has('plaintext')) throw new BadRequestError('missing required field "plaintext"');
      items = [{
        plaintext: fields.string('plaintext'),
        context: fields.string('context'),
        nonce: fields.string('nonce'),
        associatedData: fields.string('associated_data'),
        keyVersion: fields.int('key_version'),
      }];
    }
    const contextGiven = (items[0]?.context ?? '') !== '';
    const policy = (await ctx.keys.get(req.storage, name)) ?? await upsertKey(ctx, req, fields, name, contextGiven);

    if (!batch) return { data: encryptOne(policy, items[0] as EncryptItem) };
    return batchReply(batch, await encryptItems(policy, items, contextGiven), partialFailureCode, ctx.logger);
  }

  return [
    definePath({
      pattern: `encrypt/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        plaintext: { type: 'string', description: 'Base64 of the data to encrypt.' },
        context: { type: 'string', description: 'Base64 key-derivation context; required by derived keys.' },
        nonce: { type: 'string', description: 'Base64 12-byte nonce; only for convergent keys from release 0.6.1.' },
        associated_data: { type: 'string', description: 'Base64 data authenticated with the ciphertext (AEAD types).' },
        key_version: { type: 'int', default: 0, description: 'Version to encrypt with; 0 is the latest.' },
        reference: { type: 'string', description: 'Echoed back in batch results.' },
        batch_input: { type: 'any', description: 'List of items to encrypt; top-level plaintext, context and nonce are then ignored.' },
        type: { type: 'string', default: 'aes256-gcm96', description: 'Type of a key created by this request.' },
        convergent_encryption: { type: 'any', description: 'Whether a key created by this request is convergent.' },
        partial_failure_response_code: { type: 'int', description: 'Status of a batch reply where some items failed; 400 unless given.' },
      },
      existenceCheck: async (req, fields) => (await ctx.keys.get(req.storage, fields.string('name'))) !== null,
      operations: { create: handle, update: handle },
      help: 'Encrypts data with a named key; with the create capability a missing key is created with defaults.',
    }),
  ];
}

import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemInt, itemString, parseBatchInput, parsePartialFailureCode, type ItemOutcome } from './batch';
import { POOLED_BATCH_MIN_ITEMS, sealOnPool, type PooledItem } from './batch-seal';
import { decodeBase64, decodeOptionalBase64 } from './codec';
import { isAeadKeyType, isKeyType, type AeadKeyType } from './crypto';
import { encryptionVersion, encryptWithKey, type EncryptInput } from './encryption';
import { generateKeyPolicy, type KeyPolicy, type KeyVersion } from './key-policy';
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

/**
 * An encrypted item's members as JSON, written directly: a ciphertext is `vault:v<n>:` and
 * base64, which JSON never escapes, so it needs no scan. encryptOne and the seal pool make
 * every successful item, both as `{ciphertext, key_version}` in that order.
 */
function encryptedJson(ok: Record<string, unknown>): string {
  return `"ciphertext":"${ok['ciphertext'] as string}","key_version":${ok['key_version'] as number}`;
}

function encryptOne(policy: KeyPolicy, item: EncryptItem): Record<string, unknown> {
  const result = encryptWithKey(policy, encryptInput(item));
  return { ciphertext: result.ciphertext, key_version: result.keyVersion };
}

/** One batch item on this thread: checked, prepared and sealed, or that item's error. */
function encryptHere(policy: KeyPolicy, item: EncryptItem, contextGiven: boolean): ItemOutcome {
  try {
    // A batch either derives every item or none, which is what decided upsert's `derived`.
    if ((item.context !== '') !== contextGiven) {
      throw new BadRequestError('invalid value for "context": give a context in every batch item or in none');
    }
    return { ok: encryptOne(policy, item) };
  } catch (error) {
    return { error };
  }
}

/**
 * Whether the key's encryptions can go to the seal pool: an AEAD key used as stored, with a
 * fresh random nonce each time (not derived, so not convergent either).
 */
function poolable(policy: KeyPolicy): boolean {
  return isAeadKeyType(policy.type) && policy.spec.supportsEncryption && !policy.derived && !policy.convergentEncryption;
}

/**
 * A batch's items, in order, each failure that item's error. In a large batch the items that
 * need nothing but the key version (no context, nonce or associated data) go to the seal pool,
 * which decodes, seals and formats them on the other cores; an item the pool cannot do (its
 * version is refused, its plaintext is not base64) is done here, so every error is the one the
 * single-item path gives, from the same code.
 */
async function encryptItems(policy: KeyPolicy, items: readonly EncryptItem[], contextGiven: boolean): Promise<ItemOutcome[]> {
  const outcomes = new Array<ItemOutcome>(items.length);
  const pooled = !contextGiven && items.length >= POOLED_BATCH_MIN_ITEMS && poolable(policy);
  const handed: PooledItem[] = [];
  const handedIndex: number[] = [];
  let lastRequested = -1;
  let lastVersion: KeyVersion | null = null;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as EncryptItem;
    if (pooled && item.context === '' && item.nonce === '' && item.associatedData === '') {
      if (item.keyVersion !== lastRequested) {
        lastRequested = item.keyVersion;
        try {
          lastVersion = encryptionVersion(policy, item.keyVersion);
        } catch {
          lastVersion = null;
        }
      }
      if (lastVersion?.key) {
        handed.push({ plaintext: item.plaintext, version: lastVersion.version, key: lastVersion.key });
        handedIndex.push(i);
        continue;
      }
    }
    outcomes[i] = encryptHere(policy, item, contextGiven);
  }
  if (handed.length === 0) return outcomes;
  const sealed = await sealOnPool(policy.type as AeadKeyType, handed);
  for (let k = 0; k < handed.length; k++) {
    const i = handedIndex[k] as number;
    const ciphertext = sealed[k];
    outcomes[i] = ciphertext !== undefined
      ? { ok: { ciphertext, key_version: (handed[k] as PooledItem).version } }
      : encryptHere(policy, items[i] as EncryptItem, contextGiven);
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
    const policy = ctx.keys.cached(name) ?? (await ctx.keys.get(req.storage, name)) ?? await upsertKey(ctx, req, fields, name, contextGiven);

    if (!batch) return { data: encryptOne(policy, items[0] as EncryptItem) };
    const outcomes = await encryptItems(policy, items, contextGiven);
    return batchReply(batch, outcomes, partialFailureCode, ctx.logger, items.length >= POOLED_BATCH_MIN_ITEMS ? encryptedJson : undefined);
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
      existenceCheck: (req, fields) => {
        const name = fields.string('name');
        if (ctx.keys.cached(name)) return true;
        return ctx.keys.get(req.storage, name).then((policy) => policy !== null);
      },
      operations: { create: handle, update: handle },
      help: 'Encrypts data with a named key; with the create capability a missing key is created with defaults.',
    }),
  ];
}

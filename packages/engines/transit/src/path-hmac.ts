import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemString, parseBatchInput, runItems, type BatchItem } from './batch';
import { CIPHERTEXT_PREFIX, decodeBase64 } from './codec';
import { HASH_ALGORITHMS, hmac, hmacVerify, isHashAlgorithm, type HashAlgorithm } from './crypto';
import { encryptionVersion } from './encryption';
import type { KeyPolicy, KeyVersion } from './key-policy';
import { KEY_NAME, type TransitContext } from './transit-context';

/**
 * The first of `names` the caller gave a non-empty value, else `fallback`. A path segment is
 * captured into the first name, so it wins over the body, as in Vault.
 */
export function pickField(fields: FieldData, names: readonly string[], fallback: string): { field: string; value: string } {
  for (const field of names) {
    const value = fields.string(field);
    if (fields.has(field) && value !== '') return { field, value };
  }
  return { field: names[0] ?? '', value: fallback };
}

export function hmacAlgorithm(field: string, value: string): HashAlgorithm {
  if (!isHashAlgorithm(value)) {
    throw new BadRequestError(`invalid value for "${field}": unsupported algorithm "${value}"; use one of ${HASH_ALGORITHMS.join(', ')}`);
  }
  return value;
}

/**
 * `vault:v<N>:<body>` as HMACs and signatures carry it. `what` names the value in messages,
 * so a caller knows which of the two it got wrong.
 */
export function parseVersioned(what: 'HMAC' | 'signature', text: string): { version: number; body: string } {
  if (!text.startsWith(`${CIPHERTEXT_PREFIX}v`)) throw new BadRequestError(`invalid ${what}: no prefix (expected vault:v<N>:...)`);
  const rest = text.slice(CIPHERTEXT_PREFIX.length);
  const colon = rest.indexOf(':');
  if (colon < 0) throw new BadRequestError(`invalid ${what}: wrong number of fields`);
  const versionText = rest.slice(1, colon);
  if (!/^\d{1,9}$/.test(versionText)) throw new BadRequestError(`invalid ${what}: version number could not be decoded`);
  return { version: Number(versionText), body: rest.slice(colon + 1) };
}

/**
 * The version an HMAC or signature names, if the key still lets it be checked: not newer than
 * the latest, not below min_decryption_version, not trimmed.
 */
export function verificationVersion(policy: KeyPolicy, what: 'HMAC' | 'signature', version: number): KeyVersion {
  if (version > policy.latestVersion) throw new BadRequestError(`invalid ${what}: version is too new`);
  const v = version >= policy.minDecryptionVersion ? policy.version(version) : undefined;
  if (!v) throw new BadRequestError('ciphertext or signature version is disallowed by policy (too old)');
  return v;
}

/** Checks `mac` against the HMAC of `input` under the version it names, in constant time. */
export function verifyHmacValue(policy: KeyPolicy, algorithm: HashAlgorithm, mac: string, input: Buffer): boolean {
  const parsed = parseVersioned('HMAC', mac);
  const v = verificationVersion(policy, 'HMAC', parsed.version);
  return hmacVerify(algorithm, v.hmacKey, input, decodeBase64('hmac', parsed.body));
}

export function hmacKeyNotFound(name: string): BadRequestError {
  return new BadRequestError(`encryption key not found: no key named "${name}"`);
}

/** An item's base64 `input`; an item that lacks the member is refused rather than taken as empty. */
export function itemInput(item: BatchItem, index: number): string {
  if (!Object.prototype.hasOwnProperty.call(item, 'input')) throw new BadRequestError('missing required field "input"');
  return itemString(item, index, 'input');
}

/**
 * sign, verify and hmac answer a batch with 200 whatever the items did, as Vault does: the
 * per-item `error` is the only signal, and clients written for Vault expect no other.
 */
export function keepBatchOk(reply: BackendResponse): BackendResponse {
  const { status: _status, ...rest } = reply;
  return rest;
}

/** `hmac/:name(/:algorithm)`: HMAC of base64 input with the key version's HMAC secret. */
export function hmacPaths(ctx: TransitContext): PathDefinition[] {
  async function handle(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const picked = pickField(fields, ['algorithm'], 'sha2-256');
    const algorithm = hmacAlgorithm(picked.field, picked.value);
    const batch = parseBatchInput(fields);
    if (!batch && !fields.has('input')) throw new BadRequestError('missing required field "input" (or "batch_input")');
    const policy = await ctx.keys.get(req.storage, name);
    if (!policy) throw hmacKeyNotFound(name);
    const v = encryptionVersion(policy, fields.int('key_version'));
    const one = (input: string): Record<string, unknown> => {
      const mac = hmac(algorithm, v.hmacKey, decodeBase64('input', input));
      // Always the default prefix: Vault never applied a key's ciphertext template to HMACs.
      return { hmac: `${CIPHERTEXT_PREFIX}v${v.version}:${mac.toString('base64')}` };
    };
    if (!batch) return { data: one(fields.string('input')) };
    const outcomes = await runItems(batch, async (item, i) => one(itemInput(item, i)));
    return keepBatchOk(batchReply(batch, outcomes, undefined, ctx.logger));
  }

  return [
    definePath({
      pattern: `hmac/${KEY_NAME}(?:/(?<algorithm>[\\w-]+))?`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        algorithm: { type: 'string', default: 'sha2-256', description: 'Hash of the HMAC: sha2-224/256/384/512 or sha3-224/256/384/512; may be the last path segment.' },
        input: { type: 'string', description: 'Base64 of the data to authenticate.' },
        key_version: { type: 'int', default: 0, description: 'Version whose HMAC secret to use; 0 is the latest.' },
        reference: { type: 'string', description: 'Echoed back in batch results.' },
        batch_input: { type: 'any', description: 'List of items, each with input and optionally reference; top-level input is then ignored.' },
      },
      operations: { update: handle },
      help: 'Generates an HMAC of the input with the named key; verify it with verify/:name and the hmac field.',
    }),
  ];
}

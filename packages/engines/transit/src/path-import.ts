import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import {
  BadRequestError, definePath, getJson, putJson, type BackendResponse, type FieldData, type LogicalStorage, type PathDefinition,
} from '@strongroom/core';
import { decodeBase64 } from './codec';
import {
  CryptoInputError, aesKeyUnwrapPad, checkImportedSymmetricKey, formatPublicKey, generateHmacSecret, generateKeyMaterial,
  isAsymmetricKeyType, isKeyType, keyTypeInfo, keysMatch, parseImportedPrivateKey, parsePublicKeyPem, parseWrapHash,
  privateKeyFromDer, rsaOaepDecrypt,
  type AsymmetricKeyType, type KeyType, type ParsedPrivateKey, type WrapHash,
} from './crypto';
import { KeyPolicy, KeyVersion, checkAutoRotatePeriod, keyReadView } from './key-policy';
import type { KeyStore } from './key-store';
import { KEY_NAME, type TransitContext } from './transit-context';

/** Our own storage entry, outside `policy/` so the wrapping key never shows up as a named key. */
export const WRAPPING_KEY_STORAGE_KEY = 'import/wrapping-key';

/** The first part of an import ciphertext: RSA-OAEP output under the 4096-bit wrapping key. */
export const WRAPPED_AES_KEY_BYTES = 512;

interface StoredWrappingKey {
  /** PKCS#8 DER, base64. */
  private_key: string;
  creation_time: number;
}

/**
 * Creations in flight, per mount (one KeyStore per mount). Two first reads of wrapping_key that
 * arrive together share one generation instead of each storing its own key, which would leave
 * whoever wrapped under the loser's public key unable to import.
 */
const creating = new WeakMap<KeyStore, Promise<KeyObject>>();

async function readWrappingKey(storage: LogicalStorage): Promise<KeyObject | null> {
  const stored = await getJson<StoredWrappingKey>(storage, WRAPPING_KEY_STORAGE_KEY);
  return stored ? privateKeyFromDer(Buffer.from(stored.private_key, 'base64')) : null;
}

/** The mount's RSA-4096 wrapping key (private half), made and stored on first use. */
export async function wrappingKey(ctx: TransitContext, storage: LogicalStorage): Promise<KeyObject> {
  const existing = await readWrappingKey(storage);
  if (existing) return existing;
  let pending = creating.get(ctx.keys);
  if (!pending) {
    pending = (async () => {
      // Another creation may have finished between our read and getting here.
      const again = await readWrappingKey(storage);
      if (again) return again;
      const material = await generateKeyMaterial('rsa-4096');
      if (material.kind !== 'asymmetric') throw new Error('wrapping key generation returned no key pair');
      const stored: StoredWrappingKey = { private_key: material.privateKeyDer.toString('base64'), creation_time: ctx.clock.now() };
      await putJson(storage, WRAPPING_KEY_STORAGE_KEY, stored);
      return material.privateKey;
    })();
    creating.set(ctx.keys, pending);
    const mine = pending;
    void mine.then(
      () => { if (creating.get(ctx.keys) === mine) creating.delete(ctx.keys); },
      () => { if (creating.get(ctx.keys) === mine) creating.delete(ctx.keys); },
    );
  }
  return pending;
}

/**
 * crypto/ reports a caller's mistake as CryptoInputError naming the request field; the API
 * answers 400, and every 400 names its field in quotes so a caller can tell what to fix.
 */
export function inputError(err: CryptoInputError, field: string = err.field): BadRequestError {
  if (err.message.includes(`"${field}"`)) return new BadRequestError(err.message, { cause: err });
  const text = err.message.startsWith(`${field}: `) ? err.message.slice(field.length + 2) : err.message;
  return new BadRequestError(`invalid value for "${field}": ${text}`, { cause: err });
}

/** Runs `fn`, turning crypto input errors into 400s. */
export function userInput<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CryptoInputError) throw inputError(err);
    throw err;
  }
}

/** Key material taken from an import request, checked against the key type. */
export type ImportedMaterial =
  | { kind: 'symmetric'; key: Buffer }
  | { kind: 'private'; parsed: ParsedPrivateKey }
  | { kind: 'public'; publicKey: KeyObject };

function parseImportType(raw: string): KeyType {
  const type = raw.trim().toLowerCase();
  if (!isKeyType(type)) throw new BadRequestError(`invalid value for "type": unknown key type "${raw}"`);
  if (keyTypeInfo(type).family === 'managed') {
    throw new BadRequestError('invalid value for "type": managed_key material lives in an external key manager and cannot be imported; managed keys are not configured on this server');
  }
  return type;
}

/** ciphertext = RSA-OAEP(wrapping key, 32-byte AES key) [512 bytes] ‖ AES-KWP(AES key, material). */
function unwrapCiphertext(wrapping: KeyObject, text: string, hash: WrapHash): Buffer {
  const blob = decodeBase64('ciphertext', text);
  if (blob.length <= WRAPPED_AES_KEY_BYTES) {
    throw new BadRequestError(
      `invalid value for "ciphertext": ${blob.length} bytes is too short; the first ${WRAPPED_AES_KEY_BYTES} bytes are the AES key `
      + 'wrapped with RSA-OAEP under this mount\'s wrapping_key, and the wrapped key material must follow',
    );
  }
  let ephemeral: Buffer;
  try {
    ephemeral = rsaOaepDecrypt(wrapping, blob.subarray(0, WRAPPED_AES_KEY_BYTES), hash);
  } catch (err) {
    if (!(err instanceof CryptoInputError)) throw err;
    throw new BadRequestError(
      `invalid value for "ciphertext": RSA-OAEP decryption of the first ${WRAPPED_AES_KEY_BYTES} bytes failed; they must be wrapped `
      + `with this mount's wrapping_key using ${hash} (see "hash_function")`,
      { cause: err },
    );
  }
  if (ephemeral.length !== 32) {
    throw new BadRequestError(`invalid value for "ciphertext": the wrapped AES key is ${ephemeral.length} bytes; it must be a 256-bit key`);
  }
  try {
    return aesKeyUnwrapPad(ephemeral, blob.subarray(WRAPPED_AES_KEY_BYTES));
  } catch (err) {
    if (err instanceof CryptoInputError) throw inputError(err);
    throw err;
  } finally {
    ephemeral.fill(0);
  }
}

/** Raw unwrapped bytes as the material of `type`; a mismatch is reported against "type". */
export function materialFromUnwrapped(type: KeyType, raw: Buffer): ImportedMaterial {
  const info = keyTypeInfo(type);
  if (info.symmetric) {
    try {
      // A copy: the caller wipes the unwrapped buffer once the material is taken.
      return { kind: 'symmetric', key: Buffer.from(checkImportedSymmetricKey(type, raw)) };
    } catch (err) {
      if (!(err instanceof CryptoInputError)) throw err;
      const want = info.family === 'hmac' ? '32 to 512 bytes' : `${info.keySize} bytes`;
      throw new BadRequestError(`invalid value for "type": the key unwrapped from "ciphertext" is ${raw.length} bytes, but ${type} keys are ${want}`, { cause: err });
    }
  }
  if (!isAsymmetricKeyType(type)) throw new BadRequestError(`invalid value for "type": keys of type ${type} cannot be imported`);
  try {
    return { kind: 'private', parsed: parseImportedPrivateKey(type, raw, '"ciphertext"') };
  } catch (err) {
    if (!(err instanceof CryptoInputError)) throw err;
    if (parsesAsPkcs8(raw)) throw new BadRequestError(`invalid value for "type": ${err.message}`, { cause: err });
    throw new BadRequestError(
      `invalid value for "ciphertext": the unwrapped key material is not a PKCS#8 private key, which keys of type ${type} are imported as`,
      { cause: err },
    );
  }
}

function parsesAsPkcs8(der: Buffer): boolean {
  try {
    createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    return true;
  } catch {
    return false;
  }
}

function parsesAsSpki(pem: string): boolean {
  try {
    createPublicKey({ key: pem, format: 'pem', type: 'spki' });
    return true;
  } catch {
    return false;
  }
}

/** A `public_key` field as the public key of `type`; a key of another kind is reported against "type". */
export function materialFromPublicKey(type: KeyType, pem: string, derived: boolean): ImportedMaterial {
  if (!isAsymmetricKeyType(type) || !keyTypeInfo(type).supportsPublicKeyImport) {
    throw new BadRequestError(`invalid value for "public_key": keys of type ${type} cannot be imported from a public key; wrap the key into "ciphertext"`);
  }
  if (type === 'ed25519' && derived) {
    // A derived ed25519 key is an HKDF secret that happens to look like a key pair; its public
    // half alone cannot derive anything.
    throw new BadRequestError('invalid value for "public_key": a derived ed25519 key cannot be imported from its public key alone; wrap the private key into "ciphertext"');
  }
  try {
    return { kind: 'public', publicKey: parsePublicKeyPem(type as AsymmetricKeyType, pem, '"public_key"') };
  } catch (err) {
    if (!(err instanceof CryptoInputError)) throw err;
    if (pem.includes('-----BEGIN PUBLIC KEY-----') && parsesAsSpki(pem)) {
      throw new BadRequestError(`invalid value for "type": ${err.message}`, { cause: err });
    }
    throw inputError(err, 'public_key');
  }
}

/**
 * Reads the key material of import and import_version: the wrapped `ciphertext`, or else the
 * plain `public_key`. Vault documents public_key as ignored when ciphertext is given; we do the
 * same and say so in a warning.
 */
async function readMaterial(
  ctx: TransitContext, storage: LogicalStorage, fields: FieldData, type: KeyType, derived: boolean, warnings: string[],
): Promise<ImportedMaterial> {
  const ciphertext = fields.string('ciphertext');
  const publicKey = fields.string('public_key');
  if (ciphertext === '' && publicKey === '') {
    throw new BadRequestError('missing required field "ciphertext": give the wrapped key material, or "public_key" to import only a public key');
  }
  if (ciphertext === '') return materialFromPublicKey(type, publicKey, derived);
  if (publicKey !== '') warnings.push('"public_key" was ignored because "ciphertext" was given');
  const hash = userInput(() => parseWrapHash(fields.string('hash_function') || 'SHA256', 'hash_function'));
  const raw = unwrapCiphertext(await wrappingKey(ctx, storage), ciphertext, hash);
  try {
    return materialFromUnwrapped(type, raw);
  } finally {
    raw.fill(0);
  }
}

/** A new version holding imported material; every non-hmac version gets its own HMAC secret. */
export function importedVersion(type: KeyType, version: number, material: ImportedMaterial, now: number): KeyVersion {
  const hmacFamily = keyTypeInfo(type).family === 'hmac';
  switch (material.kind) {
    case 'symmetric': {
      const key = material.key;
      return new KeyVersion(version, hmacFamily ? undefined : key, undefined, undefined, hmacFamily ? key : generateHmacSecret(), now, undefined, undefined, true);
    }
    case 'private':
      return new KeyVersion(
        version, undefined, material.parsed.privateKeyDer, formatPublicKey(type as AsymmetricKeyType, material.parsed.publicKey),
        generateHmacSecret(), now, undefined, undefined, true,
      );
    case 'public':
      return new KeyVersion(
        version, undefined, undefined, formatPublicKey(type as AsymmetricKeyType, material.publicKey),
        generateHmacSecret(), now, undefined, undefined, true,
      );
  }
}

/** Why `policy` cannot take import_version, or null. */
export function importVersionRefusal(policy: KeyPolicy): string | null {
  if (!policy.imported) {
    return `key "${policy.name}" was generated by this service; import_version only adds to keys created through keys/${policy.name}/import`;
  }
  if (policy.convergentEncryption) return `import_version cannot be used on key "${policy.name}": it uses convergent encryption`;
  for (const v of policy.versions.values()) {
    if (!v.imported) {
      return `key "${policy.name}" has been rotated in this service since it was imported (version ${v.version} was generated here); no further versions can be imported`;
    }
  }
  return null;
}

const KEY_MATERIAL_FIELDS = {
  ciphertext: { type: 'string', description: 'Base64: the 32-byte AES key wrapped with RSA-OAEP under wrapping_key (512 bytes), then the key material wrapped with AES-KWP under that AES key.' },
  public_key: { type: 'string', description: 'PEM public key, for a key that can only verify and encrypt; ignored when ciphertext is given.' },
  hash_function: { type: 'string', default: 'SHA256', description: 'Hash of the RSA-OAEP step: SHA1, SHA224, SHA256, SHA384 or SHA512.' },
} as const;

/** `wrapping_key`, `keys/:name/import` and `keys/:name/import_version`: bring your own key. */
export function importPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'wrapping_key',
      operations: {
        async read(req) {
          const key = await wrappingKey(ctx, req.storage);
          return { data: { public_key: createPublicKey(key).export({ format: 'pem', type: 'spki' }) as string } };
        },
      },
      help: 'Returns the mount\'s 4096-bit RSA public key that key material for import is wrapped with.',
    }),

    definePath({
      pattern: `keys/${KEY_NAME}/import`,
      fields: {
        name: { type: 'string', description: 'Name of the new key.' },
        type: { type: 'string', description: 'Key type of the imported material (required).' },
        ...KEY_MATERIAL_FIELDS,
        allow_rotation: { type: 'bool', default: false, description: 'Let this service rotate the imported key.' },
        derived: { type: 'bool', default: false, description: 'Derive a key per request from a caller-supplied context.' },
        context: { type: 'string', default: '', description: 'Base64 key-derivation context; required when derived is true.' },
        exportable: { type: 'bool', default: false, description: 'Allow export of the key material; cannot be undone.' },
        allow_plaintext_backup: { type: 'bool', default: false, description: 'Allow plaintext backups; cannot be undone.' },
        auto_rotate_period: { type: 'duration', default: 0, description: 'Rotate automatically this often (needs allow_rotation); 0 disables, else at least 1h.' },
        convergent_encryption: { type: 'any', description: 'Not supported for imported keys.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          if (!fields.has('type') || fields.string('type').trim() === '') {
            throw new BadRequestError('missing required field "type": name the key type of the imported material, e.g. aes256-gcm96');
          }
          const type = parseImportType(fields.string('type'));
          const spec = keyTypeInfo(type);
          const convergent = fields.get('convergent_encryption');
          if (convergent === true || (typeof convergent === 'string' && /^(true|1|t)$/i.test(convergent)) || convergent === 1) {
            throw new BadRequestError('invalid value for "convergent_encryption": import cannot be used on keys with convergent encryption enabled');
          }
          const derived = fields.bool('derived');
          if (derived && !spec.supportsDerivation) {
            throw new BadRequestError(`invalid value for "derived": key derivation is not supported for keys of type ${type}`);
          }
          const context = fields.string('context');
          if (derived && context === '') {
            throw new BadRequestError('missing required field "context": a derived key is imported with a base64 context');
          }
          // Nothing is derived at import time; the context is only checked, so a bad one fails here.
          if (context !== '') decodeBase64('context', context);
          const autoRotatePeriod = fields.int('auto_rotate_period');
          checkAutoRotatePeriod(autoRotatePeriod);
          const allowRotation = fields.bool('allow_rotation');
          if (autoRotatePeriod > 0 && !allowRotation) {
            throw new BadRequestError('invalid value for "auto_rotate_period": automatic rotation of an imported key needs "allow_rotation" set to true');
          }
          // Fail before unwrapping when the name is taken; the check is repeated under the lock.
          if (await ctx.keys.get(req.storage, name)) throw existingKey(name);

          const warnings: string[] = [];
          const material = await readMaterial(ctx, req.storage, fields, type, derived, warnings);
          return ctx.keys.update<BackendResponse>(req.storage, name, async (current) => {
            if (current) throw existingKey(name);
            const policy = KeyPolicy.fromStored({
              name, type, derived, kdf: 'hkdf_sha256', convergent_encryption: false, convergent_version: 0,
              exportable: fields.bool('exportable'), allow_plaintext_backup: fields.bool('allow_plaintext_backup'), deletion_allowed: false,
              min_decryption_version: 1, min_encryption_version: 0, min_available_version: 0, latest_version: 0,
              auto_rotate_period: autoRotatePeriod, key_size: material.kind === 'symmetric' && spec.family === 'hmac' ? material.key.length : 0,
              imported: true, allow_imported_key_rotation: allowRotation, versions: {},
            });
            policy.versions.set(1, importedVersion(type, 1, material, ctx.clock.now()));
            policy.latestVersion = 1;
            return { change: { next: policy }, result: { data: keyReadView(policy), ...(warnings.length > 0 ? { warnings } : {}) } };
          });
        },
      },
      help: 'Creates a key from material generated elsewhere: wrapped under wrapping_key, or a public key alone.',
    }),

    definePath({
      pattern: `keys/${KEY_NAME}/import_version`,
      fields: {
        name: { type: 'string', description: 'Name of the imported key.' },
        ...KEY_MATERIAL_FIELDS,
        version: { type: 'int', description: 'Version to complete with its private key; absent: add a new version (or complete the latest when it lacks its private key).' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          const first = await ctx.keys.get(req.storage, name);
          if (!first) throw new BadRequestError(`key "${name}" not found; create it through keys/${name}/import`);
          const refusal = importVersionRefusal(first);
          if (refusal) throw new BadRequestError(refusal);
          const targetVersion = fields.has('version') ? fields.int('version') : undefined;
          if (targetVersion !== undefined && !first.spec.supportsPublicKeyImport) {
            throw new BadRequestError(`invalid value for "version": versions of ${first.type} keys cannot be updated; leave "version" out to import a new version`);
          }
          const warnings: string[] = [];
          const material = await readMaterial(ctx, req.storage, fields, first.type, first.derived, warnings);

          return ctx.keys.update<BackendResponse>(req.storage, name, async (current) => {
            if (!current) throw new BadRequestError(`key "${name}" not found; create it through keys/${name}/import`);
            const again = importVersionRefusal(current);
            if (again) throw new BadRequestError(again);
            const next = current.clone();
            if (targetVersion !== undefined) {
              next.versions.set(targetVersion, completedVersion(current, targetVersion, material));
            } else {
              const latest = current.version(current.latestVersion);
              const fills = material.kind === 'private' && latest !== undefined && !latest.hasPrivateKey()
                && keysMatch(material.parsed.privateKey, latest.publicKey());
              if (fills) {
                next.versions.set(latest.version, completedVersion(current, latest.version, material));
              } else {
                const version = current.latestVersion + 1;
                next.versions.set(version, importedVersion(current.type, version, material, ctx.clock.now()));
                next.latestVersion = version;
              }
            }
            if (material.kind === 'symmetric' && current.spec.family === 'hmac') next.keySize = material.key.length;
            return { change: { next }, result: { data: keyReadView(next), ...(warnings.length > 0 ? { warnings } : {}) } };
          });
        },
      },
      help: 'Adds a version to an imported key, or gives an imported public-key-only version its private key.',
    }),
  ];
}

function existingKey(name: string): BadRequestError {
  return new BadRequestError(`key "${name}" already exists: import only creates new keys; use keys/${name}/import_version to add a version to an imported key`);
}

/** `version` of `policy` with its private key filled in from `material`, which must match it. */
function completedVersion(policy: KeyPolicy, n: number, material: ImportedMaterial): KeyVersion {
  const entry = policy.version(n);
  if (!entry || n < Math.max(1, policy.minDecryptionVersion)) {
    throw new BadRequestError(`invalid value for "version": key "${policy.name}" has no version ${n} that can be updated`);
  }
  if (entry.hasPrivateKey()) {
    throw new BadRequestError(`invalid value for "version": version ${n} of key "${policy.name}" already has its private key and cannot be updated`);
  }
  if (material.kind !== 'private') {
    throw new BadRequestError(`invalid value for "public_key": version ${n} already has a public key; give its private key in "ciphertext"`);
  }
  if (!keysMatch(material.parsed.privateKey, entry.publicKey())) {
    throw new BadRequestError(`invalid value for "ciphertext": the private key does not match the public key of version ${n}`);
  }
  return new KeyVersion(
    n, undefined, material.parsed.privateKeyDer, entry.publicKeyText, entry.hmacKey, entry.createdAt,
    entry.convergentVersion, entry.certificateChain, true,
  );
}

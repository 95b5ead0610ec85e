import { BadRequestError } from '@strongroom/core';
import { formatCiphertext, parseCiphertext } from './codec';
import {
  AEAD_NONCE_SIZE, CryptoInputError, aeadDecrypt, aeadEncrypt, convergentNonce, isAeadKeyType, resolveAeadKey, rsaOaepDecrypt,
  rsaOaepEncrypt, type AeadKey, type AeadKeyType, type ConvergentVersion,
} from './crypto';
import type { KeyPolicy, KeyVersion } from './key-policy';

/** The per-request inputs of an encryption, already base64-decoded. */
export interface EncryptInput {
  plaintext: Buffer;
  context?: Buffer | undefined;
  nonce?: Buffer | undefined;
  associatedData?: Buffer | undefined;
  /** 0 means the latest version. */
  keyVersion: number;
}

export interface DecryptInput {
  context?: Buffer | undefined;
  nonce?: Buffer | undefined;
  associatedData?: Buffer | undefined;
}

/** crypto/ reports a caller's mistake as CryptoInputError; to the API that is a 400. */
export function asUserError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CryptoInputError) throw new BadRequestError(err.message, { cause: err });
    throw err;
  }
}

export function requireEncryptionSupport(policy: KeyPolicy): void {
  if (!policy.spec.supportsEncryption) {
    throw new BadRequestError(`key "${policy.name}" is of type ${policy.type}, which does not support encryption`);
  }
}

/** The version an encryption uses: the latest, or the one asked for within the key's limits. */
export function encryptionVersion(policy: KeyPolicy, requested: number): KeyVersion {
  if (requested < 0) throw new BadRequestError('invalid value for "key_version": must not be negative');
  const n = requested === 0 ? policy.latestVersion : requested;
  if (n > policy.latestVersion) {
    throw new BadRequestError(`invalid value for "key_version": version ${n} is newer than the key's latest version ${policy.latestVersion}`);
  }
  if (policy.minEncryptionVersion > 0 && n < policy.minEncryptionVersion) {
    throw new BadRequestError(`invalid value for "key_version": version ${n} is below the key's min_encryption_version ${policy.minEncryptionVersion}`);
  }
  const version = policy.version(n);
  if (!version) throw new BadRequestError(`invalid value for "key_version": version ${n} of key "${policy.name}" no longer exists (trimmed)`);
  return version;
}

/** The version a ciphertext or signature names, if the key's policy still allows its use. */
export function decryptionVersion(policy: KeyPolicy, version: number): KeyVersion {
  if (version > policy.latestVersion) throw new BadRequestError('invalid ciphertext: version is too new');
  const v = version >= policy.minDecryptionVersion ? policy.version(version) : undefined;
  if (!v) throw new BadRequestError('ciphertext or signature version is disallowed by policy (too old)');
  return v;
}

function checkAssociatedData(policy: KeyPolicy, aad: Buffer | undefined): void {
  if (aad && aad.length > 0 && !policy.spec.supportsAssociatedData) {
    throw new BadRequestError(`invalid value for "associated_data": keys of type ${policy.type} cannot bind associated data`);
  }
}

function aeadType(policy: KeyPolicy): AeadKeyType {
  if (!isAeadKeyType(policy.type)) throw new Error(`key type ${policy.type} is not an AEAD type`);
  return policy.type;
}

/**
 * The AEAD key of one operation and the nonce scheme of the version: 0 for a random nonce,
 * otherwise the convergent version (1 takes the caller's nonce and does not embed it, 2 and
 * 3 derive it from the plaintext).
 */
function aeadKey(policy: KeyPolicy, v: KeyVersion, context: Buffer | undefined): { key: AeadKey; scheme: number } {
  if (policy.derived && (!context || context.length === 0)) {
    throw new BadRequestError(`invalid value for "context": key "${policy.name}" is derived, so every request must carry a base64 context`);
  }
  if (!v.key) throw new Error(`key "${policy.name}" version ${v.version} has no key material`);
  const scheme = policy.convergentVersionOf(v);
  const key = resolveAeadKey({
    type: aeadType(policy), key: v.key, derived: policy.derived, kdf: policy.kdf, context,
    convergentVersion: scheme === 0 ? undefined : scheme as ConvergentVersion,
  });
  return { key, scheme };
}

function callerNonce(scheme: number, nonce: Buffer | undefined): Buffer | undefined {
  if (scheme === 1) {
    if (!nonce || nonce.length !== AEAD_NONCE_SIZE) {
      throw new BadRequestError(`invalid value for "nonce": this key version needs a ${AEAD_NONCE_SIZE}-byte base64 nonce on every request`);
    }
    return nonce;
  }
  return undefined;
}

/**
 * An AEAD encryption checked and ready to run: the key that encrypts (derived already), the
 * nonce when it is not a fresh random one, and the version the ciphertext names.
 */
export interface SealJob {
  type: AeadKeyType;
  key: Buffer;
  version: number;
  plaintext: Buffer;
  associatedData?: Buffer;
  /** Fixed by the convergent scheme; absent means a fresh random nonce. */
  nonce?: Buffer;
  /** False only for version-1 convergent keys, whose caller keeps the nonce. */
  includeNonce: boolean;
}

/**
 * Checks an encryption against the key's rules and resolves its key and nonce; RSA keys, which
 * encrypt at once, answer their ciphertext instead.
 */
export function prepareEncryption(policy: KeyPolicy, input: EncryptInput): SealJob | { ciphertext: string; keyVersion: number } {
  requireEncryptionSupport(policy);
  checkAssociatedData(policy, input.associatedData);
  const v = encryptionVersion(policy, input.keyVersion);
  if (policy.spec.family === 'rsa') {
    const sealed = asUserError(() => rsaOaepEncrypt(v.publicKey(), input.plaintext));
    return { ciphertext: formatCiphertext(v.version, sealed), keyVersion: v.version };
  }
  const { key, scheme } = aeadKey(policy, v, input.context);
  // A caller-chosen nonce is only safe where the scheme was designed around it; anywhere else
  // a reused nonce would break GCM, so it is refused rather than used.
  if (scheme !== 1 && input.nonce && input.nonce.length > 0) {
    throw new BadRequestError('invalid value for "nonce": a nonce is accepted only by convergent keys from before nonces were derived (release 0.6.1)');
  }
  const nonce = scheme === 1 ? callerNonce(scheme, input.nonce) : key.nonceKey ? convergentNonce(key.nonceKey, input.plaintext) : undefined;
  return {
    type: aeadType(policy), key: key.encryptionKey, version: v.version, plaintext: input.plaintext,
    ...(input.associatedData ? { associatedData: input.associatedData } : {}),
    ...(nonce ? { nonce } : {}),
    includeNonce: scheme !== 1,
  };
}

export function isSealJob(prepared: SealJob | { ciphertext: string }): prepared is SealJob {
  return !('ciphertext' in prepared);
}

/** Runs a prepared encryption on this thread. */
export function seal(job: SealJob): string {
  const payload = asUserError(() => aeadEncrypt(job.type, job.key, job.plaintext, {
    ...(job.associatedData ? { associatedData: job.associatedData } : {}),
    ...(job.nonce ? { nonce: job.nonce } : {}),
    includeNonce: job.includeNonce,
  }));
  return formatCiphertext(job.version, payload);
}

export function encryptWithKey(policy: KeyPolicy, input: EncryptInput): { ciphertext: string; keyVersion: number } {
  const prepared = prepareEncryption(policy, input);
  if (!isSealJob(prepared)) return prepared;
  return { ciphertext: seal(prepared), keyVersion: prepared.version };
}

export function decryptWithKey(policy: KeyPolicy, ciphertext: string, input: DecryptInput): { plaintext: Buffer; keyVersion: number } {
  if (!policy.spec.supportsDecryption) {
    throw new BadRequestError(`key "${policy.name}" is of type ${policy.type}, which does not support decryption`);
  }
  const parsed = parseCiphertext(ciphertext);
  checkAssociatedData(policy, input.associatedData);
  const v = decryptionVersion(policy, parsed.version);
  if (policy.spec.family === 'rsa') {
    if (!v.hasPrivateKey()) {
      throw new BadRequestError(`version ${v.version} of key "${policy.name}" holds only a public key and cannot decrypt`);
    }
    return { plaintext: asUserError(() => rsaOaepDecrypt(v.privateKey(), parsed.payload)), keyVersion: v.version };
  }
  const { key, scheme } = aeadKey(policy, v, input.context);
  const nonce = callerNonce(scheme, input.nonce);
  const plaintext = asUserError(() => aeadDecrypt(aeadType(policy), key.encryptionKey, parsed.payload, {
    ...(input.associatedData ? { associatedData: input.associatedData } : {}),
    ...(nonce ? { nonce } : {}),
  }));
  return { plaintext, keyVersion: v.version };
}

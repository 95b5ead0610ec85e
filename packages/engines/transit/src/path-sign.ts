import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type FieldSchemas, type PathDefinition,
} from '@strongroom/core';
import { batchReply, itemString, parseBatchInput, runItems, type BatchItem } from './batch';
import { CIPHERTEXT_PREFIX, decodeBase64, decodeOptionalBase64 } from './codec';
import {
  decodeSignature, deriveEd25519Key, ed25519RawPrivateKey, encodeSignature, isAsymmetricKeyType, isDigestAlgorithm,
  parseSaltLength, sign, verify,
  type AsymmetricKeyType, type DerivedEd25519Key, type MarshalingAlgorithm, type SignOptions, type SignatureAlgorithm,
  type SignatureHashAlgorithm,
} from './crypto';
import { asUserError, encryptionVersion } from './encryption';
import type { KeyPolicy, KeyVersion } from './key-policy';
import {
  hmacAlgorithm, itemInput, keepBatchOk, parseVersioned, pickField, verificationVersion, verifyHmacValue,
} from './path-hmac';
import { KEY_NAME, type TransitContext } from './transit-context';

/**
 * The per-context key of a derived ed25519 key version. It is derived from the private key,
 * so a version imported as a public key alone cannot serve derived requests.
 */
export function derivedEd25519(policy: KeyPolicy, v: KeyVersion, context: Buffer | undefined): DerivedEd25519Key {
  if (!context || context.length === 0) {
    throw new BadRequestError(`invalid value for "context": key "${policy.name}" is derived, so every request must carry a base64 context`);
  }
  if (!v.hasPrivateKey()) {
    throw new BadRequestError(`version ${v.version} of key "${policy.name}" holds only a public key, from which no per-context key can be derived`);
  }
  if (policy.kdf !== 'hkdf_sha256') {
    throw new BadRequestError(`key "${policy.name}" uses the ${policy.kdf} KDF, which cannot derive ed25519 keys; only hkdf_sha256 can`);
  }
  return deriveEd25519Key(ed25519RawPrivateKey(v.privateKey()), context, policy.kdf);
}

/**
 * Key read with `context`: each version of a derived ed25519 key shows the public key derived
 * for that context, the one its signatures verify against outside the server. Other keys are
 * shown unchanged, as the context means nothing to them.
 */
export function showDerivedPublicKeys(policy: KeyPolicy, view: Record<string, unknown>, context: Buffer): void {
  if (policy.type !== 'ed25519' || !policy.derived) return;
  const keys = view['keys'] as Record<string, Record<string, unknown>> | undefined;
  if (!keys) return;
  for (const v of policy.visibleVersions()) {
    const entry = keys[String(v.version)];
    if (entry && v.hasPrivateKey()) entry['public_key'] = derivedEd25519(policy, v, context).publicKeyRaw.toString('base64');
  }
}

function signingType(policy: KeyPolicy, operation: 'signing' | 'verification'): AsymmetricKeyType {
  if (!isAsymmetricKeyType(policy.type)) {
    throw new BadRequestError(`key "${policy.name}" is of type ${policy.type}, which does not support ${operation}`);
  }
  return policy.type;
}

/**
 * The signature options of a request, common to all its batch items. Names are checked here so
 * a typo fails the whole request; combinations that depend on the input (prehashed lengths,
 * `none` without prehashed) are left to the crypto layer and fail per item, as in Vault.
 */
function signOptions(fields: FieldData, policy: KeyPolicy): SignOptions {
  const picked = pickField(fields, ['hash_algorithm', 'algorithm'], 'sha2-256');
  if (picked.value !== 'none' && !isDigestAlgorithm(picked.value)) {
    throw new BadRequestError(`invalid value for "${picked.field}": unsupported hash algorithm "${picked.value}"`);
  }
  const marshaling = fields.string('marshaling_algorithm') || 'asn1';
  if (marshaling !== 'asn1' && marshaling !== 'jws') {
    throw new BadRequestError(`invalid value for "marshaling_algorithm": unsupported marshaling type "${marshaling}"; use asn1 or jws`);
  }
  const signatureAlgorithm = fields.string('signature_algorithm') || 'pss';
  if (policy.spec.family === 'rsa' && signatureAlgorithm !== 'pss' && signatureAlgorithm !== 'pkcs1v15') {
    throw new BadRequestError(`invalid value for "signature_algorithm": unsupported RSA signature algorithm "${signatureAlgorithm}"; use pss or pkcs1v15`);
  }
  const saltLength = asUserError(() => parseSaltLength(fields.string('salt_length') || 'auto'));
  return {
    hashAlgorithm: picked.value as SignatureHashAlgorithm,
    prehashed: fields.bool('prehashed'),
    signatureAlgorithm: signatureAlgorithm as SignatureAlgorithm,
    saltLength,
    marshaling: marshaling as MarshalingAlgorithm,
  };
}

function formatSignature(version: number, signature: Buffer, marshaling: MarshalingAlgorithm): string {
  return `${CIPHERTEXT_PREFIX}v${version}:${encodeSignature(signature, marshaling)}`;
}

function signOne(policy: KeyPolicy, type: AsymmetricKeyType, v: KeyVersion, options: SignOptions, input: string, context: string): Record<string, unknown> {
  const message = decodeBase64('input', input);
  const derived = policy.derived ? derivedEd25519(policy, v, decodeOptionalBase64('context', context)) : undefined;
  const signature = asUserError(() => sign(type, derived?.privateKey ?? v.privateKey(), message, options));
  const out: Record<string, unknown> = { signature: formatSignature(v.version, signature, options.marshaling), key_version: v.version };
  if (derived) out['public_key'] = derived.publicKeyRaw.toString('base64');
  return out;
}

function verifySignature(policy: KeyPolicy, type: AsymmetricKeyType, options: SignOptions, input: string, signature: string, context: string): boolean {
  if (signature === '') throw new BadRequestError('missing required field "signature"');
  const message = decodeBase64('input', input);
  const parsed = parseVersioned('signature', signature);
  const v = verificationVersion(policy, 'signature', parsed.version);
  const bytes = asUserError(() => decodeSignature(parsed.body, options.marshaling));
  const publicKey = policy.derived ? derivedEd25519(policy, v, decodeOptionalBase64('context', context)).publicKey : v.publicKey();
  return asUserError(() => verify(type, publicKey, message, bytes, options));
}

const present = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

/** Which check a verify request asks for; a request (or batch) does one kind only. */
function verifyMode(fields: FieldData, batch: BatchItem[] | null): 'signature' | 'hmac' {
  if (!batch) {
    const sig = fields.string('signature');
    const mac = fields.string('hmac');
    if (sig !== '' && mac !== '') throw new BadRequestError('give one of "signature" or "hmac", not both');
    if (sig === '' && mac === '') throw new BadRequestError('missing required field "signature" (or "hmac")');
    return sig !== '' ? 'signature' : 'hmac';
  }
  let signatures = 0;
  let hmacs = 0;
  batch.forEach((item, i) => {
    const sig = present(item['signature']);
    const mac = present(item['hmac']);
    if (sig && mac) throw new BadRequestError(`invalid value for "batch_input[${i}]": give one of "signature" or "hmac", not both`);
    if (sig) signatures++;
    if (mac) hmacs++;
  });
  if (signatures > 0 && hmacs > 0) {
    throw new BadRequestError('invalid value for "batch_input": mixing "hmac" and "signature" items in one batch is not allowed');
  }
  if (signatures === 0 && hmacs === 0) throw new BadRequestError('missing required field "signature" (or "hmac") in batch_input items');
  return signatures > 0 ? 'signature' : 'hmac';
}

function signingKeyNotFound(name: string): BadRequestError {
  return new BadRequestError(`signing key not found: no key named "${name}"`);
}

const SIGNATURE_FIELDS: FieldSchemas = {
  name: { type: 'string', description: 'Name of the key.' },
  input: { type: 'string', description: 'Base64 of the data (or, with prehashed, of the binary digest).' },
  context: { type: 'string', description: 'Base64 key-derivation context; required by derived ed25519 keys.' },
  hash_algorithm: {
    type: 'string', default: 'sha2-256',
    description: 'Hash for RSA and ECDSA: sha1, sha2-*, sha3-*, or none (prehashed pkcs1v15 only); may be the last path segment.',
  },
  algorithm: { type: 'string', description: 'Deprecated name of hash_algorithm.' },
  prehashed: { type: 'bool', default: false, description: 'The input is already a digest made with hash_algorithm.' },
  signature_algorithm: { type: 'string', default: 'pss', description: 'RSA padding: pss or pkcs1v15.' },
  salt_length: { type: 'string', default: 'auto', description: 'RSA PSS salt: auto, hash, or a number of bytes.' },
  marshaling_algorithm: { type: 'string', default: 'asn1', description: 'Signature encoding: asn1, or jws (ECDSA r||s, unpadded base64url).' },
  reference: { type: 'string', description: 'Echoed back in batch results.' },
  batch_input: { type: 'any', description: 'List of items; top-level input and context are then ignored.' },
};

/** `sign/:name(/:hash_algorithm)` and `verify/:name(/:hash_algorithm)`. */
export function signPaths(ctx: TransitContext): PathDefinition[] {
  async function handleSign(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const batch = parseBatchInput(fields);
    if (!batch && !fields.has('input')) throw new BadRequestError('missing required field "input" (or "batch_input")');
    const policy = await ctx.keys.get(req.storage, name);
    if (!policy) throw signingKeyNotFound(name);
    const type = signingType(policy, 'signing');
    const options = signOptions(fields, policy);
    const v = encryptionVersion(policy, fields.int('key_version'));
    if (!v.hasPrivateKey()) {
      throw new BadRequestError(`version ${v.version} of key "${policy.name}" holds only a public key and cannot sign`);
    }
    if (!batch) return { data: signOne(policy, type, v, options, fields.string('input'), fields.string('context')) };
    const outcomes = await runItems(batch, async (item, i) => {
      const out = signOne(policy, type, v, options, itemInput(item, i), itemString(item, i, 'context'));
      // Vault's batch items spell the derived key `publickey`; clients built on that shape read it there.
      if (out['public_key'] !== undefined) out['publickey'] = out['public_key'];
      return out;
    });
    return keepBatchOk(batchReply(batch, outcomes, undefined, ctx.logger));
  }

  async function handleVerify(req: BackendRequest, fields: FieldData): Promise<BackendResponse> {
    const name = fields.string('name');
    const batch = parseBatchInput(fields);
    const mode = verifyMode(fields, batch);
    if (!batch && !fields.has('input')) throw new BadRequestError('missing required field "input" (or "batch_input")');
    const policy = await ctx.keys.get(req.storage, name);
    if (!policy) throw signingKeyNotFound(name);

    let check: (input: string, value: string, context: string) => boolean;
    if (mode === 'hmac') {
      const picked = pickField(fields, ['hash_algorithm', 'algorithm'], 'sha2-256');
      const algorithm = hmacAlgorithm(picked.field, picked.value);
      check = (input, mac) => verifyHmacValue(policy, algorithm, mac, decodeBase64('input', input));
    } else {
      const type = signingType(policy, 'verification');
      const options = signOptions(fields, policy);
      check = (input, signature, context) => verifySignature(policy, type, options, input, signature, context);
    }

    if (!batch) return { data: { valid: check(fields.string('input'), fields.string(mode), fields.string('context')) } };
    const outcomes = await runItems(batch, async (item, i) => {
      const value = itemString(item, i, mode);
      if (value === '') throw new BadRequestError(`missing required field "${mode}"`);
      return { valid: check(itemInput(item, i), value, itemString(item, i, 'context')) };
    });
    return keepBatchOk(batchReply(batch, outcomes, undefined, ctx.logger));
  }

  return [
    definePath({
      pattern: `sign/${KEY_NAME}(?:/(?<hash_algorithm>[\\w-]+))?`,
      fields: {
        ...SIGNATURE_FIELDS,
        key_version: { type: 'int', default: 0, description: 'Version to sign with; 0 is the latest.' },
      },
      operations: { update: handleSign },
      help: 'Signs base64 input with the named asymmetric key; the signature comes back as vault:v<N>:<base64>.',
    }),
    definePath({
      pattern: `verify/${KEY_NAME}(?:/(?<hash_algorithm>[\\w-]+))?`,
      fields: {
        ...SIGNATURE_FIELDS,
        signature: { type: 'string', description: 'Signature from sign (vault:v<N>:...) to check.' },
        hmac: { type: 'string', description: 'HMAC from hmac (vault:v<N>:...) to check, instead of a signature.' },
      },
      operations: { update: handleVerify },
      help: 'Verifies a signature (or an HMAC) of base64 input with the named key; answers {valid}.',
    }),
  ];
}

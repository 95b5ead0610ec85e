import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';
import {
  CryptoInputError, HMAC_MAX_KEY_SIZE, HMAC_MIN_KEY_SIZE, KDF_BY_NUMBER, KDF_NUMBER,
  ed25519PrivateKeyFromRaw, ed25519PublicKeyFromRaw, ed25519RawPrivateKey, formatPublicKey, generateHmacSecret,
  isAsymmetricKeyType, keyTypeFromBackupType, keyTypeInfo, parseImportedPrivateKey, parsePublicKeyPem,
  type AsymmetricKeyType, type KeyType,
} from './crypto';
import { KeyPolicy, formatTime, type KeyVersion, type StoredKeyPolicy, type StoredKeyVersion } from './key-policy';

/*
 * Backups in Vault's format: base64 of JSON {policy, archived_keys}, where `policy` is the Go
 * keysutil.Policy and each key version a keysutil.KeyEntry, so that a backup taken here restores
 * into Vault and the other way round. Go writes big.Int values (EC coordinates, RSA parameters)
 * as bare JSON numbers far beyond a double's precision, hence the JSON reader and writer below.
 */

// ---------------------------------------------------------------------------------------------
// JSON with integers of any size

const BIGINT_MARK = '\u0000bigint:';

/** JSON.stringify, with bigint values written as bare JSON numbers as Go's big.Int does. */
export function stringifyJsonBig(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${BIGINT_MARK}${v.toString()}` : v));
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}

/**
 * JSON.parse, except that an integer beyond Number's safe range comes back as a bigint instead
 * of silently losing digits. Object keys are defined as own properties, so "__proto__" in the
 * input is data, not a prototype.
 */
export function parseJsonBig(text: string): unknown {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at offset ${i}`);
  };
  const skip = (): void => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
  const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

  const parseString = (): string => {
    STRING.lastIndex = i;
    const m = STRING.exec(text);
    if (!m) return fail('bad string');
    i += m[0].length;
    return JSON.parse(m[0]) as string;
  };

  const parseValue = (): unknown => {
    skip();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      skip();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail('expected a key');
        const key = parseString();
        skip();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        Object.defineProperty(obj, key, { value: parseValue(), enumerable: true, writable: true, configurable: true });
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      skip();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(parseValue());
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail('expected "," or "]"');
      }
    }
    if (c === '"') return parseString();
    for (const [word, value] of [['true', true], ['false', false], ['null', null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) return fail('unexpected character');
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  };

  const value = parseValue();
  skip();
  if (i !== text.length) fail('trailing data');
  return value;
}

// ---------------------------------------------------------------------------------------------
// Numbers and bytes

function bigFromBase64url(text: string): bigint {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
}

function base64urlFromBig(n: bigint, width = 0): string {
  let hex = n.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if (bytes.length < width) bytes = Buffer.concat([Buffer.alloc(width - bytes.length), bytes]);
  return bytes.toString('base64url');
}

function modInverse(a: bigint, m: bigint): bigint {
  let [oldR, r] = [((a % m) + m) % m, m];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const q = oldR / r;
    [oldR, r] = [r, oldR - q * r];
    [oldS, s] = [s, oldS - q * s];
  }
  if (oldR !== 1n) throw new RangeError('not invertible');
  return ((oldS % m) + m) % m;
}

const EC_FIELD_BYTES: Record<string, { crv: string; bytes: number }> = {
  prime256v1: { crv: 'P-256', bytes: 32 },
  secp384r1: { crv: 'P-384', bytes: 48 },
  secp521r1: { crv: 'P-521', bytes: 66 },
};

function jwkOf(key: KeyObject): JsonWebKey {
  return key.export({ format: 'jwk' });
}

function requireJwk(jwk: JsonWebKey, ...names: (keyof JsonWebKey)[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = jwk[n];
    if (typeof v !== 'string') throw new Error(`key export lacks JWK member ${String(n)}`);
    out[String(n)] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

/** Go's zero KeyEntry: the archive's slot for version 0, which never exists. */
function emptyEntry(): Record<string, unknown> {
  return {
    key: null, hmac_key: null, time: '0001-01-01T00:00:00Z', ec_x: null, ec_y: null, ec_d: null,
    rsa_key: null, rsa_public_key: null, public_key: '', convergent_version: 0, creation_time: 0, certificate_chain: null,
  };
}

function pemBlocksToDer(chain: string): string[] {
  const out: string[] = [];
  for (const m of chain.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)) {
    out.push(Buffer.from((m[1] ?? '').replace(/\s+/g, ''), 'base64').toString('base64'));
  }
  return out;
}

/** PEM CERTIFICATE blocks, trimmed and joined by newlines: how Vault shows a chain. */
export function derToPemChain(ders: readonly Buffer[]): string {
  return ders.map((der) => {
    const body = der.toString('base64').replace(/.{1,64}/g, '$&\n');
    return `-----BEGIN CERTIFICATE-----\n${body}-----END CERTIFICATE-----`;
  }).join('\n');
}

function entryToJson(policy: KeyPolicy, v: KeyVersion): Record<string, unknown> {
  const e = emptyEntry();
  e['hmac_key'] = v.hmacKey.toString('base64');
  e['time'] = formatTime(v.createdAt);
  e['creation_time'] = Math.floor(v.createdAt / 1000);
  e['convergent_version'] = v.convergentVersion ?? 0;
  if (v.certificateChain !== undefined) e['certificate_chain'] = pemBlocksToDer(v.certificateChain);
  const spec = policy.spec;
  switch (spec.family) {
    case 'aead':
      e['key'] = v.key?.toString('base64') ?? null;
      break;
    case 'hmac':
      e['key'] = v.hmacKey.toString('base64');
      break;
    case 'ed25519':
      if (v.hasPrivateKey()) e['key'] = ed25519RawPrivateKey(v.privateKey()).toString('base64');
      e['public_key'] = v.publicKeyText ?? '';
      break;
    case 'ecdsa': {
      const jwk = jwkOf(v.hasPrivateKey() ? v.privateKey() : v.publicKey());
      const { x, y } = requireJwk(jwk, 'x', 'y');
      e['ec_x'] = bigFromBase64url(x!);
      e['ec_y'] = bigFromBase64url(y!);
      if (v.hasPrivateKey()) e['ec_d'] = bigFromBase64url(requireJwk(jwk, 'd')['d']!);
      e['public_key'] = v.publicKeyText ?? '';
      break;
    }
    case 'rsa': {
      const pub = requireJwk(jwkOf(v.publicKey()), 'n', 'e');
      const publicKey = { N: bigFromBase64url(pub['n']!), E: Number(bigFromBase64url(pub['e']!)) };
      e['rsa_public_key'] = publicKey;
      if (v.hasPrivateKey()) {
        const k = requireJwk(jwkOf(v.privateKey()), 'd', 'p', 'q', 'dp', 'dq', 'qi');
        e['rsa_key'] = {
          ...publicKey,
          D: bigFromBase64url(k['d']!),
          Primes: [bigFromBase64url(k['p']!), bigFromBase64url(k['q']!)],
          Precomputed: { Dp: bigFromBase64url(k['dp']!), Dq: bigFromBase64url(k['dq']!), Qinv: bigFromBase64url(k['qi']!), CRTValues: [] },
        };
      }
      // Vault derives an RSA key's public text from rsa_key and leaves this empty.
      e['public_key'] = '';
      break;
    }
    case 'managed':
      throw new Error('managed keys have no material to back up');
  }
  // Ours, ignored by Vault: whether this version came from import or was generated here.
  e['imported'] = v.imported;
  return e;
}

/** The backup text of a key: base64 of Vault's {policy, archived_keys} JSON. */
export function encodeBackup(p: KeyPolicy): string {
  const keys: Record<string, unknown> = {};
  const archive: Record<string, unknown>[] = [];
  const first = Math.max(1, p.minDecryptionVersion);
  // Vault's archive is indexed by version minus min_available_version, so with nothing trimmed
  // its first slot stands for the never-existing version 0.
  for (let n = p.minAvailableVersion; n <= p.latestVersion; n++) {
    const v = n === 0 ? undefined : p.version(n);
    const entry = v ? entryToJson(p, v) : emptyEntry();
    archive.push(entry);
    if (v && n >= first) keys[String(n)] = entry;
  }
  const info = (i: { time: number; version: number } | undefined) => (i ? { time: formatTime(i.time), version: i.version } : null);
  const policy: Record<string, unknown> = {
    name: p.name,
    ...(p.keySize !== 0 ? { key_size: p.keySize } : {}),
    keys,
    derived: p.derived,
    kdf: KDF_NUMBER[p.kdf],
    convergent_encryption: p.convergentEncryption,
    exportable: p.exportable,
    min_decryption_version: p.minDecryptionVersion,
    min_encryption_version: p.minEncryptionVersion,
    latest_version: p.latestVersion,
    archive_version: p.latestVersion,
    archive_min_version: p.minAvailableVersion,
    min_available_version: p.minAvailableVersion,
    deletion_allowed: p.deletionAllowed,
    convergent_version: p.convergentVersion,
    type: p.spec.backupType,
    backup_info: info(p.backupInfo),
    restore_info: info(p.restoreInfo),
    allow_plaintext_backup: p.allowPlaintextBackup,
    version_template: '',
    storage_prefix: '',
    auto_rotate_period: BigInt(p.autoRotatePeriod) * 1_000_000_000n,
    Imported: p.imported,
    AllowImportedKeyRotation: p.allowImportedKeyRotation,
  };
  return Buffer.from(stringifyJsonBig({ policy, archived_keys: { keys: archive } })).toString('base64');
}

// ---------------------------------------------------------------------------------------------
// Reading

type Json = Record<string, unknown>;

function bad(what: string): BadRequestError {
  return new BadRequestError(`invalid value for "backup": ${what}`);
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function intOf(v: unknown, what: string, fallback?: number): number {
  if ((v === undefined || v === null) && fallback !== undefined) return fallback;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  throw bad(`${what} must be an integer`);
}

function bigOf(v: unknown, what: string): bigint | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  // Some encoders quote big integers; take those too.
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw bad(`${what} must be an integer`);
}

function boolOf(v: unknown, what: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  throw bad(`${what} must be a boolean`);
}

function bytesOf(v: unknown, what: string): Buffer | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) throw bad(`${what} must be standard base64`);
  return Buffer.from(v, 'base64');
}

function stringOf(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw bad(`${what} must be a string`);
  return v;
}

/** Go's time.Time JSON (RFC 3339 with up to nanoseconds); the zero time counts as absent. */
function timeOf(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms) || v.startsWith('0001-01-01')) return undefined;
  return ms;
}

function infoOf(v: unknown, what: string): { time: number; version: number } | undefined {
  if (!isObject(v)) return undefined;
  const time = timeOf(v['time']);
  if (time === undefined) throw bad(`${what}.time must be an RFC 3339 time`);
  return { time, version: intOf(v['version'], `${what}.version`, 0) };
}

function checked<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof BadRequestError) throw err;
    const reason = err instanceof CryptoInputError || err instanceof Error ? err.message : String(err);
    throw bad(`${what}: ${reason}`);
  }
}

/** A KeyObject from Vault's RSA JSON (Go's rsa.PrivateKey / rsa.PublicKey), public if no D. */
function rsaFromJson(raw: Json, what: string): KeyObject {
  const n = bigOf(raw['N'], `${what}.N`);
  const e = bigOf(raw['E'], `${what}.E`);
  if (n === undefined || e === undefined) throw bad(`${what} needs N and E`);
  const d = bigOf(raw['D'], `${what}.D`);
  const base = { kty: 'RSA', n: base64urlFromBig(n), e: base64urlFromBig(e) };
  if (d === undefined) return createPublicKey({ key: base, format: 'jwk' });
  const primes = raw['Primes'];
  if (!Array.isArray(primes) || primes.length !== 2) {
    throw bad(`${what}: only two-prime RSA keys can be restored (Primes has ${Array.isArray(primes) ? primes.length : 0})`);
  }
  const p = bigOf(primes[0], `${what}.Primes[0]`)!;
  const q = bigOf(primes[1], `${what}.Primes[1]`)!;
  const pre = isObject(raw['Precomputed']) ? raw['Precomputed'] : {};
  const dp = bigOf(pre['Dp'], `${what}.Precomputed.Dp`) ?? d % (p - 1n);
  const dq = bigOf(pre['Dq'], `${what}.Precomputed.Dq`) ?? d % (q - 1n);
  const qi = bigOf(pre['Qinv'], `${what}.Precomputed.Qinv`) ?? modInverse(q, p);
  if (p * q !== n) throw bad(`${what}: Primes do not multiply to N`);
  return createPrivateKey({
    key: { ...base, d: base64urlFromBig(d), p: base64urlFromBig(p), q: base64urlFromBig(q), dp: base64urlFromBig(dp), dq: base64urlFromBig(dq), qi: base64urlFromBig(qi) },
    format: 'jwk',
  });
}

/** One KeyEntry as the stored form of a version of `type`. */
function versionFromJson(type: KeyType, raw: Json, n: number, policyImported: boolean): StoredKeyVersion {
  const what = `version ${n}`;
  const info = keyTypeInfo(type);
  const created = timeOf(raw['time']) ?? intOf(raw['creation_time'], `${what} creation_time`, 0) * 1000;
  const key = bytesOf(raw['key'], `${what} key`);
  let hmacKey = bytesOf(raw['hmac_key'], `${what} hmac_key`);
  const out: StoredKeyVersion = { hmac_key: '', creation_time: created };

  switch (info.family) {
    case 'aead':
      if (!key || key.length !== info.keySize) throw bad(`${what} of a ${type} key needs a ${info.keySize}-byte key`);
      out.key = key.toString('base64');
      break;
    case 'hmac':
      if (!key || key.length < HMAC_MIN_KEY_SIZE || key.length > HMAC_MAX_KEY_SIZE) {
        throw bad(`${what} of an hmac key needs a key of ${HMAC_MIN_KEY_SIZE} to ${HMAC_MAX_KEY_SIZE} bytes`);
      }
      // The hmac type's key is its HMAC secret.
      hmacKey = key;
      break;
    default: {
      const asym = type as AsymmetricKeyType;
      const { privateKey, publicKey } = checked(what, () => asymmetricFromJson(asym, raw, key, what));
      if (privateKey) {
        const parsed = checked(what, () => parseImportedPrivateKey(asym, privateKey.export({ format: 'der', type: 'pkcs8' }), what));
        out.private_key = parsed.privateKeyDer.toString('base64');
        out.public_key = formatPublicKey(asym, parsed.publicKey);
      } else if (publicKey) {
        const pem = publicKey.export({ format: 'pem', type: 'spki' }) as string;
        out.public_key = formatPublicKey(asym, checked(what, () => parsePublicKeyPem(asym, pem, what)));
      } else {
        throw bad(`${what} of a ${type} key has neither a private nor a public key`);
      }
    }
  }
  // Vault fills in HMAC keys of old versions lazily and may have none to give; such a version
  // gets a fresh one, which only matters for HMACs made with that old version.
  out.hmac_key = (hmacKey ?? generateHmacSecret()).toString('base64');
  const convergent = intOf(raw['convergent_version'], `${what} convergent_version`, 0);
  if (convergent > 0) out.convergent_version = convergent;
  const chain = raw['certificate_chain'];
  if (Array.isArray(chain) && chain.length > 0) {
    out.certificate_chain = derToPemChain(chain.map((c, i) => bytesOf(c, `${what} certificate_chain[${i}]`) ?? Buffer.alloc(0)));
  }
  // Backups from here say per version; Vault marks the whole key (and clears it when the key is
  // rotated in Vault, so every version of a key still marked imported was imported).
  const imported = typeof raw['imported'] === 'boolean' ? raw['imported'] : policyImported;
  if (imported) out.imported = true;
  return out;
}

function asymmetricFromJson(type: AsymmetricKeyType, raw: Json, key: Buffer | undefined, what: string): { privateKey?: KeyObject; publicKey?: KeyObject } {
  const info = keyTypeInfo(type);
  const publicText = stringOf(raw['public_key'], `${what} public_key`);
  switch (info.family) {
    case 'ed25519':
      if (key) return { privateKey: ed25519PrivateKeyFromRaw(key, `${what} key`) };
      if (publicText !== '') return { publicKey: ed25519PublicKeyFromRaw(Buffer.from(publicText, 'base64'), `${what} public_key`) };
      return {};
    case 'ecdsa': {
      const curve = EC_FIELD_BYTES[info.nodeCurve ?? ''];
      if (!curve) throw new Error(`no curve for ${type}`);
      const x = bigOf(raw['ec_x'], `${what} ec_x`);
      const y = bigOf(raw['ec_y'], `${what} ec_y`);
      const d = bigOf(raw['ec_d'], `${what} ec_d`);
      if (x !== undefined && y !== undefined) {
        const jwk = { kty: 'EC', crv: curve.crv, x: base64urlFromBig(x, curve.bytes), y: base64urlFromBig(y, curve.bytes) };
        if (d !== undefined) return { privateKey: createPrivateKey({ key: { ...jwk, d: base64urlFromBig(d, curve.bytes) }, format: 'jwk' }) };
        return { publicKey: createPublicKey({ key: jwk, format: 'jwk' }) };
      }
      if (publicText !== '') return { publicKey: createPublicKey(publicText) };
      return {};
    }
    case 'rsa': {
      if (isObject(raw['rsa_key'])) return { privateKey: rsaFromJson(raw['rsa_key'], `${what} rsa_key`) };
      if (isObject(raw['rsa_public_key'])) return { publicKey: rsaFromJson(raw['rsa_public_key'], `${what} rsa_public_key`) };
      if (publicText !== '') return { publicKey: createPublicKey(publicText) };
      return {};
    }
    default:
      return {};
  }
}

function backupType(policy: Json, entries: Json[]): { type: KeyType; warnings: string[] } {
  const n = intOf(policy['type'], 'policy.type');
  // OpenBao dropped managed keys and renumbered: its 10 is hmac. A managed key has no raw key
  // bytes, so a "managed_key" that carries them is an OpenBao hmac key.
  if (n === 10 && entries.some((e) => typeof e['key'] === 'string' && e['key'] !== '')) {
    return { type: 'hmac', warnings: ['key type 10 with raw key bytes was read as hmac (OpenBao\'s numbering)'] };
  }
  const type = keyTypeFromBackupType(n);
  if (!type) throw bad(`unknown key type number ${n}`);
  if (keyTypeInfo(type).family === 'managed') throw bad('managed keys live in an external key manager and cannot be restored here');
  return { type, warnings: [] };
}

export interface DecodedBackup {
  policy: KeyPolicy;
  warnings: string[];
}

/**
 * A key from backup text (ours or Vault's), named `rename` when given. Every version is parsed
 * and checked against the key type, so a corrupt backup is refused here rather than failing
 * later requests.
 */
export function decodeBackup(text: string, rename: string): DecodedBackup {
  const compact = text.replace(/[\r\n]/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw bad('expected the base64 text that backup/:name returns');
  let doc: unknown;
  try {
    doc = parseJsonBig(Buffer.from(compact, 'base64').toString('utf8'));
  } catch (err) {
    throw bad(`not the JSON that backup/:name returns (${(err as Error).message})`);
  }
  if (!isObject(doc) || !isObject(doc['policy'])) throw bad('no "policy" object in the backup');
  const policy = doc['policy'];
  const name = rename !== '' ? rename : stringOf(policy['name'], 'policy.name');
  if (!/^\w(?:[\w.-]*\w)?$/.test(name)) throw bad(`"${name}" is not a valid key name`);

  const template = stringOf(policy['version_template'], 'policy.version_template');
  if (template !== '' && template !== 'vault:v{{version}}:') {
    throw bad(`the key uses the ciphertext prefix template "${template}"; only the default vault:v{{version}}: is supported`);
  }

  const latest = intOf(policy['latest_version'], 'policy.latest_version');
  if (latest < 1) throw bad('the key has no versions (latest_version is below 1)');
  let minDecryption = intOf(policy['min_decryption_version'], 'policy.min_decryption_version', 1);
  if (minDecryption === 0) minDecryption = 1;
  const minEncryption = intOf(policy['min_encryption_version'], 'policy.min_encryption_version', 0);
  const minAvailable = intOf(policy['min_available_version'], 'policy.min_available_version', 0);
  if (minDecryption > latest || minEncryption > latest || minEncryption < 0 || minAvailable < 0 || minAvailable > minDecryption) {
    throw bad(`inconsistent versions: latest ${latest}, min_decryption ${minDecryption}, min_encryption ${minEncryption}, min_available ${minAvailable}`);
  }

  // Versions below min_decryption_version live only in the archive; Vault indexes it from
  // archive_min_version (equal to min_available_version once written).
  const byVersion = new Map<number, Json>();
  const archived = isObject(doc['archived_keys']) ? doc['archived_keys']['keys'] : undefined;
  if (Array.isArray(archived)) {
    const base = intOf(policy['archive_min_version'], 'policy.archive_min_version', minAvailable);
    archived.forEach((entry, idx) => {
      if (isObject(entry) && base + idx >= 1) byVersion.set(base + idx, entry);
    });
  }
  if (isObject(policy['keys'])) {
    for (const [k, entry] of Object.entries(policy['keys'])) {
      if (/^\d+$/.test(k) && isObject(entry)) byVersion.set(Number(k), entry);
    }
  }
  const first = Math.max(1, minAvailable);
  const entries: Json[] = [];
  for (let n = first; n <= latest; n++) {
    const entry = byVersion.get(n);
    if (!entry) throw bad(`version ${n} is missing from the backup`);
    entries.push(entry);
  }

  const { type, warnings } = backupType(policy, entries);
  const imported = boolOf(policy['Imported'], 'policy.Imported');
  const versions: Record<string, StoredKeyVersion> = {};
  entries.forEach((entry, idx) => {
    versions[String(first + idx)] = versionFromJson(type, entry, first + idx, imported);
  });

  const kdfNumber = intOf(policy['kdf'], 'policy.kdf', 0);
  const kdf = KDF_BY_NUMBER[kdfNumber];
  if (!kdf) throw bad(`unknown kdf ${kdfNumber}`);
  const derived = boolOf(policy['derived'], 'policy.derived');
  const convergent = boolOf(policy['convergent_encryption'], 'policy.convergent_encryption');
  const spec = keyTypeInfo(type);
  if (derived && !spec.supportsDerivation) throw bad(`derived ${type} keys do not exist`);
  if (convergent && (!derived || !spec.supportsConvergent)) throw bad('convergent encryption needs a derived AEAD key');

  const rotateNs = bigOf(policy['auto_rotate_period'], 'policy.auto_rotate_period') ?? 0n;
  let keySize = intOf(policy['key_size'], 'policy.key_size', 0);
  if (spec.family === 'hmac' && keySize === 0) keySize = Buffer.from(versions[String(latest)]?.hmac_key ?? '', 'base64').length;
  if (spec.family !== 'hmac') keySize = 0;

  const backupInfo = infoOf(policy['backup_info'], 'policy.backup_info');
  const stored: StoredKeyPolicy = {
    name, type, derived, kdf, convergent_encryption: convergent,
    convergent_version: intOf(policy['convergent_version'], 'policy.convergent_version', 0),
    exportable: boolOf(policy['exportable'], 'policy.exportable'),
    allow_plaintext_backup: boolOf(policy['allow_plaintext_backup'], 'policy.allow_plaintext_backup'),
    deletion_allowed: boolOf(policy['deletion_allowed'], 'policy.deletion_allowed'),
    min_decryption_version: minDecryption, min_encryption_version: minEncryption, min_available_version: minAvailable,
    latest_version: latest,
    auto_rotate_period: Number(rotateNs / 1_000_000_000n),
    key_size: keySize,
    imported, allow_imported_key_rotation: boolOf(policy['AllowImportedKeyRotation'], 'policy.AllowImportedKeyRotation'),
    ...(backupInfo ? { backup_info: backupInfo } : {}),
    versions,
  };
  if (isAsymmetricKeyType(type) && convergent) throw bad('asymmetric keys cannot be convergent');
  return { policy: KeyPolicy.fromStored(stored), warnings };
}

import { createPublicKey, type KeyObject } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';
import {
  HMAC_MAX_KEY_SIZE, HMAC_MIN_KEY_SIZE, ed25519PublicKeyFromRaw, formatPublicKey, generateHmacSecret, generateKeyMaterial,
  isAsymmetricKeyType, isKeyType, keyTypeInfo, privateKeyFromDer,
  type KdfName, type KeyType, type KeyTypeInfo,
} from './crypto';

// Storage layout under the mount's private storage:
//   policy/<name>   StoredKeyPolicy: configuration and every version still kept
//   config/keys     KeysConfig (disable_upsert)
//   config/cache    CacheConfig (size), read when the mount's backend first serves a request
export const POLICY_PREFIX = 'policy/';

export type Kdf = KdfName;

/** The nonce scheme of convergent encryption, fixed per key version when it is made. */
export const CURRENT_CONVERGENT_VERSION = 3;

/** A key version as stored: binary as base64, times as epoch milliseconds. */
export interface StoredKeyVersion {
  /** Raw secret of AEAD types. Absent for asymmetric and hmac types. */
  key?: string;
  /** PKCS#8 DER of asymmetric types; absent when only a public key was imported. */
  private_key?: string;
  /** Public key of asymmetric types, in the key read's format. */
  public_key?: string;
  /** This version's own HMAC secret; for the hmac type it is the key itself. */
  hmac_key: string;
  creation_time: number;
  /** Convergent nonce scheme of this version; only set on convergent keys. */
  convergent_version?: number;
  certificate_chain?: string;
  /** Material came from key import rather than from this service. */
  imported?: boolean;
}

export interface StoredKeyPolicy {
  name: string;
  type: KeyType;
  derived: boolean;
  kdf: Kdf;
  convergent_encryption: boolean;
  /** -1: each version carries its own (keys made here); > 0: one scheme for all (old backups). */
  convergent_version: number;
  exportable: boolean;
  allow_plaintext_backup: boolean;
  deletion_allowed: boolean;
  min_decryption_version: number;
  min_encryption_version: number;
  min_available_version: number;
  latest_version: number;
  /** Seconds; 0 disables automatic rotation. */
  auto_rotate_period: number;
  /** Bytes of each version's key; only meaningful for the hmac type. */
  key_size: number;
  imported: boolean;
  allow_imported_key_rotation: boolean;
  backup_info?: { time: number; version: number };
  restore_info?: { time: number; version: number };
  versions: Record<string, StoredKeyVersion>;
}

function b64(buf: Buffer): string {
  return buf.toString('base64');
}

/**
 * One version of a key, parsed once when the key is loaded. The KeyObjects node:crypto needs
 * are built on first use and kept, so a request never re-parses key material.
 */
export class KeyVersion {
  private privateObject: KeyObject | undefined;
  private publicObject: KeyObject | undefined;

  constructor(
    readonly version: number,
    readonly key: Buffer | undefined,
    readonly privateKeyDer: Buffer | undefined,
    readonly publicKeyText: string | undefined,
    readonly hmacKey: Buffer,
    readonly createdAt: number,
    readonly convergentVersion: number | undefined,
    readonly certificateChain: string | undefined,
    readonly imported: boolean,
  ) {}

  static fromStored(version: number, s: StoredKeyVersion): KeyVersion {
    return new KeyVersion(
      version,
      s.key === undefined ? undefined : Buffer.from(s.key, 'base64'),
      s.private_key === undefined ? undefined : Buffer.from(s.private_key, 'base64'),
      s.public_key,
      Buffer.from(s.hmac_key, 'base64'),
      s.creation_time,
      s.convergent_version,
      s.certificate_chain,
      s.imported === true,
    );
  }

  toStored(): StoredKeyVersion {
    const out: StoredKeyVersion = { hmac_key: b64(this.hmacKey), creation_time: this.createdAt };
    if (this.key) out.key = b64(this.key);
    if (this.privateKeyDer) out.private_key = b64(this.privateKeyDer);
    if (this.publicKeyText !== undefined) out.public_key = this.publicKeyText;
    if (this.convergentVersion !== undefined) out.convergent_version = this.convergentVersion;
    if (this.certificateChain !== undefined) out.certificate_chain = this.certificateChain;
    if (this.imported) out.imported = true;
    return out;
  }

  hasPrivateKey(): boolean {
    return this.privateKeyDer !== undefined;
  }

  privateKey(): KeyObject {
    if (!this.privateKeyDer) throw new Error(`key version ${this.version} has no private key`);
    this.privateObject ??= privateKeyFromDer(this.privateKeyDer);
    return this.privateObject;
  }

  publicKey(): KeyObject {
    if (!this.publicObject) {
      if (this.privateKeyDer) this.publicObject = createPublicKey(this.privateKey());
      else if (this.publicKeyText?.includes('-----BEGIN')) this.publicObject = createPublicKey(this.publicKeyText);
      else if (this.publicKeyText !== undefined) this.publicObject = ed25519PublicKeyFromRaw(Buffer.from(this.publicKeyText, 'base64'));
      else throw new Error(`key version ${this.version} has no public key`);
    }
    return this.publicObject;
  }
}

/**
 * A named key: its configuration and versions. Instances held by the cache are shared by
 * concurrent requests and never change; a writer clones, changes the clone under the key's
 * lock, stores it and only then puts it in the cache.
 */
export class KeyPolicy {
  readonly spec: KeyTypeInfo;

  private constructor(
    readonly name: string,
    readonly type: KeyType,
    public derived: boolean,
    public kdf: Kdf,
    public convergentEncryption: boolean,
    public convergentVersion: number,
    public exportable: boolean,
    public allowPlaintextBackup: boolean,
    public deletionAllowed: boolean,
    public minDecryptionVersion: number,
    public minEncryptionVersion: number,
    public minAvailableVersion: number,
    public latestVersion: number,
    public autoRotatePeriod: number,
    public keySize: number,
    public imported: boolean,
    public allowImportedKeyRotation: boolean,
    public backupInfo: { time: number; version: number } | undefined,
    public restoreInfo: { time: number; version: number } | undefined,
    public versions: Map<number, KeyVersion>,
  ) {
    this.spec = keyTypeInfo(type);
  }

  static fromStored(s: StoredKeyPolicy): KeyPolicy {
    const versions = new Map<number, KeyVersion>();
    for (const [v, entry] of Object.entries(s.versions)) versions.set(Number(v), KeyVersion.fromStored(Number(v), entry));
    return new KeyPolicy(
      s.name, s.type, s.derived, s.kdf, s.convergent_encryption, s.convergent_version, s.exportable,
      s.allow_plaintext_backup, s.deletion_allowed, s.min_decryption_version, s.min_encryption_version,
      s.min_available_version, s.latest_version, s.auto_rotate_period, s.key_size, s.imported,
      s.allow_imported_key_rotation, s.backup_info, s.restore_info, versions,
    );
  }

  toStored(): StoredKeyPolicy {
    const versions: Record<string, StoredKeyVersion> = {};
    for (const [v, entry] of [...this.versions].sort((a, b) => a[0] - b[0])) versions[String(v)] = entry.toStored();
    const out: StoredKeyPolicy = {
      name: this.name, type: this.type, derived: this.derived, kdf: this.kdf,
      convergent_encryption: this.convergentEncryption, convergent_version: this.convergentVersion,
      exportable: this.exportable, allow_plaintext_backup: this.allowPlaintextBackup, deletion_allowed: this.deletionAllowed,
      min_decryption_version: this.minDecryptionVersion, min_encryption_version: this.minEncryptionVersion,
      min_available_version: this.minAvailableVersion, latest_version: this.latestVersion,
      auto_rotate_period: this.autoRotatePeriod, key_size: this.keySize, imported: this.imported,
      allow_imported_key_rotation: this.allowImportedKeyRotation, versions,
    };
    if (this.backupInfo) out.backup_info = { ...this.backupInfo };
    if (this.restoreInfo) out.restore_info = { ...this.restoreInfo };
    return out;
  }

  /** A copy to change; versions are shared because they never change. */
  clone(): KeyPolicy {
    return new KeyPolicy(
      this.name, this.type, this.derived, this.kdf, this.convergentEncryption, this.convergentVersion, this.exportable,
      this.allowPlaintextBackup, this.deletionAllowed, this.minDecryptionVersion, this.minEncryptionVersion,
      this.minAvailableVersion, this.latestVersion, this.autoRotatePeriod, this.keySize, this.imported,
      this.allowImportedKeyRotation, this.backupInfo && { ...this.backupInfo }, this.restoreInfo && { ...this.restoreInfo },
      new Map(this.versions),
    );
  }

  version(n: number): KeyVersion | undefined {
    return this.versions.get(n);
  }

  /** The nonce scheme of a version of a convergent key; 0 for keys that are not convergent. */
  convergentVersionOf(v: KeyVersion): number {
    if (!this.convergentEncryption) return 0;
    return this.convergentVersion > 0 ? this.convergentVersion : v.convergentVersion ?? CURRENT_CONVERGENT_VERSION;
  }

  /** The versions the key read shows: those still decryptable and not trimmed. */
  visibleVersions(): KeyVersion[] {
    const from = Math.max(1, this.minDecryptionVersion, this.minAvailableVersion);
    const out: KeyVersion[] = [];
    for (let v = from; v <= this.latestVersion; v++) {
      const entry = this.versions.get(v);
      if (entry) out.push(entry);
    }
    return out;
  }

  /** Adds a freshly generated version as the new latest. Mutates: call on a clone. */
  async addGeneratedVersion(now: number): Promise<KeyVersion> {
    const material = await generateKeyMaterial(this.type, this.spec.family === 'hmac' ? this.keySize : undefined);
    const version = this.latestVersion + 1;
    const symmetric = material.kind === 'symmetric' ? material.key : undefined;
    const asymmetric = material.kind === 'asymmetric' && isAsymmetricKeyType(this.type) ? material : undefined;
    // The hmac type's key is its HMAC secret; every other type gets an independent one.
    const hmacKey = this.spec.family === 'hmac' && symmetric ? symmetric : generateHmacSecret();
    const entry = new KeyVersion(
      version,
      this.spec.family === 'hmac' ? undefined : symmetric,
      asymmetric?.privateKeyDer,
      asymmetric && isAsymmetricKeyType(this.type) ? formatPublicKey(this.type, asymmetric.publicKey) : undefined,
      hmacKey,
      now,
      this.convergentEncryption ? CURRENT_CONVERGENT_VERSION : undefined,
      undefined,
      false,
    );
    this.versions.set(version, entry);
    this.latestVersion = version;
    return entry;
  }
}

export interface KeyCreationOptions {
  name: string;
  type: string;
  derived: boolean;
  convergentEncryption: boolean;
  exportable: boolean;
  allowPlaintextBackup: boolean;
  /** Bytes; 0 picks the type's default. */
  keySize: number;
  /** Seconds. */
  autoRotatePeriod: number;
}

export const MIN_AUTO_ROTATE_PERIOD = 3600;

export function checkAutoRotatePeriod(seconds: number): void {
  if (seconds !== 0 && seconds < MIN_AUTO_ROTATE_PERIOD) {
    throw new BadRequestError('invalid value for "auto_rotate_period": must be 0 to disable automatic rotation, or at least one hour');
  }
}

/**
 * Checks creation options against the type's abilities, before anything is generated, and
 * answers the type's spec and the key size to use.
 */
export function checkCreationOptions(o: KeyCreationOptions): { type: KeyType; spec: KeyTypeInfo; keySize: number } {
  if (!isKeyType(o.type)) throw new BadRequestError(`invalid value for "type": unknown key type "${o.type}"`);
  const type = o.type;
  const spec = keyTypeInfo(type);
  if (spec.family === 'managed') {
    throw new BadRequestError('invalid value for "type": managed keys are not configured on this server, so keys of type managed_key cannot be created');
  }
  if (o.derived && !spec.supportsDerivation) {
    throw new BadRequestError(`invalid value for "derived": key derivation is not supported for keys of type ${type}`);
  }
  if (o.convergentEncryption) {
    if (!spec.supportsConvergent) {
      throw new BadRequestError(`invalid value for "convergent_encryption": convergent encryption is not supported for keys of type ${type}`);
    }
    if (!o.derived) {
      throw new BadRequestError('invalid value for "convergent_encryption": convergent encryption requires key derivation ("derived": true)');
    }
  }
  let keySize = 0;
  if (spec.family === 'hmac') {
    keySize = o.keySize === 0 ? spec.keySize : o.keySize;
    if (keySize < HMAC_MIN_KEY_SIZE || keySize > HMAC_MAX_KEY_SIZE) {
      throw new BadRequestError(`invalid value for "key_size": hmac keys must be between ${HMAC_MIN_KEY_SIZE} and ${HMAC_MAX_KEY_SIZE} bytes`);
    }
  } else if (o.keySize !== 0) {
    throw new BadRequestError(`invalid value for "key_size": key_size applies only to hmac keys, not to ${type}`);
  }
  checkAutoRotatePeriod(o.autoRotatePeriod);
  return { type, spec, keySize };
}

/** A new key with version 1, after checkCreationOptions has accepted the options. */
export async function generateKeyPolicy(o: KeyCreationOptions, now: number): Promise<KeyPolicy> {
  const { type, keySize } = checkCreationOptions(o);
  const policy = KeyPolicy.fromStored({
    name: o.name, type, derived: o.derived, kdf: 'hkdf_sha256',
    convergent_encryption: o.convergentEncryption, convergent_version: o.convergentEncryption ? -1 : 0,
    exportable: o.exportable, allow_plaintext_backup: o.allowPlaintextBackup, deletion_allowed: false,
    // Versions count from 1, and a new key can decrypt from its first version on.
    min_decryption_version: 1, min_encryption_version: 0, min_available_version: 0, latest_version: 0,
    auto_rotate_period: o.autoRotatePeriod, key_size: keySize, imported: false, allow_imported_key_rotation: false,
    versions: {},
  });
  await policy.addGeneratedVersion(now);
  return policy;
}

/** RFC 3339 with the fraction trimmed of trailing zeros, as Go prints times. */
export function formatTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

/** The key read's answer; create, rotate, config and trim answer with it too. */
export function keyReadView(p: KeyPolicy): Record<string, unknown> {
  const spec = p.spec;
  const data: Record<string, unknown> = {
    name: p.name,
    type: p.type,
    derived: p.derived,
    deletion_allowed: p.deletionAllowed,
    exportable: p.exportable,
    allow_plaintext_backup: p.allowPlaintextBackup,
    min_available_version: p.minAvailableVersion,
    min_decryption_version: p.minDecryptionVersion,
    min_encryption_version: p.minEncryptionVersion,
    latest_version: p.latestVersion,
    supports_encryption: spec.supportsEncryption,
    supports_decryption: spec.supportsDecryption,
    supports_signing: spec.supportsSigning,
    supports_derivation: spec.supportsDerivation,
    auto_rotate_period: p.autoRotatePeriod,
    imported_key: p.imported,
    convergent_encryption: p.convergentEncryption,
  };
  if (p.derived) data['kdf'] = p.kdf;
  if (p.convergentEncryption) data['convergent_encryption_version'] = p.convergentVersion;
  if (p.imported) data['imported_key_allow_rotation'] = p.allowImportedKeyRotation;
  if (p.backupInfo) data['backup_info'] = { time: formatTime(p.backupInfo.time), version: p.backupInfo.version };
  if (p.restoreInfo) data['restore_info'] = { time: formatTime(p.restoreInfo.time), version: p.restoreInfo.version };
  if (spec.family === 'hmac') {
    data['key_size'] = p.keySize;
    return data;
  }
  const keys: Record<string, unknown> = {};
  for (const v of p.visibleVersions()) {
    if (spec.family === 'aead') {
      keys[String(v.version)] = Math.floor(v.createdAt / 1000);
    } else {
      const entry: Record<string, unknown> = {
        name: spec.publicKeyName,
        public_key: v.publicKeyText ?? '',
        creation_time: formatTime(v.createdAt),
      };
      if (v.certificateChain !== undefined) entry['certificate_chain'] = v.certificateChain;
      keys[String(v.version)] = entry;
    }
  }
  data['keys'] = keys;
  return data;
}

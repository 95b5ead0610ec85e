/**
 * Repositories, their environments and the Actions secrets of both, held in memory. Every
 * secret arrives sealed (crypto_box_seal) to its repository's or environment's public key; it
 * is opened here with the private key, so a client that sealed to the wrong key, or sent
 * something that is not a sealed box, is refused as the service refuses it, and the admin view
 * can show tests the plaintext that arrived.
 */
import { randomInt } from 'node:crypto';
import sodium = require('libsodium-wrappers');
import { invalidField, notFound, RepohostError } from './errors';

/** Names: letters, digits and underscores, not starting with a digit or the reserved prefix. */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_PREFIX = 'GITHUB_';
const MAX_SECRET_BYTES = 48 * 1024;
const MAX_SECRETS = 100;
const MAX_ENVIRONMENT_NAME = 255;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface KeyPair {
  keyId: string;
  publicKey: Uint8Array;
  privateKey: Uint8Array;
}

export interface StoredSecret {
  /** Upper case, as the service keeps names; lookups ignore case. */
  name: string;
  value: string;
  keyId: string;
  createdAt: string;
  updatedAt: string;
}

/** A repository or one of its environments: each has a key pair and its own secrets. */
export interface SecretScope {
  keys: KeyPair;
  secrets: Map<string, StoredSecret>;
}

export interface Environment extends SecretScope {
  id: number;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface Repository extends SecretScope {
  id: number;
  fullName: string;
  /** By lower-cased name: environment names ignore case too. */
  environments: Map<string, Environment>;
}

export interface SecretView {
  name: string;
  value: string;
  key_id: string;
  created_at: string;
  updated_at: string;
}

/** What the admin view shows of a repository: everything, plaintext values included. */
export interface RepositoryView {
  id: number;
  full_name: string;
  public_key: { key_id: string; key: string };
  secrets: SecretView[];
  environments: Array<{ id: number; name: string; public_key: { key_id: string; key: string }; secrets: SecretView[] }>;
}

let nextId = 1000;

export const isoNow = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export function newKeyPair(): KeyPair {
  const pair = sodium.crypto_box_keypair();
  // Key IDs are long decimal strings on the service.
  const keyId = String(randomInt(1, 10)) + String(randomInt(0, 1e9)).padStart(9, '0') + String(randomInt(0, 1e8)).padStart(8, '0');
  return { keyId, publicKey: pair.publicKey, privateKey: pair.privateKey };
}

export const publicKeyOf = (scope: SecretScope): { key_id: string; key: string } => ({
  key_id: scope.keys.keyId,
  key: Buffer.from(scope.keys.publicKey).toString('base64'),
});

export class RepohostStore {
  readonly repositories = new Map<string, Repository>();

  /** Full names (`owner/name`) ignore case, as on the service. */
  createRepository(fullName: string): Repository {
    if (!/^[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/.test(fullName)) throw new Error(`Expected owner/name, got '${fullName}'`);
    const key = fullName.toLowerCase();
    const existing = this.repositories.get(key);
    if (existing) return existing;
    const repository: Repository = { id: nextId++, fullName, keys: newKeyPair(), secrets: new Map(), environments: new Map() };
    this.repositories.set(key, repository);
    return repository;
  }

  repository(owner: string, name: string): Repository | undefined {
    return this.repositories.get(`${owner}/${name}`.toLowerCase());
  }

  environment(repository: Repository, name: string): Environment {
    const environment = repository.environments.get(name.toLowerCase());
    if (!environment) throw notFound();
    return environment;
  }

  /** Creates the environment or, when it exists, only touches its update time. */
  putEnvironment(repository: Repository, name: string): Environment {
    if (name.length === 0 || name.length > MAX_ENVIRONMENT_NAME) {
      throw invalidField('Environment', 'name', `Environment name must be 1 to ${MAX_ENVIRONMENT_NAME} characters long.`);
    }
    const now = isoNow();
    const existing = repository.environments.get(name.toLowerCase());
    if (existing) {
      existing.updatedAt = now;
      return existing;
    }
    const environment: Environment = { id: nextId++, name, createdAt: now, updatedAt: now, keys: newKeyPair(), secrets: new Map() };
    repository.environments.set(name.toLowerCase(), environment);
    return environment;
  }

  view(): RepositoryView[] {
    return [...this.repositories.values()].map((r) => ({
      id: r.id,
      full_name: r.fullName,
      public_key: publicKeyOf(r),
      secrets: secretViews(r),
      environments: [...r.environments.values()].map((e) => ({ id: e.id, name: e.name, public_key: publicKeyOf(e), secrets: secretViews(e) })),
    }));
  }
}

function secretViews(scope: SecretScope): SecretView[] {
  return [...scope.secrets.values()].map((s) => ({
    name: s.name,
    value: s.value,
    key_id: s.keyId,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  }));
}

/** Refuses the names the service refuses; the message names the rule, never a value. */
export function checkSecretName(name: string): string {
  if (!SECRET_NAME.test(name)) {
    throw invalidField(
      'Secret',
      'secret_name',
      'Secret names can only contain alphanumeric characters ([a-z], [A-Z], [0-9]) or underscores (_), ' +
        'must not start with a number, and spaces are not allowed.',
    );
  }
  if (name.toUpperCase().startsWith(RESERVED_PREFIX)) {
    throw invalidField('Secret', 'secret_name', `Secret names must not start with ${RESERVED_PREFIX}.`);
  }
  return name.toUpperCase();
}

/**
 * Opens `encrypted_value` with the scope's private key and stores the plaintext. Answers
 * whether the secret was created (201) rather than updated (204).
 */
export function putSecret(scope: SecretScope, rawName: string, body: Record<string, unknown>): boolean {
  const name = checkSecretName(rawName);
  const encrypted = body.encrypted_value;
  const keyId = body.key_id;
  if (typeof encrypted !== 'string' || !BASE64.test(encrypted) || encrypted.length === 0) {
    throw invalidField('Secret', 'encrypted_value', 'encrypted_value must be a base64-encoded sealed box.');
  }
  if (typeof keyId !== 'string' || keyId.length === 0) {
    throw invalidField('Secret', 'key_id', 'key_id is required with encrypted_value.');
  }
  if (keyId !== scope.keys.keyId) {
    throw invalidField('Secret', 'key_id', 'key_id does not name the current public key; fetch the public key again.');
  }
  let plaintext: Uint8Array;
  try {
    plaintext = sodium.crypto_box_seal_open(Buffer.from(encrypted, 'base64'), scope.keys.publicKey, scope.keys.privateKey);
  } catch {
    throw invalidField('Secret', 'encrypted_value', 'encrypted_value could not be opened with the key named by key_id.');
  }
  if (plaintext.length > MAX_SECRET_BYTES) {
    throw invalidField('Secret', 'encrypted_value', `Secret values are limited to ${MAX_SECRET_BYTES / 1024} KB.`);
  }
  const existing = scope.secrets.get(name);
  const now = isoNow();
  if (!existing && scope.secrets.size >= MAX_SECRETS) {
    throw new RepohostError(422, `A repository or environment can hold at most ${MAX_SECRETS} secrets.`);
  }
  const value = Buffer.from(plaintext).toString('utf8');
  scope.secrets.set(name, { name, value, keyId, createdAt: existing?.createdAt ?? now, updatedAt: now });
  return !existing;
}

export function getSecret(scope: SecretScope, rawName: string): StoredSecret {
  const secret = scope.secrets.get(rawName.toUpperCase());
  if (!secret) throw notFound();
  return secret;
}

/** The wire shape of a secret: never its value. */
export const secretResource = (s: StoredSecret): { name: string; created_at: string; updated_at: string } => ({
  name: s.name,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

/** Waits for the WebAssembly module; every other function here needs it loaded. */
export function sodiumReady(): Promise<void> {
  return sodium.ready;
}

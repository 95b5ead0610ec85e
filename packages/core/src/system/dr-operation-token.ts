import { createHash, timingSafeEqual } from 'node:crypto';
import type { PathDefinition } from '../framework/types';
import type { Storage } from '../storage/storage';
import { newServiceTokenId } from '../token/token-id';
import { tokenGenerationPaths } from './path-generate-root';
import { TokenGeneration, type ShareCheck } from './root-generation';

/**
 * Where a cluster keeps its DR operation token, and what checks the key shares. The token is
 * not a token-store entry: a DR secondary's core is never active (its token store is the
 * primary's, replicated), so only the token's SHA-256 is kept, in physical storage outside the
 * barrier, at a cluster-local key that replication never carries.
 */
export interface DrOperationTokenStore {
  /** Physical storage (not the barrier). Writes need this node to be its cluster's leader. */
  storage: Storage;
  /** A cluster-local key, such as `core/local/replication/dr/operation-token`. */
  key: string;
}

export interface DrOperationTokenSetup extends DrOperationTokenStore {
  /** Relative to `sys/`, ending in `/`: `replication/dr/secondary/` serves `.../generate-operation-token/*`. */
  prefix: string;
  /** The seal (`core.seal`), which proves the shares against the stored keyring. */
  shares: ShareCheck;
  /** Whether the node is sealed (`() => core.sealed`): a sealed node then refuses to generate. */
  sealed?: () => boolean;
  /** Told the root key the shares rebuilt (a DR secondary needs its primary's to serve after promotion). */
  proven?: (rootKey: Buffer, recovery: boolean) => void;
}

interface StoredHash {
  sha256: string;
}

function sha256(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Makes a new DR operation token (no TTL), replacing any earlier one, and returns its ID. */
export async function issueDrOperationToken(store: DrOperationTokenStore): Promise<string> {
  const id = newServiceTokenId();
  const stored: StoredHash = { sha256: sha256(id).toString('hex') };
  await store.storage.put(store.key, Buffer.from(JSON.stringify(stored)));
  return id;
}

/** Whether `token` is the cluster's DR operation token; compares hashes in constant time. */
export async function verifyDrOperationToken(store: DrOperationTokenStore, token: unknown): Promise<boolean> {
  if (typeof token !== 'string' || token === '') return false;
  const raw = await store.storage.get(store.key);
  if (!raw) return false;
  let expected: Buffer;
  try {
    expected = Buffer.from((JSON.parse(raw.toString('utf8')) as StoredHash).sha256, 'hex');
  } catch {
    return false;
  }
  const given = sha256(token);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Revokes the DR operation token, if there is one. */
export async function revokeDrOperationToken(store: DrOperationTokenStore): Promise<void> {
  await store.storage.delete(store.key);
}

/** The generation whose result is a DR operation token; keep it to `reset` it when the node stops serving. */
export function drOperationTokenGeneration(setup: DrOperationTokenSetup): TokenGeneration {
  return new TokenGeneration({
    shares: setup.shares, what: 'DR operation token', issue: () => issueDrOperationToken(setup),
    ...(setup.sealed ? { sealed: setup.sealed } : {}),
    ...(setup.proven ? { proven: setup.proven } : {}),
  });
}

/**
 * `<prefix>generate-operation-token/attempt` and `.../update`, for a `CoreExtension`'s
 * `systemPaths`. On a node whose core is not active, list `drOperationTokenSealedPaths` in its
 * `sealedPaths` too so that the node answers them itself.
 */
export function drOperationTokenPaths(setup: DrOperationTokenSetup, generation = drOperationTokenGeneration(setup)): PathDefinition[] {
  return tokenGenerationPaths(`${setup.prefix}generate-operation-token/`, generation);
}

/** The full request paths of `drOperationTokenPaths`, as `CoreExtension.sealedPaths` names them. */
export function drOperationTokenSealedPaths(prefix: string): string[] {
  return [`sys/${prefix}generate-operation-token/attempt`, `sys/${prefix}generate-operation-token/update`];
}

import { randomUUID } from 'node:crypto';
import { systemClock } from '../clock';
import { MemoryStorage } from '../storage/memory-storage';
import type { AutoSeal } from './auto-seal';
import { Barrier } from './barrier';
import { SealManager, WRAPPED_ROOT_KEY } from './seal-manager';

/**
 * A secondary cluster with its own auto seal (another transit key) receives the primary's seal
 * configuration and keyring by replication, but not the primary's wrapped root key, which only
 * the primary's seal unwraps. It unseals itself because its activation hands it the root key,
 * which its own seal wraps.
 */

/** An auto seal whose key is its own: what one instance wraps, no other unwraps. */
function fakeSeal(): AutoSeal {
  const held = new Map<string, Buffer>();
  return {
    type: 'transit',
    wrap: async (plaintext) => {
      const id = randomUUID();
      held.set(id, Buffer.from(plaintext));
      return id;
    },
    unwrap: async (wrapped) => {
      const plaintext = held.get(wrapped);
      if (!plaintext) throw new Error('ciphertext: message authentication failed');
      return Buffer.from(plaintext);
    },
    close: () => undefined,
  };
}

function manager(storage: MemoryStorage, autoSeal?: AutoSeal): { seal: SealManager; barrier: Barrier } {
  const barrier = new Barrier(storage);
  return { seal: new SealManager(storage, barrier, systemClock, autoSeal ? { autoSeal } : {}), barrier };
}

/** What replication copies: every key but the cluster's own wrapped root key. */
async function replicate(from: MemoryStorage, to: MemoryStorage): Promise<void> {
  for (const key of ['core/seal-config', 'core/keyring', 'core/recovery-check']) {
    const value = await from.get(key);
    if (value) await to.put(key, value);
  }
}

async function autoSealedPrimary(): Promise<{ storage: MemoryStorage; seal: SealManager }> {
  const storage = new MemoryStorage();
  const { seal } = manager(storage, fakeSeal());
  await seal.initialize({ secretShares: 1, secretThreshold: 1, recoveryShares: 1, recoveryThreshold: 1 });
  await seal.commitInitialization();
  return { storage, seal };
}

test('an auto-sealed secondary given the primary\'s root key at activation unseals itself with its own seal', async () => {
  const primary = await autoSealedPrimary();
  const rootKey = await primary.seal.rootKeyForSecondary();
  expect(rootKey).toHaveLength(32);

  const storage = new MemoryStorage();
  const secondary = manager(storage, fakeSeal());
  expect(await secondary.seal.wrapForThisCluster(rootKey as Buffer)).toBe(true);
  await replicate(primary.storage, storage);

  expect(await secondary.seal.canAutoUnseal()).toBe(true);
  expect(await secondary.seal.unsealWithAutoSeal()).toBe(true);
  expect(secondary.barrier.sealed).toBe(false);
  expect(await secondary.seal.holdsStoredRootKey()).toBe(true);
  // The primary's own wrapped root key is untouched, and still the primary's seal's.
  expect(await storage.get(WRAPPED_ROOT_KEY)).not.toEqual(await primary.storage.get(WRAPPED_ROOT_KEY));
});

test('a running secondary, unsealed with its own root key, takes the primary\'s from its seal once the primary\'s keyring is stored', async () => {
  const primary = await autoSealedPrimary();
  const storage = new MemoryStorage();
  const secondary = manager(storage, fakeSeal());
  await secondary.seal.initialize({ secretShares: 1, secretThreshold: 1, recoveryShares: 1, recoveryThreshold: 1 });
  await secondary.seal.commitInitialization();
  // Its activation: the primary's root key wrapped by its own seal, then the primary's keyring.
  expect(await secondary.seal.wrapForThisCluster((await primary.seal.rootKeyForSecondary()) as Buffer)).toBe(true);
  await replicate(primary.storage, storage);
  secondary.seal.forgetConfig();
  expect(await secondary.seal.holdsStoredRootKey()).toBe(false);

  expect(await secondary.seal.adoptAutoSealedRootKey()).toBe(true);
  expect(await secondary.seal.holdsStoredRootKey()).toBe(true);
  expect(secondary.barrier.sealed).toBe(false);
});

test('a Shamir node has no auto-sealed root key to take', async () => {
  const storage = new MemoryStorage();
  const { seal } = manager(storage);
  await seal.initialize({ secretShares: 1, secretThreshold: 1 });
  await seal.commitInitialization();
  expect(await seal.adoptAutoSealedRootKey()).toBe(false);
});

test('the primary\'s wrapped root key is no use to a secondary with another seal (why it is not replicated)', async () => {
  const primary = await autoSealedPrimary();
  const storage = new MemoryStorage();
  await replicate(primary.storage, storage);
  await storage.put(WRAPPED_ROOT_KEY, (await primary.storage.get(WRAPPED_ROOT_KEY)) as Buffer);
  const secondary = manager(storage, fakeSeal());
  await expect(secondary.seal.unsealWithAutoSeal()).rejects.toThrow(/message authentication failed/);
  expect(secondary.barrier.sealed).toBe(true);
});

test('a Shamir primary hands no root key to its secondaries: they are unsealed with its key shares', async () => {
  const storage = new MemoryStorage();
  const { seal } = manager(storage);
  await seal.initialize({ secretShares: 1, secretThreshold: 1 });
  await seal.commitInitialization();
  expect(await seal.rootKeyForSecondary()).toBeNull();
});

test('a secondary without an auto seal stores nothing for the root key it is handed', async () => {
  const primary = await autoSealedPrimary();
  const storage = new MemoryStorage();
  const { seal } = manager(storage);
  expect(await seal.wrapForThisCluster((await primary.seal.rootKeyForSecondary()) as Buffer)).toBe(false);
  expect(await storage.get(WRAPPED_ROOT_KEY)).toBeNull();
});

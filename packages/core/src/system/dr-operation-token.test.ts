import { randomBytes } from 'node:crypto';
import * as openpgp from 'openpgp';
import { FakeClock } from '../clock';
import { Core } from '../core';
import { Backend } from '../framework/backend';
import { BackendHarness, expectBadRequest, expectFailure } from '../framework/testing';
import type { BackendResponse } from '../framework/types';
import { silentLogger } from '../logger';
import { splitRootKey } from '../seal/shamir';
import { MemoryStorage } from '../storage/memory-storage';
import { callCore, failure, START } from '../testing/core-rig';
import {
  drOperationTokenPaths, drOperationTokenSealedPaths, revokeDrOperationToken, verifyDrOperationToken, type DrOperationTokenStore,
} from './dr-operation-token';
import type { ShareCheck } from './root-generation';

const PREFIX = 'replication/dr/secondary/';
const KEY = 'core/local/replication/dr/operation-token';
const ATTEMPT = `${PREFIX}generate-operation-token/attempt`;
const UPDATE = `${PREFIX}generate-operation-token/update`;

function decodeWithOtp(encoded: string, otp: string): string {
  const raw = Buffer.from(encoded, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(raw.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

/** A seal that knows a root key split 2 of 3, without a barrier or a core. */
async function fakeSeal(): Promise<{ shares: ShareCheck; keys: Buffer[] }> {
  const rootKey = randomBytes(32);
  const keys = await splitRootKey(rootKey, 3, 2);
  return {
    keys,
    shares: {
      keyShareConfig: async () => ({ shares: 3, threshold: 2, recovery: false }),
      checkCombinedKey: async (candidate) => candidate.equals(rootKey),
    },
  };
}

/** The bare JSON of a generation reply. */
async function raw(reply: Promise<BackendResponse | null>): Promise<Record<string, string>> {
  const body = (await reply)?.raw?.body;
  if (!body) throw new Error('expected a bare JSON reply');
  return body as Record<string, string>;
}

async function harness() {
  const { shares, keys } = await fakeSeal();
  const store: DrOperationTokenStore = { storage: new MemoryStorage(), key: KEY };
  const h = new BackendHarness(new Backend('system', drOperationTokenPaths({ prefix: PREFIX, shares, ...store })));
  return { h, keys, store };
}

describe('DR operation token generation', () => {
  it('makes a token from the key shares whose hash alone is stored at the given key, verified and revoked there', async () => {
    const { h, keys, store } = await harness();
    const started = await raw(h.request('write', ATTEMPT));
    expect(started).toMatchObject({ started: true, required: 2, progress: 0, otp_length: 28 });
    await h.request('write', UPDATE, { key: keys[0]?.toString('hex'), nonce: started['nonce'] });
    const done = await raw(h.request('write', UPDATE, { key: keys[1]?.toString('base64'), nonce: started['nonce'] }));
    expect(done).toMatchObject({ complete: true, encoded_root_token: '' });
    const token = decodeWithOtp(done['encoded_token'] as string, started['otp'] as string);
    expect(token).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);

    expect(await store.storage.list('core/local/replication/dr/')).toEqual(['operation-token']);
    const stored = (await store.storage.get(KEY))?.toString('utf8') ?? '';
    expect(stored).not.toContain(token);
    expect(await verifyDrOperationToken(store, token)).toBe(true);
    for (const wrong of ['', 'hvs.x', `${token}x`, token.slice(0, -1), undefined, 42]) {
      expect(await verifyDrOperationToken(store, wrong)).toBe(false);
    }

    await revokeDrOperationToken(store);
    expect(await verifyDrOperationToken(store, token)).toBe(false);
    expect(await store.storage.get(KEY)).toBeNull();
  });

  it('replaces the earlier token when a new one is made', async () => {
    const { h, keys, store } = await harness();
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) {
      const started = await raw(h.request('write', ATTEMPT));
      await h.request('write', UPDATE, { key: keys[2]?.toString('hex'), nonce: started['nonce'] });
      const done = await raw(h.request('write', UPDATE, { key: keys[0]?.toString('hex'), nonce: started['nonce'] }));
      tokens.push(decodeWithOtp(done['encoded_token'] as string, started['otp'] as string));
    }
    expect(await verifyDrOperationToken(store, tokens[0])).toBe(false);
    expect(await verifyDrOperationToken(store, tokens[1])).toBe(true);
  });

  it('has one attempt at a time, a nonce, a cancel, and stores nothing for shares that are not the seal\'s', async () => {
    const { h, keys, store } = await harness();
    const other = await fakeSeal();
    const started = await raw(h.request('write', ATTEMPT));
    expect((await expectFailure(h.request('write', ATTEMPT), 400)).message).toMatch(/DR operation token generation attempt is already in progress/);
    await expectBadRequest(h.request('write', UPDATE, { key: keys[0]?.toString('hex'), nonce: 'nope' }), 'nonce');
    await h.request('write', UPDATE, { key: keys[0]?.toString('hex'), nonce: started['nonce'] });
    await expectBadRequest(h.request('write', UPDATE, { key: other.keys[1]?.toString('hex'), nonce: started['nonce'] }), 'key');
    expect(await store.storage.list('')).toEqual([]);
    expect(await raw(h.request('read', ATTEMPT))).toMatchObject({ started: true, progress: 0 });
    expect(await h.request('delete', ATTEMPT)).toBeNull();
    expect(await raw(h.request('read', ATTEMPT))).toMatchObject({ started: false, nonce: '' });
  });

  it('encrypts the token to a PGP key instead', async () => {
    const { h, keys, store } = await harness();
    const { privateKey, publicKey } = await openpgp.generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'dr' }], format: 'binary' });
    const started = await raw(h.request('write', ATTEMPT, { pgp_key: Buffer.from(publicKey).toString('base64') }));
    expect(started['pgp_fingerprint']).toMatch(/^[0-9a-f]{40}$/);
    await h.request('write', UPDATE, { key: keys[0]?.toString('hex'), nonce: started['nonce'] });
    const done = await raw(h.request('write', UPDATE, { key: keys[1]?.toString('hex'), nonce: started['nonce'] }));
    const message = await openpgp.readMessage({ binaryMessage: Buffer.from(done['encoded_token'] as string, 'base64') });
    const { data } = await openpgp.decrypt({ message, decryptionKeys: await openpgp.readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
    expect(await verifyDrOperationToken(store, Buffer.from(data as Uint8Array).toString('utf8'))).toBe(true);
  });
});

describe('DR operation token generation on a core that is unsealed but not active', () => {
  /** A core of a cluster (HA) that no one activates: after unseal it stays a standby, as a DR secondary's does. */
  async function standbyCore() {
    const storage = new MemoryStorage();
    const core = new Core({
      storage, clock: new FakeClock(START), logger: silentLogger, ha: { leader: () => null },
      extensions: [(c) => ({
        systemPaths: drOperationTokenPaths({ prefix: PREFIX, storage: c.barrier.physical, key: KEY, shares: c.seal, sealed: () => c.sealed }),
        sealedPaths: drOperationTokenSealedPaths(PREFIX),
      })],
    });
    const { keys } = await core.initialize(3, 2);
    return { core, keys, store: { storage, key: KEY } };
  }

  it('answers the generation itself, from the seal configuration and the keyring in storage', async () => {
    const { core, keys, store } = await standbyCore();
    // Sealed, it refuses.
    expect((await callCore(core, 'update', `sys/${ATTEMPT}`, undefined)).status).toBe(503);
    await core.unseal(keys[0] as Buffer);
    await core.unseal(keys[1] as Buffer);
    expect(core.standby).toBe(true);
    // Anything else a standby leaves to the active node.
    expect((await failure(callCore(core, 'read', 'sys/mounts', undefined))).status).toBe(503);

    const status = await callCore(core, 'read', `sys/${ATTEMPT}`, undefined);
    expect(status).toMatchObject({ status: 200, body: { started: false, required: 2 } });
    const started = (await callCore(core, 'update', `sys/${ATTEMPT}`, undefined)).body;
    await callCore(core, 'update', `sys/${UPDATE}`, undefined, { key: keys[2]?.toString('hex'), nonce: started.nonce });
    const done = await callCore(core, 'update', `sys/${UPDATE}`, undefined, { key: keys[1]?.toString('hex'), nonce: started.nonce });
    expect(done).toMatchObject({ status: 200, body: { complete: true } });
    expect(await verifyDrOperationToken(store, decodeWithOtp(done.body.encoded_token, started.otp))).toBe(true);
    // Outside the barrier: the stored value is plain JSON, readable without the keyring.
    expect(JSON.parse((await store.storage.get(KEY))?.toString('utf8') ?? '')).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });
});

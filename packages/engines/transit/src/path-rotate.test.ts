import { getJson, putJson } from '@strongroom/core';
import type { StoredKeyPolicy } from './key-policy';
import { T0_SECONDS, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

async function storedKey(r: ReturnType<typeof transitRig>, name: string): Promise<StoredKeyPolicy> {
  const stored = await getJson<StoredKeyPolicy>(r.storage, `policy/${name}`);
  if (!stored) throw new Error(`no stored key ${name}`);
  return stored;
}

describe('keys/:name/rotate', () => {
  it('adds a version: new encryptions use it, old ciphertext still decrypts', async () => {
    const r = transitRig();
    const { h, clock } = r;
    await h.request('write', 'keys/k');
    const old = await encrypt(h, 'k', 'before');
    await clock.advance(60_000);
    const rotated = data(await h.request('write', 'keys/k/rotate'));
    expect(rotated).toMatchObject({ latest_version: 2, keys: { 1: T0_SECONDS, 2: T0_SECONDS + 60 } });
    const fresh = await encrypt(h, 'k', 'after');
    expect(old.startsWith('vault:v1:')).toBe(true);
    expect(fresh.startsWith('vault:v2:')).toBe(true);
    expect(await decrypt(h, 'k', old)).toBe('before');
    expect(await decrypt(h, 'k', fresh)).toBe('after');
  });

  it('gives every version its own random 32-byte HMAC key', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k');
    await r.h.request('write', 'keys/k/rotate');
    const stored = await storedKey(r, 'k');
    const one = Buffer.from(stored.versions['1']?.hmac_key ?? '', 'base64');
    const two = Buffer.from(stored.versions['2']?.hmac_key ?? '', 'base64');
    expect(one).toHaveLength(32);
    expect(two).toHaveLength(32);
    expect(one.equals(two)).toBe(false);
    expect(stored.versions['1']?.key).not.toEqual(stored.versions['2']?.key);
  });

  it('keeps an hmac key\'s size across rotation', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/h', { type: 'hmac', key_size: 64 });
    await r.h.request('write', 'keys/h/rotate');
    const stored = await storedKey(r, 'h');
    expect(Buffer.from(stored.versions['2']?.hmac_key ?? '', 'base64')).toHaveLength(64);
    expect(data(await r.h.request('read', 'keys/h'))).toMatchObject({ key_size: 64, latest_version: 2 });
  });

  it('rotates asymmetric keys to a new key pair', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    const keys = data(await h.request('write', 'keys/e/rotate'))['keys'] as Record<string, { public_key: string }>;
    expect(keys['1']?.public_key).not.toBe(keys['2']?.public_key);
  });

  it('refuses a key that does not exist', async () => {
    const { h } = transitRig();
    await failure(h.request('write', 'keys/nope/rotate'), 400);
  });

  it('refuses an imported key unless it was imported with allow_rotation', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/imp');
    const stored = await storedKey(r, 'imp');
    await putJson(r.storage, 'policy/imp', { ...stored, imported: true });
    r.backend.context.keys.invalidate('imp');
    const err = await failure(r.h.request('write', 'keys/imp/rotate'), 400);
    expect(err.message).toContain('allow_rotation');
    expect(data(await r.h.request('read', 'keys/imp'))).toMatchObject({ imported_key: true, imported_key_allow_rotation: false, latest_version: 1 });

    await putJson(r.storage, 'policy/imp', { ...stored, imported: true, allow_imported_key_rotation: true });
    r.backend.context.keys.invalidate('imp');
    expect(data(await r.h.request('write', 'keys/imp/rotate'))['latest_version']).toBe(2);
    expect((await storedKey(r, 'imp')).versions['2']?.imported).toBeUndefined();
  });
});

describe('automatic rotation', () => {
  it('rotates a key once its auto_rotate_period has passed since the latest version', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/auto', { auto_rotate_period: '1h' });
    await r.h.request('write', 'keys/manual');
    await r.clock.advance(3599_000);
    expect(await r.backend.rotateDueKeys(r.storage)).toEqual([]);
    await r.clock.advance(1000);
    expect(await r.backend.rotateDueKeys(r.storage)).toEqual(['auto']);
    expect(data(await r.h.request('read', 'keys/auto'))['latest_version']).toBe(2);
    expect(data(await r.h.request('read', 'keys/manual'))['latest_version']).toBe(1);
    // The period counts again from the new version.
    await r.clock.advance(1800_000);
    expect(await r.backend.rotateDueKeys(r.storage)).toEqual([]);
  });

  it('skips imported keys without allow_rotation', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/imp', { auto_rotate_period: '1h' });
    const stored = await storedKey(r, 'imp');
    await putJson(r.storage, 'policy/imp', { ...stored, imported: true });
    r.backend.context.keys.invalidate();
    await r.clock.advance(7200_000);
    expect(await r.backend.rotateDueKeys(r.storage)).toEqual([]);
  });
});

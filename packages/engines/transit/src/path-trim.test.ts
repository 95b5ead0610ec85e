import { getJson } from '@strongroom/core';
import type { StoredKeyPolicy } from './key-policy';
import { badRequest, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

async function keyWithVersions(n: number) {
  const r = transitRig();
  await r.h.request('write', 'keys/k');
  const ciphertexts = [await encrypt(r.h, 'k', 'v1')];
  for (let v = 2; v <= n; v++) {
    await r.h.request('write', 'keys/k/rotate');
    ciphertexts.push(await encrypt(r.h, 'k', `v${v}`));
  }
  return { ...r, ciphertexts };
}

describe('keys/:name/trim', () => {
  it('refuses while min_encryption_version is 0', async () => {
    const { h } = await keyWithVersions(3);
    await h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    await badRequest(h.request('write', 'keys/k/trim', { min_available_version: 2 }), 'min_available_version');
  });

  it('refuses above the lesser of min_encryption_version and min_decryption_version', async () => {
    const { h } = await keyWithVersions(4);
    await h.request('write', 'keys/k/config', { min_decryption_version: 2, min_encryption_version: 3 });
    await badRequest(h.request('write', 'keys/k/trim', { min_available_version: 3 }), 'min_available_version');
    await h.request('write', 'keys/k/config', { min_decryption_version: 3 });
    expect(data(await h.request('write', 'keys/k/trim', { min_available_version: 3 }))['min_available_version']).toBe(3);
  });

  it('deletes the versions below it for good', async () => {
    const r = await keyWithVersions(4);
    const { h } = r;
    await h.request('write', 'keys/k/config', { min_decryption_version: 3, min_encryption_version: 3 });
    const read = data(await h.request('write', 'keys/k/trim', { min_available_version: 3 }));
    expect(read).toMatchObject({ min_available_version: 3, latest_version: 4 });
    expect(Object.keys(read['keys'] as object)).toEqual(['3', '4']);
    const stored = await getJson<StoredKeyPolicy>(r.storage, 'policy/k');
    expect(Object.keys(stored?.versions ?? {})).toEqual(['3', '4']);
    // Lowering min_decryption_version cannot bring them back.
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: 1 }), 'min_decryption_version');
    await failure(decrypt(h, 'k', r.ciphertexts[0] as string), 400);
    expect(await decrypt(h, 'k', r.ciphertexts[2] as string)).toBe('v3');
    // min_encryption_version cannot point at a trimmed version either.
    await badRequest(h.request('write', 'keys/k/config', { min_encryption_version: 2 }), 'min_encryption_version');
  });

  it('never moves back, and takes only positive versions', async () => {
    const { h } = await keyWithVersions(3);
    await h.request('write', 'keys/k/config', { min_decryption_version: 3, min_encryption_version: 3 });
    await h.request('write', 'keys/k/trim', { min_available_version: 2 });
    await badRequest(h.request('write', 'keys/k/trim', { min_available_version: 1 }), 'min_available_version');
    await badRequest(h.request('write', 'keys/k/trim', { min_available_version: 0 }), 'min_available_version');
    await badRequest(h.request('write', 'keys/k/trim', { min_available_version: 'x' }), 'min_available_version');
    await badRequest(h.request('write', 'keys/k/trim', {}), 'min_available_version');
    expect(data(await h.request('write', 'keys/k/trim', { min_available_version: 2 }))['min_available_version']).toBe(2);
  });

  it('refuses a key that does not exist', async () => {
    const { h } = transitRig();
    await failure(h.request('write', 'keys/nope/trim', { min_available_version: 1 }), 400);
  });
});

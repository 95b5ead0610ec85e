import { badRequest, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

async function rig(versions = 1) {
  const r = transitRig();
  await r.h.request('write', 'keys/k');
  for (let v = 1; v < versions; v++) await r.h.request('write', 'keys/k/rotate');
  return r;
}

describe('keys/:name/config', () => {
  it('sets deletion_allowed both ways and answers with the key read', async () => {
    const { h } = await rig();
    expect(data(await h.request('write', 'keys/k/config', { deletion_allowed: true }))).toMatchObject({ name: 'k', deletion_allowed: true });
    expect(data(await h.request('write', 'keys/k/config', { deletion_allowed: false }))['deletion_allowed']).toBe(false);
  });

  it('turns exportable and allow_plaintext_backup on for good: turning them off is ignored with a warning', async () => {
    const { h } = await rig();
    await h.request('write', 'keys/k/config', { exportable: true, allow_plaintext_backup: true });
    const resp = await h.request('write', 'keys/k/config', { exportable: false, allow_plaintext_backup: false });
    expect(data(resp)).toMatchObject({ exportable: true, allow_plaintext_backup: true });
    expect(resp?.warnings).toEqual([
      'exportable cannot be disabled once enabled; it stays true',
      'allow_plaintext_backup cannot be disabled once enabled; it stays true',
    ]);
    expect(data(await h.request('read', 'keys/k'))).toMatchObject({ exportable: true, allow_plaintext_backup: true });
  });

  it('sending false for a switch that is off is not worth a warning', async () => {
    const { h } = await rig();
    const resp = await h.request('write', 'keys/k/config', { exportable: false });
    expect(resp?.warnings).toBeUndefined();
  });

  it('leaves fields that are not sent as they are', async () => {
    const { h } = await rig(3);
    await h.request('write', 'keys/k/config', { min_decryption_version: 2, auto_rotate_period: '2h', deletion_allowed: true });
    const read = data(await h.request('write', 'keys/k/config', { exportable: true }));
    expect(read).toMatchObject({ min_decryption_version: 2, auto_rotate_period: 7200, deletion_allowed: true, exportable: true });
  });

  it('sets and clears auto_rotate_period, refusing under an hour', async () => {
    const { h } = await rig();
    expect(data(await h.request('write', 'keys/k/config', { auto_rotate_period: '1h30m' }))['auto_rotate_period']).toBe(5400);
    await badRequest(h.request('write', 'keys/k/config', { auto_rotate_period: '10m' }), 'auto_rotate_period');
    expect(data(await h.request('write', 'keys/k/config', { auto_rotate_period: 0 }))['auto_rotate_period']).toBe(0);
  });

  it('keeps min_decryption_version within 1..latest, taking 0 as 1', async () => {
    const { h } = await rig(3);
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: 4 }), 'min_decryption_version');
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: -1 }), 'min_decryption_version');
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: 'two' }), 'min_decryption_version');
    expect(data(await h.request('write', 'keys/k/config', { min_decryption_version: 3 }))['min_decryption_version']).toBe(3);
    const zero = await h.request('write', 'keys/k/config', { min_decryption_version: 0 });
    expect(data(zero)['min_decryption_version']).toBe(1);
    expect(zero?.warnings).toHaveLength(1);
  });

  it('keeps min_encryption_version at 0 or between min_decryption_version and latest', async () => {
    const { h } = await rig(3);
    await h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    await badRequest(h.request('write', 'keys/k/config', { min_encryption_version: 1 }), 'min_encryption_version');
    await badRequest(h.request('write', 'keys/k/config', { min_encryption_version: 4 }), 'min_encryption_version');
    await badRequest(h.request('write', 'keys/k/config', { min_encryption_version: -2 }), 'min_encryption_version');
    expect(data(await h.request('write', 'keys/k/config', { min_encryption_version: 2 }))['min_encryption_version']).toBe(2);
    expect(data(await h.request('write', 'keys/k/config', { min_encryption_version: 0 }))['min_encryption_version']).toBe(0);
  });

  it('checks both minimums together when both are sent', async () => {
    const { h } = await rig(3);
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: 3, min_encryption_version: 2 }), 'min_encryption_version');
    expect(data(await h.request('write', 'keys/k/config', { min_decryption_version: 2, min_encryption_version: 3 }))).toMatchObject({
      min_decryption_version: 2, min_encryption_version: 3,
    });
    // Raising min_decryption_version past a set min_encryption_version would strand new ciphertext.
    await badRequest(h.request('write', 'keys/k/config', { min_decryption_version: 3, min_encryption_version: 2 }), 'min_encryption_version');
  });

  it('changes nothing when any field is refused', async () => {
    const { h } = await rig(2);
    await badRequest(h.request('write', 'keys/k/config', { deletion_allowed: true, min_decryption_version: 9 }), 'min_decryption_version');
    expect(data(await h.request('read', 'keys/k'))['deletion_allowed']).toBe(false);
  });

  it('refuses a key that does not exist', async () => {
    const { h } = transitRig();
    await failure(h.request('write', 'keys/nope/config', { deletion_allowed: true }), 400);
  });
});

describe('min_decryption_version', () => {
  it('refuses ciphertext of older versions and hides them from the key read', async () => {
    const { h } = await rig();
    const v1 = await encrypt(h, 'k', 'one');
    await h.request('write', 'keys/k/rotate');
    const v2 = await encrypt(h, 'k', 'two');
    await h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    const err = await failure(decrypt(h, 'k', v1), 400);
    expect(err.message).toBe('ciphertext or signature version is disallowed by policy (too old)');
    expect(await decrypt(h, 'k', v2)).toBe('two');
    expect(Object.keys(data(await h.request('read', 'keys/k'))['keys'] as object)).toEqual(['2']);
    // Lowering it again brings version 1 back: nothing was deleted.
    await h.request('write', 'keys/k/config', { min_decryption_version: 1 });
    expect(await decrypt(h, 'k', v1)).toBe('one');
  });
});

import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { getJson, type BackendHarness } from '@strongroom/core';
import type { StoredKeyPolicy } from './key-policy';
import { issue, makeCa } from './test-support/certificates';
import { keyPairs, pkcs8, seedWrappingKey, spkiPem, wrapped } from './test-support/import-support';
import { b64, badRequest, data, decrypt, encrypt, failure, transitRig, type TransitRig } from './test-support/transit-rig';
import { parseJsonBig, stringifyJsonBig } from './vault-backup';

async function stored(r: TransitRig, name: string): Promise<StoredKeyPolicy> {
  const s = await getJson<StoredKeyPolicy>(r.storage, `policy/${name}`);
  if (!s) throw new Error(`no stored key ${name}`);
  return s;
}

async function backup(h: BackendHarness, name: string): Promise<string> {
  return String(data(await h.request('read', `backup/${name}`))['backup']);
}

function decoded(text: string): Record<string, any> {
  return parseJsonBig(Buffer.from(text, 'base64').toString('utf8')) as Record<string, any>;
}

const BACKUP_OK = { exportable: true, allow_plaintext_backup: true };

describe('backup/:name', () => {
  it('needs exportable and allow_plaintext_backup, and the key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/plain');
    await h.request('write', 'keys/exp', { exportable: true });
    await h.request('write', 'keys/bak', { allow_plaintext_backup: true });
    expect((await failure(h.request('read', 'backup/plain'), 400)).message).toContain('exportable');
    expect((await failure(h.request('read', 'backup/exp'), 400)).message).toContain('allow_plaintext_backup');
    expect((await failure(h.request('read', 'backup/bak'), 400)).message).toContain('exportable');
    expect((await failure(h.request('read', 'backup/none'), 400)).message).toContain('not found');
  });

  it('records the backup on the key (backup_info)', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', BACKUP_OK);
    await r.h.request('write', 'keys/k/rotate');
    await r.clock.advance(1500);
    await backup(r.h, 'k');
    expect(data(await r.h.request('read', 'keys/k'))['backup_info']).toEqual({ time: '2026-01-01T00:00:01.5Z', version: 2 });
  });

  it('writes Vault\'s JSON: policy with keys from min_decryption_version, archive indexed from min_available_version', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', { ...BACKUP_OK, auto_rotate_period: '2h' });
    await r.h.request('write', 'keys/k/rotate');
    await r.h.request('write', 'keys/k/rotate');
    await r.h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    const doc = decoded(await backup(r.h, 'k'));
    const policy = doc['policy'];
    expect(policy).toMatchObject({
      name: 'k', type: 0, latest_version: 3, min_decryption_version: 2, min_encryption_version: 0, min_available_version: 0,
      archive_version: 3, archive_min_version: 0, exportable: true, allow_plaintext_backup: true, deletion_allowed: false,
      derived: false, kdf: 1, convergent_encryption: false, auto_rotate_period: 7_200_000_000_000, Imported: false, AllowImportedKeyRotation: false,
      backup_info: { time: '2026-01-01T00:00:00Z', version: 3 }, restore_info: null,
    });
    expect(Object.keys(policy['keys'])).toEqual(['2', '3']);
    const archive = doc['archived_keys']['keys'] as Record<string, unknown>[];
    expect(archive).toHaveLength(4);
    expect(archive[0]).toMatchObject({ key: null, time: '0001-01-01T00:00:00Z' });
    expect(archive[1]).toMatchObject({ time: '2026-01-01T00:00:00Z', creation_time: Date.UTC(2026, 0, 1) / 1000, convergent_version: 0, certificate_chain: null });
    const s = await stored(r, 'k');
    expect(archive[1]?.['key']).toBe(s.versions['1']?.key);
    expect(archive[1]?.['hmac_key']).toBe(s.versions['1']?.hmac_key);
    expect(policy['keys']['3']).toEqual(archive[3]);
  });

  it('writes EC coordinates and RSA parameters as bare JSON integers, as Go does', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/ec', { ...BACKUP_OK, type: 'ecdsa-p521' });
    await h.request('write', 'keys/rsa', { ...BACKUP_OK, type: 'rsa-2048' });
    const ecText = Buffer.from(await backup(h, 'ec'), 'base64').toString('utf8');
    expect(ecText).toMatch(/"ec_x":\d{20,},"ec_y":\d{20,},"ec_d":\d{20,}/);
    const ec = decoded(await backup(h, 'ec'))['policy']['keys']['1'];
    const jwk = createPrivateKey(String((data(await h.request('read', 'export/signing-key/ec/1'))['keys'] as Record<string, string>)['1'])).export({ format: 'jwk' });
    expect(ec['ec_d']).toBe(BigInt(`0x${Buffer.from(jwk.d ?? '', 'base64url').toString('hex')}`));
    const rsa = decoded(await backup(h, 'rsa'))['policy']['keys']['1'];
    expect(Object.keys(rsa['rsa_key'])).toEqual(['N', 'E', 'D', 'Primes', 'Precomputed']);
    expect(rsa['rsa_key']['E']).toBe(65537);
    expect(rsa['rsa_key']['Primes'][0] * rsa['rsa_key']['Primes'][1]).toBe(rsa['rsa_key']['N']);
    expect(rsa['rsa_public_key']).toEqual({ N: rsa['rsa_key']['N'], E: 65537 });
  });
});

describe('restore', () => {
  /** Builds keys of every kind in involved states; answers their names. */
  async function keyZoo(r: TransitRig): Promise<string[]> {
    const { h } = r;
    await seedWrappingKey(r.storage);
    await h.request('write', 'keys/aes', { ...BACKUP_OK, auto_rotate_period: '3h' });
    for (let i = 0; i < 4; i++) {
      await r.clock.advance(1234);
      await h.request('write', 'keys/aes/rotate');
    }
    await h.request('write', 'keys/aes/config', { min_decryption_version: 3, min_encryption_version: 4, deletion_allowed: true });
    await h.request('write', 'keys/aes/trim', { min_available_version: 2 });
    await h.request('write', 'keys/a128', { ...BACKUP_OK, type: 'aes128-gcm96' });
    await h.request('write', 'keys/conv', { ...BACKUP_OK, type: 'chacha20-poly1305', derived: true, convergent_encryption: true });
    await h.request('write', 'keys/conv/rotate');
    for (const type of ['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048']) {
      await h.request('write', `keys/${type}`, { ...BACKUP_OK, type });
      await h.request('write', `keys/${type}/rotate`);
    }
    await h.request('write', 'keys/ded', { ...BACKUP_OK, type: 'ed25519', derived: true });
    await h.request('write', 'keys/mac', { ...BACKUP_OK, type: 'hmac', key_size: 100 });
    const pub = keyPairs['ecdsa-p256']();
    const priv = keyPairs['ecdsa-p256']();
    await h.request('write', 'keys/imp/import', { ...BACKUP_OK, type: 'ecdsa-p256', public_key: spkiPem(pub.publicKey), allow_rotation: true });
    await h.request('write', 'keys/imp/import_version', { ciphertext: await wrapped(h, pkcs8(priv.privateKey)) });
    await h.request('write', 'keys/imp/rotate');
    // A certificate chain on version 1 of the ecdsa-p256 key.
    const ca = await makeCa();
    const v1 = (data(await h.request('read', 'keys/ecdsa-p256'))['keys'] as Record<string, { public_key: string }>)['1']?.public_key ?? '';
    const leaf = await issue(ca, createPublicKey(v1));
    await h.request('write', 'keys/ecdsa-p256/set-certificate', { version: 1, certificate_chain: leaf.toString('pem') + ca.cert.toString('pem') });
    return ['aes', 'a128', 'conv', 'ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'ded', 'mac', 'imp'];
  }

  it('round-trips every kind of key exactly: all versions, configuration and HMAC keys', async () => {
    const r = transitRig();
    const names = await keyZoo(r);
    await r.clock.advance(60_000);
    for (const name of names) {
      const text = await backup(r.h, name);
      const before = await stored(r, name);
      const resp = data(await r.h.request('write', `restore/${name}-copy`, { backup: text }));
      expect(resp).toMatchObject({ name: `${name}-copy`, restore_info: { time: '2026-01-01T00:01:04.936Z', version: before.latest_version } });
      const after = await stored(r, `${name}-copy`);
      expect(after).toEqual({ ...before, name: `${name}-copy`, restore_info: { time: r.clock.now(), version: before.latest_version } });
    }
  });

  it('restores a working key: data from before the backup decrypts, signatures verify', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', BACKUP_OK);
    const ct = await encrypt(r.h, 'k', 'kept');
    const text = await backup(r.h, 'k');
    await r.h.request('write', 'keys/k/config', { deletion_allowed: true });
    await r.h.request('delete', 'keys/k');
    expect(await r.h.request('read', 'keys/k')).toBeNull();
    await r.h.request('write', 'restore', { backup: text });
    expect(await decrypt(r.h, 'k', ct)).toBe('kept');
  });

  it('refuses to overwrite an existing key unless force is set', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', BACKUP_OK);
    const before = await encrypt(r.h, 'k', 'from the backup');
    const text = await backup(r.h, 'k');
    await r.h.request('write', 'keys/other');
    const err = await failure(r.h.request('write', 'restore/other', { backup: text }), 400);
    expect(err.message).toContain('already exists');
    expect(err.message).toContain('"force"');
    const otherCt = await encrypt(r.h, 'other', 'other');
    await r.h.request('write', 'restore/other', { backup: text, force: true });
    expect(await decrypt(r.h, 'other', before)).toBe('from the backup');
    await failure(decrypt(r.h, 'other', otherCt), 400);
  });

  it('takes the new name from the path or the body, and refuses bad names', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', BACKUP_OK);
    const text = await backup(r.h, 'k');
    await r.h.request('write', 'restore', { backup: text, name: 'by-body' });
    await r.h.request('write', 'restore/by-path', { backup: text });
    expect(data(await r.h.request('list', 'keys/'))['keys']).toEqual(['by-body', 'by-path', 'k']);
    await badRequest(r.h.request('write', 'restore', { backup: text, name: 'a/b' }), 'name');
    await badRequest(r.h.request('write', 'restore', { backup: text, name: '-x' }), 'name');
  });

  it('refuses what is not a backup', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/k', BACKUP_OK);
    const doc = decoded(await backup(r.h, 'k'));
    const enc = (v: unknown) => Buffer.from(stringifyJsonBig(v)).toString('base64');
    await badRequest(r.h.request('write', 'restore', {}), 'backup');
    await badRequest(r.h.request('write', 'restore', { backup: 'not base64!' }), 'backup');
    await badRequest(r.h.request('write', 'restore', { backup: b64('not json') }), 'backup');
    await badRequest(r.h.request('write', 'restore', { backup: enc({ archived_keys: {} }) }), 'backup');
    const managed = { policy: { ...doc['policy'], type: 10, keys: { 1: { ...doc['policy']['keys']['1'], key: null } } }, archived_keys: { keys: [] } };
    expect(await badRequest(r.h.request('write', 'restore', { backup: enc(managed) }), 'backup')).toContain('managed');
    await badRequest(r.h.request('write', 'restore', { backup: enc({ ...doc, policy: { ...doc['policy'], type: 99 } }) }), 'backup');
    await badRequest(r.h.request('write', 'restore', { backup: enc({ ...doc, policy: { ...doc['policy'], latest_version: 2 } }) }), 'backup');
    const short = { ...doc['policy']['keys']['1'], key: randomBytes(16).toString('base64') };
    await badRequest(r.h.request('write', 'restore', { backup: enc({ policy: { ...doc['policy'], keys: { 1: short } }, archived_keys: { keys: [] } }) }), 'backup');
    await badRequest(r.h.request('write', 'restore', { backup: enc({ ...doc, policy: { ...doc['policy'], version_template: 'x:{{version}}:' } }) }), 'backup');
    expect(data(await r.h.request('list', 'keys/'))['keys']).toEqual(['k']);
  });
});

describe('restoring backups written by Vault', () => {
  const dec = (b64url: string | undefined) => BigInt(`0x${Buffer.from(b64url ?? '', 'base64url').toString('hex')}`).toString();

  /** A KeyEntry as Go's encoding/json writes it (field order and zero values included). */
  function goEntry(fields: Record<string, string>): string {
    const all: Record<string, string> = {
      key: 'null', hmac_key: 'null', time: '"0001-01-01T00:00:00Z"', ec_x: 'null', ec_y: 'null', ec_d: 'null', rsa_key: 'null',
      rsa_public_key: 'null', public_key: '""', convergent_version: '0', creation_time: '0', certificate_chain: 'null', ...fields,
    };
    return `{${Object.entries(all).map(([k, v]) => `"${k}":${v}`).join(',')}}`;
  }

  function goBackup(policy: Record<string, string>, keys: Record<string, string>, archive: string[]): string {
    const p: Record<string, string> = {
      name: '"vault-key"', keys: `{${Object.entries(keys).map(([k, v]) => `"${k}":${v}`).join(',')}}`, derived: 'false', kdf: '0',
      convergent_encryption: 'false', exportable: 'true', min_decryption_version: '1', min_encryption_version: '0', latest_version: '1',
      archive_version: '1', archive_min_version: '0', min_available_version: '0', deletion_allowed: 'false', convergent_version: '0',
      type: '0', backup_info: '{"time":"2025-03-04T05:06:07.123456789Z","version":1}', restore_info: 'null', allow_plaintext_backup: 'true',
      version_template: '""', storage_prefix: '""', auto_rotate_period: '0', Imported: 'false', AllowImportedKeyRotation: 'false', ...policy,
    };
    const json = `{"policy":{${Object.entries(p).map(([k, v]) => `"${k}":${v}`).join(',')}},"archived_keys":{"keys":[${archive.join(',')}]}}`;
    return Buffer.from(json).toString('base64');
  }

  const time = '"2025-02-03T04:05:06.987654321+01:00"';

  it('restores an ECDSA key from big-integer coordinates', async () => {
    const { h } = transitRig();
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
    const jwk = privateKey.export({ format: 'jwk' });
    const hmac = randomBytes(32).toString('base64');
    const entry = goEntry({
      hmac_key: `"${hmac}"`, time, ec_x: dec(jwk.x), ec_y: dec(jwk.y), ec_d: dec(jwk.d), public_key: JSON.stringify(spkiPem(privateKey)), creation_time: '1738551906',
    });
    const resp = data(await h.request('write', 'restore', { backup: goBackup({ type: '6' }, { 1: entry }, [goEntry({}), entry]) }));
    expect(resp).toMatchObject({ name: 'vault-key', type: 'ecdsa-p384', latest_version: 1, backup_info: { time: '2025-03-04T05:06:07.123Z', version: 1 } });
    const keys = resp['keys'] as Record<string, { public_key: string; creation_time: string }>;
    expect(keys['1']).toMatchObject({ public_key: spkiPem(privateKey), creation_time: '2025-02-03T03:05:06.987Z' });
    const exported = (data(await h.request('read', 'export/signing-key/vault-key/1'))['keys'] as Record<string, string>)['1'] ?? '';
    expect(createPrivateKey(exported).export({ format: 'jwk' }).d).toBe(jwk.d);
    expect((data(await h.request('read', 'export/hmac-key/vault-key/1'))['keys'] as Record<string, string>)['1']).toBe(hmac);
  });

  it('restores an RSA key from Go\'s rsa.PrivateKey JSON, computing what Precomputed leaves out', async () => {
    const { h } = transitRig();
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = privateKey.export({ format: 'jwk' });
    const rsaKey = `{"N":${dec(jwk.n)},"E":65537,"D":${dec(jwk.d)},"Primes":[${dec(jwk.p)},${dec(jwk.q)}],"Precomputed":{"Dp":null,"Dq":null,"Qinv":null,"CRTValues":null}}`;
    const entry = goEntry({ hmac_key: `"${randomBytes(32).toString('base64')}"`, time, rsa_key: rsaKey, creation_time: '1738551906' });
    await h.request('write', 'restore', { backup: goBackup({ type: '3' }, { 1: entry }, [goEntry({}), entry]) });
    const exported = (data(await h.request('read', 'export/encryption-key/vault-key'))['keys'] as Record<string, string>)['1'] ?? '';
    expect(createPrivateKey(exported).export({ format: 'jwk' })).toEqual(jwk);
  });

  it('restores a trimmed, derived AES key with its archive and the legacy KDF', async () => {
    const { h } = transitRig();
    const entries = [2, 3, 4].map(() => goEntry({ key: `"${randomBytes(32).toString('base64')}"`, hmac_key: `"${randomBytes(32).toString('base64')}"`, time }));
    const backupText = goBackup(
      { derived: 'true', kdf: '0', latest_version: '4', archive_version: '4', archive_min_version: '2', min_available_version: '2', min_decryption_version: '3' },
      { 3: entries[1]!, 4: entries[2]! },
      entries,
    );
    const resp = data(await h.request('write', 'restore', { backup: backupText }));
    expect(resp).toMatchObject({ derived: true, kdf: 'hmac-sha256-counter', latest_version: 4, min_available_version: 2, min_decryption_version: 3 });
    const ct = await encrypt(h, 'vault-key', 'legacy kdf', { context: b64('ctx') });
    expect(await decrypt(h, 'vault-key', ct, { context: b64('ctx') })).toBe('legacy kdf');
  });

  it('marks every version of a key Vault calls imported as imported, and gives old versions without an HMAC key a fresh one', async () => {
    const r = transitRig();
    const one = goEntry({ key: `"${randomBytes(32).toString('base64')}"`, time });
    const two = goEntry({ key: `"${randomBytes(32).toString('base64')}"`, hmac_key: `"${randomBytes(32).toString('base64')}"`, time });
    await r.h.request('write', 'restore', { backup: goBackup({ latest_version: '2', archive_version: '2', Imported: 'true' }, { 1: one, 2: two }, [goEntry({}), one, two]) });
    const s = await stored(r, 'vault-key');
    expect(s.imported).toBe(true);
    expect(s.versions['1']?.imported).toBe(true);
    expect(Buffer.from(s.versions['1']?.hmac_key ?? '', 'base64')).toHaveLength(32);
    await seedWrappingKey(r.storage);
    expect(data(await r.h.request('write', 'keys/vault-key/import_version', { ciphertext: await wrapped(r.h, randomBytes(32)) }))['latest_version']).toBe(3);
  });

  it('reads OpenBao\'s type 10 with key bytes as hmac', async () => {
    const { h } = transitRig();
    const key = randomBytes(48).toString('base64');
    const entry = goEntry({ key: `"${key}"`, hmac_key: `"${key}"`, time });
    const resp = await h.request('write', 'restore', { backup: goBackup({ type: '10', key_size: '48' }, { 1: entry }, [goEntry({}), entry]) });
    expect(data(resp)).toMatchObject({ type: 'hmac', key_size: 48 });
    expect(resp?.warnings?.[0]).toContain('OpenBao');
  });
});

describe('JSON with big integers', () => {
  it('keeps integers beyond double precision exact both ways', () => {
    const text = '{"a":123456789012345678901234567890,"b":-9007199254740993,"c":[1,2.5,-0.5e3],"d":"x\\u0041","e":null,"f":true}';
    const v = parseJsonBig(text) as Record<string, unknown>;
    expect(v['a']).toBe(123456789012345678901234567890n);
    expect(v['b']).toBe(-9007199254740993n);
    expect(v['c']).toEqual([1, 2.5, -500]);
    expect(v['d']).toBe('xA');
    expect(stringifyJsonBig(v)).toBe('{"a":123456789012345678901234567890,"b":-9007199254740993,"c":[1,2.5,-500],"d":"xA","e":null,"f":true}');
  });

  it('treats __proto__ as data and refuses malformed input', () => {
    const v = parseJsonBig('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
    for (const bad of ['', '{', '{"a":}', '[1,]', '01', '{"a":1} x', '"\u0001"']) expect(() => parseJsonBig(bad)).toThrow(SyntaxError);
  });
});

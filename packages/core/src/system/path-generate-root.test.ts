import * as openpgp from 'openpgp';
import { SERVICE_TOKEN_LENGTH } from '../token/token-id';
import { StrongroomError } from '../errors';
import { callCore, failure, newCore, rig, type Rig } from '../testing/core-rig';

const ATTEMPT = 'sys/generate-root/attempt';
const UPDATE = 'sys/generate-root/update';

/** What the operator does with the result: XOR the decoded bytes with the OTP. */
function decodeWithOtp(encoded: string, otp: string): string {
  const raw = Buffer.from(encoded, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(raw.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

/** An operator's key pair as gpg makes it by default (ed25519 signing, cv25519 encryption). */
function operatorKey() {
  return openpgp.generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'operator' }], format: 'binary' });
}

async function twoOfThree(): Promise<Rig> {
  return rig({ shares: 3, threshold: 2 });
}

/** The secrets of a rig: no error message may contain any of them. */
function secretsOf(r: Rig, ...more: string[]): string[] {
  return [...r.keys.flatMap((k) => [k.toString('hex'), k.toString('base64')]), r.root, ...more];
}

function expectNoSecret(message: string, secrets: string[]): void {
  for (const s of secrets) expect(message).not.toContain(s);
}

describe('sys/generate-root', () => {
  it('reads an idle state with the threshold and the OTP length, without a token', async () => {
    const r = await twoOfThree();
    const reply = await r.ok('read', ATTEMPT, undefined);
    expect(reply.body).toEqual({
      started: false, nonce: '', progress: 0, required: 2, complete: false, encoded_token: '', encoded_root_token: '',
      pgp_fingerprint: '', otp: '', otp_length: SERVICE_TOKEN_LENGTH,
    });
  });

  it('starts with a server-made OTP shown once, takes shares up to the threshold and makes a working root token', async () => {
    const r = await twoOfThree();
    const started = (await r.ok('update', ATTEMPT, undefined)).body;
    expect(started).toMatchObject({ started: true, progress: 0, required: 2, complete: false, otp_length: SERVICE_TOKEN_LENGTH });
    expect(started.otp).toMatch(new RegExp(`^[0-9A-Za-z]{${SERVICE_TOKEN_LENGTH}}$`));
    expect(started.nonce).toMatch(/^[0-9a-f-]{36}$/);

    const read = (await r.ok('read', ATTEMPT, undefined)).body;
    expect(read).toMatchObject({ started: true, nonce: started.nonce, progress: 0, otp: '' });

    const first = (await r.ok('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce: started.nonce })).body;
    expect(first).toMatchObject({ started: true, progress: 1, required: 2, complete: false, encoded_token: '' });
    expect((await r.ok('read', ATTEMPT, undefined)).body.progress).toBe(1);

    // The third share, in base64 as keys_base64 prints it.
    const done = (await r.ok('update', UPDATE, undefined, { key: r.keys[2]?.toString('base64'), nonce: started.nonce })).body;
    expect(done).toMatchObject({ started: true, nonce: started.nonce, progress: 2, required: 2, complete: true, otp: '' });
    expect(done.encoded_root_token).toBe(done.encoded_token);

    const token = decodeWithOtp(done.encoded_token, started.otp);
    expect(token).toMatch(/^hvs\./);
    expect(token).not.toBe(r.root);
    const self = (await r.ok('read', 'auth/token/lookup-self', token)).body.data;
    expect(self).toMatchObject({ policies: ['root'], ttl: 0, expire_time: null, display_name: 'root', path: 'auth/token/root' });

    // The attempt ended with its result.
    expect((await r.ok('read', ATTEMPT, undefined)).body).toMatchObject({ started: false, nonce: '', progress: 0 });
  });

  it('allows one attempt at a time', async () => {
    const r = await twoOfThree();
    await r.ok('update', ATTEMPT, undefined);
    const second = await failure(r.call('update', ATTEMPT, undefined));
    expect(second.status).toBe(400);
    expect(second.message).toMatch(/already in progress.*one/);
  });

  it('starts one attempt when two starts race, and counts shares given at once one by one', async () => {
    const r = await rig({ shares: 5, threshold: 3 });
    const starts = await Promise.all([r.call('update', ATTEMPT, undefined), r.call('update', ATTEMPT, undefined)]);
    expect(starts.map((s) => s.status).sort()).toEqual([200, 400]);
    const winner = starts.find((s) => s.status === 200)?.body;
    expect((await r.ok('read', ATTEMPT, undefined)).body.nonce).toBe(winner.nonce);

    const replies = await Promise.all([0, 1, 2].map((i) => r.ok('update', UPDATE, undefined, { key: r.keys[i]?.toString('hex'), nonce: winner.nonce })));
    expect(replies.map((x) => x.body.progress).sort()).toEqual([1, 2, 3]);
    const done = replies.find((x) => x.body.complete)?.body;
    expect(await r.works(decodeWithOtp(done.encoded_token, winner.otp))).toBe(true);
  });

  it('refuses a share with a wrong nonce or without an attempt, and a share given twice', async () => {
    const r = await twoOfThree();
    const none = await failure(r.call('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce: 'x' }));
    expect(none).toMatchObject({ status: 400, message: expect.stringMatching(/no root token generation attempt is in progress/) });

    const { nonce } = (await r.ok('update', ATTEMPT, undefined)).body;
    const wrong = await failure(r.call('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce: 'not-the-nonce' }));
    expect(wrong).toMatchObject({ status: 400, message: expect.stringContaining('"nonce"') });
    expect((await r.ok('read', ATTEMPT, undefined)).body.progress).toBe(0);

    await r.ok('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce });
    const twice = await failure(r.call('update', UPDATE, undefined, { key: r.keys[0]?.toString('base64'), nonce }));
    expect(twice).toMatchObject({ status: 400, message: expect.stringContaining('"key"') });
    expect((await r.ok('read', ATTEMPT, undefined)).body.progress).toBe(1);

    for (const bad of [{ nonce }, { key: '', nonce }, { key: 'not a key!', nonce }, { key: 'abcd', nonce }, { key: r.keys[1]?.toString('hex') }]) {
      const refused = await failure(r.call('update', UPDATE, undefined, bad));
      expect(refused.status).toBe(400);
      expect(refused.message).toMatch(/"(key|nonce)"/);
      expectNoSecret(refused.message, secretsOf(r));
    }
  });

  it('resets the progress, not the attempt, when the shares are not this server\'s', async () => {
    const r = await twoOfThree();
    const other = await twoOfThree();
    const started = (await r.ok('update', ATTEMPT, undefined)).body;
    await r.ok('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce: started.nonce });
    const refused = await failure(r.call('update', UPDATE, undefined, { key: other.keys[1]?.toString('hex'), nonce: started.nonce }));
    expect(refused).toMatchObject({ status: 400, message: expect.stringMatching(/"key".*do not reconstruct the root key.*reset/) });
    expectNoSecret(refused.message, [...secretsOf(r), ...secretsOf(other), started.otp]);
    expect((await r.ok('read', ATTEMPT, undefined)).body).toMatchObject({ started: true, nonce: started.nonce, progress: 0 });

    // The same attempt (and OTP) still completes with the right shares.
    await r.ok('update', UPDATE, undefined, { key: r.keys[1]?.toString('hex'), nonce: started.nonce });
    const done = (await r.ok('update', UPDATE, undefined, { key: r.keys[2]?.toString('hex'), nonce: started.nonce })).body;
    expect(await r.works(decodeWithOtp(done.encoded_token, started.otp))).toBe(true);
  });

  it('cancels with DELETE, forgetting the shares given', async () => {
    const r = await twoOfThree();
    const { nonce } = (await r.ok('update', ATTEMPT, undefined)).body;
    await r.ok('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce });
    expect((await r.ok('delete', ATTEMPT, undefined)).status).toBe(204);
    expect((await r.ok('read', ATTEMPT, undefined)).body).toMatchObject({ started: false, progress: 0, nonce: '' });
    expect((await failure(r.call('update', UPDATE, undefined, { key: r.keys[1]?.toString('hex'), nonce }))).status).toBe(400);
    // A new attempt starts from nothing.
    const again = (await r.ok('update', ATTEMPT, undefined)).body;
    expect(again.nonce).not.toBe(nonce);
    expect(again.progress).toBe(0);
  });

  it('takes an OTP of the token\'s length from the caller and refuses any other', async () => {
    const r = await rig();
    const otp = 'A'.repeat(SERVICE_TOKEN_LENGTH);
    for (const bad of ['short', 'A'.repeat(SERVICE_TOKEN_LENGTH - 1) + '!', 'A'.repeat(SERVICE_TOKEN_LENGTH + 1)]) {
      const refused = await failure(r.call('update', ATTEMPT, undefined, { otp: bad }));
      expect(refused).toMatchObject({ status: 400, message: expect.stringContaining('"otp"') });
    }
    const started = (await r.ok('update', ATTEMPT, undefined, { otp })).body;
    expect(started.otp).toBe('');
    const done = (await r.ok('update', UPDATE, undefined, { key: r.key.toString('hex'), nonce: started.nonce })).body;
    expect(await r.works(decodeWithOtp(done.encoded_token, otp))).toBe(true);
  });

  it('encrypts the token to a PGP key and reports its fingerprint', async () => {
    const r = await twoOfThree();
    const { privateKey, publicKey } = await operatorKey();
    const pub = await openpgp.readKey({ binaryKey: publicKey });
    const started = (await r.ok('update', ATTEMPT, undefined, { pgp_key: Buffer.from(publicKey).toString('base64') })).body;
    expect(started).toMatchObject({ started: true, otp: '', pgp_fingerprint: pub.getFingerprint() });
    expect((await r.ok('read', ATTEMPT, undefined)).body.pgp_fingerprint).toBe(pub.getFingerprint());
    await r.ok('update', UPDATE, undefined, { key: r.keys[0]?.toString('hex'), nonce: started.nonce });
    const done = (await r.ok('update', UPDATE, undefined, { key: r.keys[1]?.toString('hex'), nonce: started.nonce })).body;
    expect(done).toMatchObject({ complete: true, pgp_fingerprint: pub.getFingerprint() });

    const message = await openpgp.readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') });
    const { data } = await openpgp.decrypt({ message, decryptionKeys: await openpgp.readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
    const token = Buffer.from(data as Uint8Array).toString('utf8');
    expect(await r.works(token)).toBe(true);
  });

  it('refuses a PGP key it cannot use, and an OTP with a PGP key', async () => {
    const r = await rig();
    const { publicKey } = await operatorKey();
    for (const pgp_key of ['not base64!', Buffer.from('not a key').toString('base64')]) {
      const refused = await failure(r.call('update', ATTEMPT, undefined, { pgp_key }));
      expect(refused).toMatchObject({ status: 400, message: expect.stringContaining('"pgp_key"') });
    }
    const both = await failure(r.call('update', ATTEMPT, undefined, { pgp_key: Buffer.from(publicKey).toString('base64'), otp: 'A'.repeat(SERVICE_TOKEN_LENGTH) }));
    expect(both).toMatchObject({ status: 400, message: expect.stringMatching(/"otp".*"pgp_key"/) });
    expect((await r.ok('read', ATTEMPT, undefined)).body.started).toBe(false);
  });

  it('forgets the attempt when the server seals; a sealed server answers 503', async () => {
    const r = await rig();
    await r.ok('update', ATTEMPT, undefined);
    await r.ok('update', 'sys/seal', r.root);
    expect((await failure(r.call('read', ATTEMPT, undefined))).status).toBe(503);
    await r.core.unseal(r.key);
    expect((await r.ok('read', ATTEMPT, undefined)).body.started).toBe(false);
  });

  it('is refused before init, and in a namespace', async () => {
    expect((await callCore(newCore(), 'read', ATTEMPT, undefined)).status).toBe(503);
    const r = await rig();
    await r.ok('update', 'sys/namespaces/team', r.root);
    const refused = await r.core.handle({ operation: 'update', path: ATTEMPT, data: {}, headers: { 'x-vault-namespace': 'team' } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StrongroomError);
    expect(refused).toMatchObject({ status: 400, message: expect.stringMatching(/root namespace/) });
    expect((await r.ok('read', ATTEMPT, undefined)).body.started).toBe(false);
  });
});

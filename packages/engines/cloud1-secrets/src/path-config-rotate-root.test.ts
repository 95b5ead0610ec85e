import { expectBadRequest, expectFailure } from '@strongroom/core';
import { backendRig, credentialsOf, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('config/rotate-root', () => {
  it('replaces the static key with a new one of the same user and deletes the old one', async () => {
    const r = await backendRig(fixture);
    const old = r.account.engineUser.credentials;
    const rotated = (await r.write('config/rotate-root'))?.data as { access_key: string };
    expect(rotated.access_key).toMatch(/^AKIA/);
    expect(rotated.access_key).not.toBe(old.accessKeyId);
    expect(rotated).not.toHaveProperty('secret_key');
    expect((await r.read('config/root'))?.data?.['access_key']).toBe(rotated.access_key);
    // The old key is gone at the provider, and the new one works for the engine's calls.
    expect(await fixture.refused(old)).toBe('InvalidClientTokenId');
    await r.write('roles/s', { credential_type: 'session_token' });
    const creds = credentialsOf((await r.read('creds/s'))?.data);
    expect(await fixture.whoAmI(creds)).toMatch(/:user\/strongroom$/);
  });

  it('is refused while the user has a second key, and without static credentials', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createAccessKey(r.account.accountId, 'strongroom');
    const err = await expectFailure(r.write('config/rotate-root'), 400);
    expect(err.message).toMatch(/has another access key/);
    expect((await r.read('config/root'))?.data?.['access_key']).toBe(r.account.engineUser.credentials.accessKeyId);
    await r.write('config/root', { iam_endpoint: fixture.endpoints.api });
    await expectBadRequest(r.write('config/rotate-root'), 'access_key');
  });
});

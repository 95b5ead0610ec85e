import { expectFailure } from '@strongroom/core';
import { backendRig, credentialsOf, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('static-creds', () => {
  it('answers the current key and when it will be replaced, without a lease', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'app' });
    await r.write('static-roles/app', { username: 'app', rotation_period: '2h' });
    const resp = await r.read('static-creds/app');
    expect(resp?.data).toEqual({
      access_key: expect.stringMatching(/^AKIA/), secret_key: expect.any(String), expiration: new Date(r.clock.now() + 7200_000).toISOString(),
    });
    expect(resp?.secret).toBeUndefined();
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toBe(`arn:aws:iam::${r.account.accountId}:user/app`);
  });

  it('answers 404 for an unknown static role and refuses writes', async () => {
    const r = await backendRig(fixture);
    expect(await r.read('static-creds/nope')).toBeNull();
    await expectFailure(r.write('static-creds/nope', {}), 405);
  });
});

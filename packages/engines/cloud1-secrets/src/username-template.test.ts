import { expectBadRequest, expectFailure, FakeClock } from '@strongroom/core';
import {
  checkUsernameTemplate, DEFAULT_USERNAME_TEMPLATE, generateUsername, sanitizeName, UsernameTooLongError,
} from './username-template';

const clock = new FakeClock(Date.UTC(2026, 2, 4, 5, 6, 7, 89));

describe('generated usernames', () => {
  it('follow the default template: display and role names for IAM, a short name for STS', () => {
    const iam = generateUsername('', 'IAM', 'token-abc', 'web', clock);
    expect(iam).toMatch(new RegExp(`^vault-token-abc-web-${Math.floor(clock.now() / 1000)}-[A-Za-z0-9]{20}$`));
    const sts = generateUsername(DEFAULT_USERNAME_TEMPLATE, 'STS', 'token-abc', 'web', clock);
    expect(sts).toHaveLength(32);
    expect(sts).toMatch(/^vault-\d{10}-[A-Za-z0-9]{15}$/);
    // A long display name is cut so the IAM name stays within 64 characters.
    expect(generateUsername('', 'IAM', 'd'.repeat(80), 'r'.repeat(80), clock).length).toBeLessThanOrEqual(64);
  });

  it('replace characters IAM refuses in display and role names', () => {
    expect(sanitizeName('userpass-bob/x y:z')).toBe('userpass-bob_x_y_z');
    expect(generateUsername('{{ .DisplayName }}', 'IAM', 'a b', 'r', clock)).toBe('a_b');
  });

  it('over the limit are a 500 naming the limit', async () => {
    const iam = await expectFailure(Promise.resolve().then(() => generateUsername('{{ random 65 }}', 'IAM', 'd', 'p', clock)), 500);
    expect(iam).toBeInstanceOf(UsernameTooLongError);
    expect(iam.message).toMatch(/IAM username limit of 64 characters/);
    const sts = await expectFailure(Promise.resolve().then(() => generateUsername('{{ random 33 }}', 'STS', 'd', 'p', clock)), 500);
    expect(sts.message).toMatch(/STS username limit of 32 characters/);
    expect(generateUsername('{{ random 32 }}', 'STS', 'd', 'p', clock)).toHaveLength(32);
  });

  it('are checked at configuration for both types', async () => {
    await expectBadRequest(Promise.resolve().then(() => checkUsernameTemplate('{{ .Role }}', clock)), 'username_template');
    await expectBadRequest(Promise.resolve().then(() => checkUsernameTemplate('{{ if eq .Type "STS" }}{{ truncate -1 "x" }}{{ end }}', clock)), 'username_template');
    expect(() => checkUsernameTemplate(DEFAULT_USERNAME_TEMPLATE, clock)).not.toThrow();
  });
});

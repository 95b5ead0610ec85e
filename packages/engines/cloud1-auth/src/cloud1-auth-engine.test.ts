import { Backend, FakeClock, silentLogger } from '@strongroom/core';
import { cloud1AuthEngine } from './index';

describe('cloud1AuthEngine', () => {
  it('is an auth method of type cloud1 whose backend is a Backend', () => {
    expect(cloud1AuthEngine).toMatchObject({ type: 'cloud1', kind: 'auth' });
    const backend = cloud1AuthEngine.create({ clock: new FakeClock(), logger: silentLogger });
    expect(backend).toBeInstanceOf(Backend);
    expect(backend.type).toBe('cloud1');
  });

  it('serves every endpoint of the spec, the deprecated names included, and login without a token', () => {
    const backend = cloud1AuthEngine.create({ clock: new FakeClock(), logger: silentLogger });
    const paths = [
      'config/client', 'config/rotate-root', 'config/identity', 'config/certificate/x', 'config/certificates', 'config/sts/123456789012',
      'config/sts', 'config/tidy/identity-accesslist', 'config/tidy/roletag-denylist', 'config/tidy/identity-whitelist',
      'config/tidy/roletag-blacklist', 'role/web', 'roles', 'role/web/tag', 'login', 'roletag-denylist/v1:x', 'roletag-denylist',
      'roletag-blacklist/abc', 'tidy/roletag-denylist', 'tidy/roletag-blacklist', 'identity-accesslist/i-1', 'identity-accesslist',
      'identity-whitelist/i-1', 'tidy/identity-accesslist', 'tidy/identity-whitelist',
    ];
    for (const p of paths) expect([p, backend.match(p) !== null]).toEqual([p, true]);
    const login = backend.match('login');
    expect(login && backend.isUnauthenticated(login, 'update')).toBe(true);
    const role = backend.match('role/web');
    expect(role && backend.isUnauthenticated(role, 'update')).toBe(false);
  });

  it('keeps the instance access list, which every VM login writes, local to each cluster', () => {
    const backend = cloud1AuthEngine.create({ clock: new FakeClock(), logger: silentLogger });
    expect(backend.localStorage).toEqual(['accesslist/identity/']);
  });
});

import { ForwardingAuth } from './forwarding-auth';

describe('ForwardingAuth', () => {
  const key = Buffer.alloc(32, 7);
  let now = 1_000_000;
  const auth = new ForwardingAuth(key, () => now);

  it('vouches for the client address it signed, for that method and URL only', () => {
    const header = auth.sign('10.1.2.3', 'GET', '/v1/secret/data/a');
    expect(auth.verify(header, 'GET', '/v1/secret/data/a')).toBe('10.1.2.3');
    expect(auth.verify(header, 'POST', '/v1/secret/data/a')).toBeNull();
    expect(auth.verify(header, 'GET', '/v1/secret/data/b')).toBeNull();
  });

  it('refuses a header signed with another key, edited, or too old', () => {
    const header = auth.sign('10.1.2.3', 'GET', '/v1/x');
    expect(new ForwardingAuth(Buffer.alloc(32, 8), () => now).verify(header, 'GET', '/v1/x')).toBeNull();
    expect(auth.verify(header.replace('10.1.2.3', '10.9.9.9'), 'GET', '/v1/x')).toBeNull();
    expect(auth.verify('garbage', 'GET', '/v1/x')).toBeNull();
    expect(auth.verify(`${header};extra`, 'GET', '/v1/x')).toBeNull();
    now += 61_000;
    expect(auth.verify(header, 'GET', '/v1/x')).toBeNull();
  });
});

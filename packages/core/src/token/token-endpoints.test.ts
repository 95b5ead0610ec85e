/**
 * The `auth/token/` endpoints driven through `Core.handle`, as a Vault client would reach them:
 * create (and its rules), lookup, renew and revoke in all their forms, batch tokens, bound CIDRs
 * and use limits. Time only moves when a test advances the FakeClock.
 */
import { START, failure, rig, type Rig } from '../testing/core-rig';

const HOUR = 3600;
const DAY = 24 * HOUR;
const SYSTEM_MAX = 32 * DAY;

/** A policy that may create child tokens (and read policies, to have something to use). */
const CREATOR = `
path "auth/token/create" { capabilities = ["update"] }
path "auth/token/create-orphan" { capabilities = ["update"] }
path "sys/policy/*" { capabilities = ["read"] }
`;
const CREATOR_SUDO = `
path "auth/token/create" { capabilities = ["update", "sudo"] }
`;

function expireTimeAfter(seconds: number, from = START): string {
  return new Date(from + seconds * 1000).toISOString();
}

describe('auth/token/create: policies', () => {
  it('gives a child of a root token the root policy, without default', async () => {
    const r = await rig();
    const auth = await r.token(r.root);
    expect(auth.policies).toEqual(['root']);
    expect(auth.token_policies).toEqual(['root']);
  });

  it("defaults a child's policies to its parent's, plus default", async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    await r.policy('reader', 'path "secret/*" { capabilities = ["read"] }');
    const parent = await r.token(r.root, { policies: ['creator', 'reader'] });
    expect(parent.policies).toEqual(['creator', 'default', 'reader']);
    const child = await r.token(parent.client_token);
    expect(child.policies).toEqual(['creator', 'default', 'reader']);
  });

  it('leaves default out with no_default_policy', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: 'reader', no_default_policy: true });
    expect(auth.policies).toEqual(['reader']);
  });

  it('keeps the root policy alone when asked for root together with default', async () => {
    const r = await rig();
    expect((await r.token(r.root, { policies: ['root'] })).policies).toEqual(['root']);
    expect((await r.token(r.root, { policies: ['root', 'default'] })).policies).toEqual(['root']);
  });

  it('reduces a policy list holding root to just root', async () => {
    const r = await rig();
    expect((await r.token(r.root, { policies: ['reader', 'root'] })).policies).toEqual(['root']);
  });

  it('forbids a non-root parent to grant a policy it does not hold', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'] });
    const reply = await r.call('update', 'auth/token/create', parent.client_token, { policies: ['writer'] });
    expect(reply.status).toBe(403);
    expect(reply.body.errors[0]).toContain('writer');
    expect((await r.call('update', 'auth/token/create', parent.client_token, { policies: ['root'] })).status).toBe(403);
  });

  it('lets a non-root parent grant default, or a subset of its own policies', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator', 'reader'] });
    expect((await r.token(parent.client_token, { policies: ['default'] })).policies).toEqual(['default']);
    expect((await r.token(parent.client_token, { policies: 'reader' })).policies).toEqual(['default', 'reader']);
  });

  it('lets a parent with sudo on the create path grant any policy except root', async () => {
    const r = await rig();
    await r.policy('admin', CREATOR_SUDO);
    const parent = await r.token(r.root, { policies: ['admin'] });
    expect((await r.token(parent.client_token, { policies: ['writer'] })).policies).toEqual(['default', 'writer']);
    expect((await r.call('update', 'auth/token/create', parent.client_token, { policies: ['root'] })).status).toBe(403);
  });
});

describe('auth/token/create: TTLs', () => {
  it('gives a token the mount default TTL (32 days) when none is asked for', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'] });
    expect(auth.lease_duration).toBe(SYSTEM_MAX);
    expect(auth.renewable).toBe(true);
  });

  it('gives a root child without a TTL no expiry and no renewability', async () => {
    const r = await rig();
    const auth = await r.token(r.root);
    expect(auth.lease_duration).toBe(0);
    expect(auth.renewable).toBe(false);
    await r.clock.advance(100 * DAY * 1000);
    expect(await r.works(auth.client_token)).toBe(true);
  });

  it('honours a requested ttl, as seconds or as a duration string', async () => {
    const r = await rig();
    expect((await r.token(r.root, { policies: ['reader'], ttl: '1h30m' })).lease_duration).toBe(5400);
    expect((await r.token(r.root, { policies: ['reader'], ttl: 90 })).lease_duration).toBe(90);
    expect((await r.token(r.root, { policies: ['reader'], lease: '2m' })).lease_duration).toBe(120);
  });

  it('caps a ttl above the mount maximum, with a warning', async () => {
    const r = await rig();
    const reply = await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], ttl: '800h' });
    expect(reply.body.auth.lease_duration).toBe(SYSTEM_MAX);
    expect(reply.body.warnings).toEqual([expect.stringContaining('capped')]);
  });

  it('caps a ttl above a tuned mount maximum, with a warning', async () => {
    const r = await rig();
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '1h', max_lease_ttl: '2h' });
    const reply = await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], ttl: '3h' });
    expect(reply.body.auth.lease_duration).toBe(2 * HOUR);
    expect(reply.body.warnings).toHaveLength(1);
    expect((await r.token(r.root, { policies: ['reader'] })).lease_duration).toBe(HOUR);
  });

  it('caps the ttl at explicit_max_ttl', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '2h', explicit_max_ttl: '1h' });
    expect(auth.lease_duration).toBe(HOUR);
    const lookup = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    expect(lookup.body.data.explicit_max_ttl).toBe(HOUR);
    expect(lookup.body.data.creation_ttl).toBe(HOUR);
  });

  it('gives a root token with only an explicit_max_ttl that TTL', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { explicit_max_ttl: '1h' });
    expect(auth.policies).toEqual(['root']);
    expect(auth.lease_duration).toBe(HOUR);
  });

  it('makes a periodic token live for its period, ignoring ttl', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], period: '30m', ttl: '5h' });
    expect(auth.lease_duration).toBe(1800);
    const lookup = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    expect(lookup.body.data.period).toBe(1800);
  });

  it('caps a period above the mount maximum, with a warning', async () => {
    const r = await rig();
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '1h', max_lease_ttl: '1h' });
    const reply = await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], period: '2h' });
    expect(reply.body.auth.lease_duration).toBe(HOUR);
    expect(reply.body.warnings).toEqual([expect.stringContaining('capped')]);
  });

  it('requires root or sudo for a periodic token', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    await r.policy('admin', CREATOR_SUDO);
    const plain = await r.token(r.root, { policies: ['creator'] });
    const reply = await r.call('update', 'auth/token/create', plain.client_token, { period: '1h' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatch(/root or sudo/);
    const sudo = await r.token(r.root, { policies: ['admin'] });
    expect((await r.token(sudo.client_token, { period: '1h' })).lease_duration).toBe(HOUR);
  });

  it.each(['ttl', 'explicit_max_ttl', 'period', 'lease'])('rejects a bad duration in %s with a 400 naming the field', async (field) => {
    const r = await rig();
    const reply = await r.call('update', 'auth/token/create', r.root, { [field]: 'soon' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain(`"${field}"`);
  });

  it('rejects a negative duration', async () => {
    const r = await rig();
    expect((await r.call('update', 'auth/token/create', r.root, { ttl: -5 })).status).toBe(400);
  });
});

describe('auth/token/create: other fields', () => {
  it('rejects a negative num_uses with a 400', async () => {
    const r = await rig();
    const reply = await r.call('update', 'auth/token/create', r.root, { num_uses: -1 });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('num_uses');
  });

  it('prefixes the display name with token-, and names an unnamed token "token"', async () => {
    const r = await rig();
    const named = await r.token(r.root, { display_name: 'ci runner' });
    const lookup = await r.ok('update', 'auth/token/lookup', r.root, { token: named.client_token });
    expect(lookup.body.data.display_name).toBe('token-ci-runner');
    const unnamed = await r.token(r.root);
    expect((await r.ok('update', 'auth/token/lookup', r.root, { token: unnamed.client_token })).body.data.display_name).toBe('token');
  });

  it('round-trips meta in the create reply and in lookups', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { meta: { team: 'payments', env: 'prod' } });
    expect(auth.metadata).toEqual({ team: 'payments', env: 'prod' });
    const lookup = await r.ok('read', 'auth/token/lookup-self', auth.client_token);
    expect(lookup.body.data.meta).toEqual({ team: 'payments', env: 'prod' });
    expect((await r.call('update', 'auth/token/create', r.root, { meta: { n: 1 } })).status).toBe(400);
  });

  it('lets a root parent choose the token ID, which then authenticates', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { id: 'my-chosen-token', policies: ['reader'] });
    expect(auth.client_token).toBe('my-chosen-token');
    expect(await r.works('my-chosen-token')).toBe(true);
  });

  it('refuses a chosen ID from a non-root parent, even with sudo', async () => {
    const r = await rig();
    await r.policy('admin', CREATOR_SUDO);
    const parent = await r.token(r.root, { policies: ['admin'] });
    const reply = await r.call('update', 'auth/token/create', parent.client_token, { id: 'mine' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('"id"');
  });

  it('refuses a chosen ID that is already a token, leaving that token untouched', async () => {
    const r = await rig();
    const first = await r.token(r.root, { id: 'dup-token', policies: ['reader'], meta: { n: '1' } });
    const reply = await r.call('update', 'auth/token/create', r.root, { id: 'dup-token', policies: ['other'] });
    expect(reply.status).toBe(400);
    const lookup = await r.ok('read', 'auth/token/lookup-self', 'dup-token');
    expect(lookup.body.data.policies).toEqual(['default', 'reader']);
    expect(lookup.body.data.accessor).toBe(first.accessor);
    expect((await r.call('update', 'auth/token/create', r.root, { id: r.root })).status).toBe(400);
  });

  it('refuses a chosen ID with the batch token prefix', async () => {
    const r = await rig();
    expect((await r.call('update', 'auth/token/create', r.root, { id: 'hvb.mine' })).status).toBe(400);
  });

  it.each([
    ['a number too large for a double', JSON.parse('1e400') as unknown, /"id": must be a string/],
    ['a boolean', true, /"id": must be a string/],
    ['a number', 42, /"id": must be a string/],
    ['a relative path', '../../x', /"id"/],
    ['a dot', 'my.token', /"id": a custom token ID must not contain "\."/],
    ['a NUL byte', 'a\u0000b', /"id": must not contain NUL/],
    ['a lone surrogate', '\ud800', /"id".*(must be valid Unicode|lone surrogate)/],
    ['an over-long value', 'x'.repeat(300), /"id": 300 bytes is longer/],
  ])('refuses a chosen ID that is %s, and creates nothing', async (_what, id, message) => {
    const r = await rig();
    const err = await failure(r.call('update', 'auth/token/create', r.root, { id }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(message);
    for (const tried of ['Infinity', 'true', '42', '../../x', 'my.token']) expect(await r.works(tried)).toBe(false);
  });

  it('makes orphans with create-orphan, even for a parent without sudo', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'] });
    const orphan = (await r.ok('update', 'auth/token/create-orphan', parent.client_token, {})).body.auth;
    expect(orphan.orphan).toBe(true);
    const lookup = await r.ok('read', 'auth/token/lookup-self', orphan.client_token);
    expect(lookup.body.data.orphan).toBe(true);
    expect(lookup.body.data.path).toBe('auth/token/create-orphan');
    await r.ok('update', 'auth/token/revoke', r.root, { token: parent.client_token });
    expect(await r.works(orphan.client_token)).toBe(true);
  });

  it('requires root or sudo for no_parent', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    await r.policy('admin', CREATOR_SUDO);
    const plain = await r.token(r.root, { policies: ['creator'] });
    const reply = await r.call('update', 'auth/token/create', plain.client_token, { no_parent: true });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('no_parent');
    expect((await r.token(r.root, { no_parent: true })).orphan).toBe(true);
    const sudo = await r.token(r.root, { policies: ['admin'] });
    expect((await r.token(sudo.client_token, { no_parent: true })).orphan).toBe(true);
    expect((await r.token(sudo.client_token)).orphan).toBe(false);
  });

  it('warns about fields it does not know, and still creates the token', async () => {
    const r = await rig();
    const reply = await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], colour: 'blue' });
    expect(reply.body.auth.client_token).toMatch(/^hvs\./);
    expect(reply.body.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [colour]']);
  });

  it('refuses token roles, which are not supported', async () => {
    const r = await rig();
    expect((await r.call('update', 'auth/token/create', r.root, { role_name: 'ops' })).status).toBe(400);
  });

  it('answers with the full auth block of a service token', async () => {
    const r = await rig();
    const reply = await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], ttl: '1h', num_uses: 3 });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toBeNull();
    expect(reply.body.auth).toEqual({
      client_token: expect.stringMatching(/^hvs\.[0-9A-Za-z]{24}$/),
      accessor: expect.stringMatching(/^[0-9A-Za-z]{24}$/),
      policies: ['default', 'reader'],
      token_policies: ['default', 'reader'],
      metadata: null,
      lease_duration: HOUR,
      renewable: true,
      entity_id: '',
      token_type: 'service',
      orphan: false,
      mfa_requirement: null,
      num_uses: 3,
    });
  });
});

describe('batch tokens', () => {
  it('are prefixed hvb., have no accessor, are not renewable, and look themselves up', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { type: 'batch', policies: ['reader'], ttl: '1h' });
    expect(auth.client_token).toMatch(/^hvb\./);
    expect(auth.accessor).toBe('');
    expect(auth.renewable).toBe(false);
    expect(auth.token_type).toBe('batch');
    const lookup = await r.ok('read', 'auth/token/lookup-self', auth.client_token);
    expect(lookup.body.data).toMatchObject({ type: 'batch', accessor: '', renewable: false, policies: ['default', 'reader'], ttl: HOUR, orphan: false });
  });

  it('cannot create tokens', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const batch = await r.token(r.root, { type: 'batch', policies: ['creator'] });
    const reply = await r.call('update', 'auth/token/create', batch.client_token, { policies: ['creator'] });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatch(/batch/);
  });

  it('cannot be renewed or revoked', async () => {
    const r = await rig();
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'], ttl: '1h' });
    expect((await r.call('update', 'auth/token/renew-self', batch.client_token, {})).status).toBe(400);
    expect((await r.call('update', 'auth/token/renew', r.root, { token: batch.client_token })).status).toBe(400);
    expect((await r.call('update', 'auth/token/revoke-self', batch.client_token, {})).status).toBe(400);
    expect((await r.call('update', 'auth/token/revoke', r.root, { token: batch.client_token })).status).toBe(400);
    expect((await r.call('update', 'auth/token/revoke-orphan', r.root, { token: batch.client_token })).status).toBe(400);
    expect(await r.works(batch.client_token)).toBe(true);
  });

  it('stop working at their expiry', async () => {
    const r = await rig();
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'], ttl: '10s' });
    await r.clock.advance(9999);
    expect(await r.works(batch.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(batch.client_token)).toBe(false);
  });

  it('die when their parent is revoked', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'] });
    const batch = (await r.ok('update', 'auth/token/create', parent.client_token, { type: 'batch' })).body.auth;
    expect(await r.works(batch.client_token)).toBe(true);
    await r.ok('update', 'auth/token/revoke', r.root, { token: parent.client_token });
    expect(await r.works(batch.client_token)).toBe(false);
  });

  it('refuse a period, a use limit, a chosen ID and the root policy', async () => {
    const r = await rig();
    const attempts: Record<string, unknown>[] = [
      { period: '1h', policies: ['reader'] },
      { num_uses: 2, policies: ['reader'] },
      { id: 'custom', policies: ['reader'] },
      { policies: ['root'] },
      {}, // inherits root from the root parent
    ];
    for (const data of attempts) {
      const reply = await r.call('update', 'auth/token/create', r.root, { type: 'batch', ...data });
      expect([reply.status, data]).toEqual([400, data]);
    }
  });

  it('accept the type spellings default-batch and default-service', async () => {
    const r = await rig();
    expect((await r.token(r.root, { type: 'default-batch', policies: ['reader'] })).client_token).toMatch(/^hvb\./);
    expect((await r.token(r.root, { type: 'default-service', policies: ['reader'] })).client_token).toMatch(/^hvs\./);
    expect((await r.call('update', 'auth/token/create', r.root, { type: 'weird' })).status).toBe(400);
  });

  it('cannot be forged or altered', async () => {
    const r = await rig();
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'] });
    const id: string = batch.client_token;
    // The character before the last (the last may carry padding bits only), always changed.
    const flipped = id.slice(0, -2) + (id.at(-2) === 'A' ? 'B' : 'A') + id.slice(-1);
    expect(flipped).not.toBe(id);
    expect(await r.works(flipped)).toBe(false);
    expect(await r.works('hvb.not-a-token')).toBe(false);
  });
});

describe('bound CIDRs', () => {
  it('let the token work only from an allowed address', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], bound_cidrs: ['10.0.0.0/8', '192.168.1.7'] });
    expect(await r.works(auth.client_token, '10.20.30.40')).toBe(true);
    expect(await r.works(auth.client_token, '::ffff:10.1.1.1')).toBe(true);
    expect(await r.works(auth.client_token, '192.168.1.7')).toBe(true);
    expect(await r.works(auth.client_token, '192.168.1.8')).toBe(false);
    expect(await r.works(auth.client_token, '11.0.0.1')).toBe(false);
    expect(await r.works(auth.client_token)).toBe(false);
    const lookup = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    expect(lookup.body.data.bound_cidrs).toEqual(['10.0.0.0/8', '192.168.1.7/32']);
  });

  it('accept IPv6 blocks and the token_bound_cidrs spelling', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], token_bound_cidrs: '2001:db8::/32' });
    expect(await r.works(auth.client_token, '2001:db8::1')).toBe(true);
    expect(await r.works(auth.client_token, '2001:db9::1')).toBe(false);
    expect(await r.works(auth.client_token, '10.0.0.1')).toBe(false);
  });

  it.each(['10.0.0.0/33', 'not-an-ip', '10.0.0.0/8/1', '300.1.1.1', '10.0.0.0/x'])('reject %s with a 400', async (cidr) => {
    const r = await rig();
    const reply = await r.call('update', 'auth/token/create', r.root, { bound_cidrs: [cidr] });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('bound_cidrs');
  });
});

describe('lookups', () => {
  const KEYS = [
    'accessor', 'creation_time', 'creation_ttl', 'display_name', 'entity_id', 'expire_time', 'explicit_max_ttl', 'id', 'identity_policies',
    'issue_time', 'meta', 'namespace_path', 'num_uses', 'orphan', 'path', 'policies', 'renewable', 'ttl', 'type',
  ];

  it('describe a token exactly, with a ttl that counts down with the clock', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'] });
    const auth = await r.token(parent.client_token, { ttl: '1h', display_name: 'app', num_uses: 5, explicit_max_ttl: '2h' });
    await r.clock.advance(10_000);
    const reply = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    expect(Object.keys(reply.body.data).sort()).toEqual(KEYS);
    expect(reply.body.data).toEqual({
      accessor: auth.accessor,
      creation_time: START / 1000,
      creation_ttl: HOUR,
      display_name: 'token-app',
      entity_id: '',
      expire_time: expireTimeAfter(HOUR),
      explicit_max_ttl: 2 * HOUR,
      id: auth.client_token,
      identity_policies: [],
      issue_time: new Date(START).toISOString(),
      meta: null,
      namespace_path: '',
      num_uses: 5,
      orphan: false,
      path: 'auth/token/create',
      policies: ['creator', 'default'],
      renewable: true,
      ttl: HOUR - 10,
      type: 'service',
    });
    expect(reply.body.data.expire_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    await r.clock.advance(HOUR * 1000 - 20_000);
    expect((await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token })).body.data.ttl).toBe(10);
  });

  it('describe the root token as never expiring', async () => {
    const r = await rig();
    const reply = await r.ok('read', 'auth/token/lookup-self', r.root);
    expect(reply.body.data).toMatchObject({
      id: r.root, creation_ttl: 0, expire_time: null, explicit_max_ttl: 0, ttl: 0, num_uses: 0, orphan: true,
      path: 'auth/token/root', policies: ['root'], display_name: 'root', renewable: false, type: 'service',
    });
    expect(reply.body.data).not.toHaveProperty('period');
  });

  it('show the period of a periodic token', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], period: '1h' });
    const data = (await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data;
    expect(Object.keys(data).sort()).toEqual([...KEYS, 'period'].sort());
    expect(data).toMatchObject({ period: HOUR, ttl: HOUR, creation_ttl: HOUR, expire_time: expireTimeAfter(HOUR) });
  });

  it('lookup-self answers both GET and POST, with the caller as the token', async () => {
    const r = await rig();
    const viaGet = await r.ok('read', 'auth/token/lookup-self', r.root);
    const viaPost = await r.ok('update', 'auth/token/lookup-self', r.root, {});
    expect(viaPost.body.data).toEqual(viaGet.body.data);
    expect(viaGet.body.data.id).toBe(r.root);
  });

  it('lookup-self works for a token holding only the default policy', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'] });
    const data = (await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data;
    expect(data.id).toBe(auth.client_token);
    expect(data.policies).toEqual(['default']);
  });

  it('lookup-accessor answers the same data with a blank id', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h', meta: { a: 'b' } });
    const byToken = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    const byAccessor = await r.ok('update', 'auth/token/lookup-accessor', r.root, { accessor: auth.accessor });
    expect(byAccessor.body.data).toEqual({ ...byToken.body.data, id: '' });
  });

  it('LIST accessors names the accessors of the valid tokens of the namespace, and needs sudo', async () => {
    const r = await rig();
    await r.token(r.root, { ttl: '1m' });
    const revoked = await r.token(r.root, {});
    await r.ok('update', 'auth/token/revoke-accessor', r.root, { accessor: revoked.accessor });
    const kept = await r.token(r.root, { policies: ['reader'] });
    const root = (await r.ok('read', 'auth/token/lookup-self', r.root)).body.data.accessor as string;
    await r.ok('update', 'sys/namespaces/team', r.root);
    const inTeam = (await r.ok('update', 'team/auth/token/create', r.root)).body.auth;
    await r.clock.advance(2 * 60 * 1000);

    expect((await r.ok('list', 'auth/token/accessors', r.root)).body.data.keys).toEqual([kept.accessor, root].sort());
    expect((await r.ok('list', 'team/auth/token/accessors', r.root)).body.data.keys).toEqual([inTeam.accessor]);

    await r.policy('lister', 'path "auth/token/accessors" { capabilities = ["list"] }');
    const lister = await r.token(r.root, { policies: ['lister'] });
    expect((await r.call('list', 'auth/token/accessors', lister.client_token)).status).toBe(403);
    await r.policy('lister', 'path "auth/token/accessors" { capabilities = ["list", "sudo"] }');
    expect((await r.call('list', 'auth/token/accessors', lister.client_token)).status).toBe(200);
  });

  it('answers 400 for a missing or unknown token or accessor', async () => {
    const r = await rig();
    expect((await r.call('update', 'auth/token/lookup', r.root, {})).status).toBe(400);
    expect((await r.call('update', 'auth/token/lookup', r.root, { token: 'hvs.nope' })).status).toBe(400);
    expect((await r.call('update', 'auth/token/lookup-accessor', r.root, {})).status).toBe(400);
    expect((await r.call('update', 'auth/token/lookup-accessor', r.root, { accessor: 'nope' })).status).toBe(400);
  });

  it('need a token: without one, or with a bad one, lookup-self is 403', async () => {
    const r = await rig();
    expect((await r.call('read', 'auth/token/lookup-self', undefined)).status).toBe(403);
    expect((await r.call('read', 'auth/token/lookup-self', 'hvs.bogus')).status).toBe(403);
  });

  it('of another token need a policy granting the lookup path', async () => {
    const r = await rig();
    const plain = await r.token(r.root, { policies: ['default'] });
    const other = await r.token(r.root, { policies: ['reader'] });
    expect((await r.call('update', 'auth/token/lookup', plain.client_token, { token: other.client_token })).status).toBe(403);
    expect((await r.call('update', 'auth/token/lookup-accessor', plain.client_token, { accessor: other.accessor })).status).toBe(403);
  });
});

describe('renewal', () => {
  it('extends a token by the increment asked for', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    await r.clock.advance(30 * 60 * 1000);
    const reply = await r.ok('update', 'auth/token/renew-self', auth.client_token, { increment: '2h' });
    expect(reply.body.auth.lease_duration).toBe(2 * HOUR);
    expect(reply.body.auth.client_token).toBe(auth.client_token);
    expect(reply.body.warnings).toBeNull();
    const data = (await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data;
    expect(data.ttl).toBe(2 * HOUR);
    expect(data.expire_time).toBe(expireTimeAfter(2 * HOUR, START + 30 * 60 * 1000));
    expect(data.creation_ttl).toBe(HOUR);
    expect(data.last_renewal_time).toBe((START + 30 * 60 * 1000) / 1000);
    await r.clock.advance(2 * HOUR * 1000 - 1);
    expect(await r.works(auth.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(auth.client_token)).toBe(false);
  });

  it('renews by the original TTL when no increment is given', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    await r.clock.advance(50 * 60 * 1000);
    expect((await r.ok('update', 'auth/token/renew-self', auth.client_token, {})).body.auth.lease_duration).toBe(HOUR);
  });

  it('never goes past the explicit max TTL, counted from creation, and warns', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h', explicit_max_ttl: '2h' });
    await r.clock.advance(30 * 60 * 1000);
    const reply = await r.ok('update', 'auth/token/renew-self', auth.client_token, { increment: '3h' });
    expect(reply.body.auth.lease_duration).toBe(90 * 60);
    expect(reply.body.warnings).toHaveLength(1);
    await r.clock.advance(90 * 60 * 1000);
    expect(await r.works(auth.client_token)).toBe(false);
  });

  it('never goes past the mount maximum, counted from creation', async () => {
    const r = await rig();
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '1h', max_lease_ttl: '2h' });
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    await r.clock.advance(30 * 60 * 1000);
    const reply = await r.ok('update', 'auth/token/renew-self', auth.client_token, { increment: '3h' });
    expect(reply.body.auth.lease_duration).toBe(90 * 60);
    expect(reply.body.warnings).toHaveLength(1);
  });

  it('renews a periodic token to its period, whatever the increment, beyond the mount maximum', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], period: '1h' });
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '2h', max_lease_ttl: '2h' });
    for (let i = 0; i < 5; i++) {
      await r.clock.advance(40 * 60 * 1000);
      const reply = await r.ok('update', 'auth/token/renew-self', auth.client_token, { increment: '10h' });
      expect(reply.body.auth.lease_duration).toBe(HOUR);
    }
    expect(await r.works(auth.client_token)).toBe(true);
  });

  it('caps a periodic token by its explicit max TTL', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], period: '1h', explicit_max_ttl: '90m' });
    await r.clock.advance(45 * 60 * 1000);
    const reply = await r.ok('update', 'auth/token/renew-self', auth.client_token, {});
    expect(reply.body.auth.lease_duration).toBe(45 * 60);
  });

  it('refuses a non-renewable token with a 400', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h', renewable: false });
    expect(auth.renewable).toBe(false);
    const reply = await r.call('update', 'auth/token/renew-self', auth.client_token, {});
    expect(reply.status).toBe(400);
    expect((await r.call('update', 'auth/token/renew', r.root, { token: auth.client_token })).status).toBe(400);
  });

  it('renews a root token without a TTL to a lease of 0', async () => {
    const r = await rig();
    const reply = await r.ok('update', 'auth/token/renew-self', r.root, {});
    expect(reply.status).toBe(200);
    expect(reply.body.auth.lease_duration).toBe(0);
    expect(reply.body.auth.renewable).toBe(false);
  });

  it('renews another token by ID, and by accessor without revealing the ID', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    await r.clock.advance(10 * 60 * 1000);
    const byId = await r.ok('update', 'auth/token/renew', r.root, { token: auth.client_token, increment: 1800 });
    expect(byId.body.auth).toMatchObject({ client_token: auth.client_token, lease_duration: 1800, accessor: auth.accessor });
    const byAccessor = await r.ok('update', 'auth/token/renew-accessor', r.root, { accessor: auth.accessor, increment: '45m' });
    expect(byAccessor.body.auth).toMatchObject({ client_token: '', lease_duration: 45 * 60, accessor: auth.accessor });
    expect((await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data.ttl).toBe(45 * 60);
  });

  it('cannot bring back an expired token', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1m' });
    await r.clock.advance(60_000);
    expect((await r.call('update', 'auth/token/renew', r.root, { token: auth.client_token })).status).toBe(400);
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token, {})).status).toBe(403);
  });
});

describe('revocation', () => {
  /** root → a → b → c, each able to create the next. */
  async function family(r: Rig) {
    await r.policy('creator', CREATOR);
    const a = await r.token(r.root, { policies: ['creator'] });
    const b = await r.token(a.client_token);
    const c = await r.token(b.client_token);
    const sibling = await r.token(r.root, { policies: ['creator'] });
    return { a, b, c, sibling };
  }

  it.each([
    ['revoke', (r: Rig, t: { client_token: string }) => r.ok('update', 'auth/token/revoke', r.root, { token: t.client_token })],
    ['revoke-self', (r: Rig, t: { client_token: string }) => r.ok('update', 'auth/token/revoke-self', t.client_token, {})],
    ['revoke-accessor', (r: Rig, t: { accessor: string }) => r.ok('update', 'auth/token/revoke-accessor', r.root, { accessor: t.accessor })],
  ])('%s ends the token and every descendant', async (_name, revoke) => {
    const r = await rig();
    const { a, b, c, sibling } = await family(r);
    const reply = await revoke(r, a);
    expect(reply.status).toBe(204);
    for (const t of [a, b, c]) expect(await r.works(t.client_token)).toBe(false);
    for (const t of [a, b, c]) {
      expect((await r.call('update', 'auth/token/lookup-accessor', r.root, { accessor: t.accessor })).status).toBe(400);
    }
    expect(await r.works(sibling.client_token)).toBe(true);
    expect(await r.works(r.root)).toBe(true);
    // Only the root token and the sibling (the root's one child left) remain in storage.
    const rootHash = r.core.tokens.hash(r.root);
    const siblingHash = r.core.tokens.hash(sibling.client_token);
    expect((await r.core.barrier.list('sys/token/id/')).sort()).toEqual([rootHash, siblingHash].sort());
    expect(await r.core.barrier.list('sys/token/accessor/')).toHaveLength(2);
    expect(await r.core.barrier.list('sys/token/parent/')).toEqual([`${rootHash}/`]);
    expect(await r.core.barrier.list(`sys/token/parent/${rootHash}/`)).toEqual([siblingHash]);
  });

  it('revoking a middle token leaves its ancestors working', async () => {
    const r = await rig();
    const { a, b, c } = await family(r);
    await r.ok('update', 'auth/token/revoke', r.root, { token: b.client_token });
    expect(await r.works(a.client_token)).toBe(true);
    expect(await r.works(b.client_token)).toBe(false);
    expect(await r.works(c.client_token)).toBe(false);
  });

  it('revoke-orphan needs sudo: update alone on the path is 403', async () => {
    const r = await rig();
    const { a } = await family(r);
    await r.policy('orphaner', 'path "auth/token/revoke-orphan" { capabilities = ["update"] }');
    await r.policy('orphaner-sudo', 'path "auth/token/revoke-orphan" { capabilities = ["update", "sudo"] }');
    const noSudo = await r.token(r.root, { policies: ['orphaner'] });
    const reply = await r.call('update', 'auth/token/revoke-orphan', noSudo.client_token, { token: a.client_token });
    expect(reply.status).toBe(403);
    expect(await r.works(a.client_token)).toBe(true);
    const withSudo = await r.token(r.root, { policies: ['orphaner-sudo'] });
    expect((await r.call('update', 'auth/token/revoke-orphan', withSudo.client_token, { token: a.client_token })).status).toBe(204);
    expect(await r.works(a.client_token)).toBe(false);
  });

  it('revoke-orphan leaves the children working as orphans', async () => {
    const r = await rig();
    const { a, b, c } = await family(r);
    expect((await r.ok('update', 'auth/token/revoke-orphan', r.root, { token: a.client_token })).status).toBe(204);
    expect(await r.works(a.client_token)).toBe(false);
    expect(await r.works(b.client_token)).toBe(true);
    expect(await r.works(c.client_token)).toBe(true);
    expect((await r.ok('read', 'auth/token/lookup-self', b.client_token)).body.data.orphan).toBe(true);
    expect((await r.ok('read', 'auth/token/lookup-self', c.client_token)).body.data.orphan).toBe(false);
    // The orphan still heads its own tree.
    await r.ok('update', 'auth/token/revoke', r.root, { token: b.client_token });
    expect(await r.works(c.client_token)).toBe(false);
  });

  it('revoke-orphan survives a restart: the orphan is stored as one', async () => {
    const r = await rig();
    const { a, b } = await family(r);
    await r.ok('update', 'auth/token/revoke-orphan', r.root, { token: a.client_token });
    await r.restart();
    expect((await r.ok('read', 'auth/token/lookup-self', b.client_token)).body.data.orphan).toBe(true);
  });

  it('answers 400 for revoking an unknown token', async () => {
    const r = await rig();
    expect((await r.call('update', 'auth/token/revoke', r.root, { token: 'hvs.unknown' })).status).toBe(400);
    expect((await r.call('update', 'auth/token/revoke-accessor', r.root, { accessor: 'unknown' })).status).toBe(400);
  });
});

describe('use limits', () => {
  it('a token with num_uses 2 works twice, then is revoked', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], num_uses: 2 });
    expect(auth.num_uses).toBe(2);
    const first = await r.ok('read', 'auth/token/lookup-self', auth.client_token);
    expect(first.body.data.num_uses).toBe(1);
    const second = await r.ok('read', 'auth/token/lookup-self', auth.client_token);
    expect(second.body.data.num_uses).toBe(0);
    expect(await r.works(auth.client_token)).toBe(false);
    expect((await r.call('update', 'auth/token/lookup-accessor', r.root, { accessor: auth.accessor })).status).toBe(400);
  });

  it('counts any authenticated request as a use, and a lookup by another token as none', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const auth = await r.token(r.root, { policies: ['creator'], num_uses: 3 });
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    const looked = await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token });
    expect(looked.body.data.num_uses).toBe(2);
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    expect((await r.call('read', 'sys/policy/creator', auth.client_token)).status).toBe(403);
  });

  it('a denied request does not spend a use', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'], num_uses: 1 });
    expect((await r.call('read', 'sys/policy/default', auth.client_token)).status).toBe(403);
    expect(await r.works(auth.client_token)).toBe(true);
    expect(await r.works(auth.client_token)).toBe(false);
  });

  it('a one-use token can revoke itself with its only use', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'], num_uses: 1 });
    expect((await r.call('update', 'auth/token/revoke-self', auth.client_token, {})).status).toBe(204);
    expect(await r.works(auth.client_token)).toBe(false);
  });

  it('concurrent requests cannot spend more uses than the token has', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'], num_uses: 2 });
    const replies = await Promise.all(Array.from({ length: 6 }, () => r.call('read', 'auth/token/lookup-self', auth.client_token)));
    expect(replies.map((x) => x.status).sort()).toEqual([200, 200, 403, 403, 403, 403]);
  });

  it('two concurrent self-lookups spending the last two uses both answer', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'], num_uses: 2 });
    const replies = await Promise.all([
      r.call('read', 'auth/token/lookup-self', auth.client_token),
      r.call('read', 'auth/token/lookup-self', auth.client_token),
    ]);
    expect(replies.map((x) => x.status)).toEqual([200, 200]);
    expect(await r.works(auth.client_token)).toBe(false);
  });

  it('spending the last use revokes the children too', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'], num_uses: 2 });
    const child = await r.token(parent.client_token);
    expect(await r.works(child.client_token)).toBe(true);
    await r.ok('read', 'sys/policy/creator', parent.client_token);
    expect(await r.works(child.client_token)).toBe(false);
  });
});

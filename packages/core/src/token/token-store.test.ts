/**
 * The token store beneath the endpoints: expiry (exact to the millisecond, with parents, across
 * restarts, and the sweep that deletes expired entries), use limits under concurrency, and what
 * reaches physical storage (never a token ID or accessor in plaintext).
 */
import type { MemoryStorage } from '../storage/memory-storage';
import { rig } from '../testing/core-rig';

const CREATOR = `
path "auth/token/create" { capabilities = ["update"] }
path "sys/policy/*" { capabilities = ["read"] }
`;

describe('expiry', () => {
  it('a token works until 1 ms before its expiry and is refused from the expiry on', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '10s' });
    await r.clock.advance(9_999);
    expect(await r.works(auth.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(auth.client_token)).toBe(false);
    expect((await r.call('update', 'auth/token/lookup', r.root, { token: auth.client_token })).status).toBe(400);
    expect((await r.call('update', 'auth/token/lookup-accessor', r.root, { accessor: auth.accessor })).status).toBe(400);
    expect((await r.call('update', 'auth/token/renew-accessor', r.root, { accessor: auth.accessor })).status).toBe(400);
  });

  it('the expiry sweep deletes the entry and its accessor at the expiry', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '10s' });
    const keep = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    await r.clock.advance(9_999);
    expect(await r.stored(auth.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.stored(auth.client_token)).toBe(false);
    expect(await r.stored(keep.client_token)).toBe(true);
    expect(await r.core.barrier.list('sys/token/accessor/')).toHaveLength(2); // root and keep
  });

  it('a child dies at its parent\'s expiry even when its own TTL is longer, and is swept too', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'], ttl: '10s' });
    const child = await r.token(parent.client_token, { ttl: '1h' });
    const grandchild = await r.token(child.client_token, { ttl: '2h' });
    expect(child.lease_duration).toBe(3600);
    await r.clock.advance(9_999);
    expect(await r.works(grandchild.client_token)).toBe(true);
    await r.clock.advance(1);
    for (const t of [parent, child, grandchild]) {
      expect(await r.works(t.client_token)).toBe(false);
      expect(await r.stored(t.client_token)).toBe(false);
    }
    expect(await r.core.barrier.list('sys/token/parent/')).toEqual([]);
  });

  it('an orphan outlives the expiry of the token that created it', async () => {
    const r = await rig();
    await r.policy('creator', 'path "auth/token/create-orphan" { capabilities = ["update"] }');
    const creator = await r.token(r.root, { policies: ['creator'], ttl: '10s' });
    const orphan = (await r.ok('update', 'auth/token/create-orphan', creator.client_token, { ttl: '1h' })).body.auth;
    await r.clock.advance(10_000);
    expect(await r.works(creator.client_token)).toBe(false);
    expect(await r.works(orphan.client_token)).toBe(true);
  });

  it('a renewal moves the expiry: the sweep at the old time leaves the token alone', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '10s' });
    await r.clock.advance(5_000);
    await r.ok('update', 'auth/token/renew-self', auth.client_token, { increment: '60s' });
    await r.clock.advance(5_000);
    expect(await r.stored(auth.client_token)).toBe(true);
    await r.clock.advance(54_999);
    expect(await r.works(auth.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(auth.client_token)).toBe(false);
    expect(await r.stored(auth.client_token)).toBe(false);
  });

  it('a token expired while the server was down is refused after restart and then swept', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '10s' });
    const hash = r.core.tokens.hash(auth.client_token);
    await r.restart(() => r.clock.advance(20_000));
    expect(await r.works(auth.client_token)).toBe(false);
    // The sweep was scheduled at unseal for the (past) expiry; it runs on the next tick.
    await r.clock.advance(0);
    expect(await r.core.barrier.list('sys/token/id/')).not.toContain(hash);
    expect(await r.core.barrier.list('sys/token/id/')).toEqual([r.core.tokens.hash(r.root)]);
    expect(await r.core.barrier.list('sys/token/accessor/')).toHaveLength(1);
  });

  it('a token still valid at restart expires on time afterwards', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '30s' });
    await r.restart(() => r.clock.advance(10_000));
    await r.clock.advance(19_999);
    expect(await r.works(auth.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(auth.client_token)).toBe(false);
    expect(await r.stored(auth.client_token)).toBe(false);
  });

  it('a child whose parent expired during the downtime is refused after restart', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'], ttl: '10s' });
    const child = await r.token(parent.client_token, { ttl: '1h' });
    await r.restart(() => r.clock.advance(20_000));
    expect(await r.works(child.client_token)).toBe(false);
    await r.clock.advance(0);
    expect(await r.stored(child.client_token)).toBe(false);
  });

  it('tokens and their remaining TTL survive a restart', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h', meta: { a: 'b' } });
    const before = (await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token })).body.data;
    await r.restart(() => r.clock.advance(60_000));
    const after = (await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token })).body.data;
    expect(after).toEqual({ ...before, ttl: before.ttl - 60 });
    expect(await r.works(r.root)).toBe(true);
  });

  it('a batch token stays valid across a restart and still stops at its expiry', async () => {
    const r = await rig();
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'], ttl: '30s' });
    await r.restart(() => r.clock.advance(10_000));
    expect(await r.works(batch.client_token)).toBe(true);
    await r.clock.advance(19_999);
    expect(await r.works(batch.client_token)).toBe(true);
    await r.clock.advance(1);
    expect(await r.works(batch.client_token)).toBe(false);
  });

  it('sealing stops the expiry timer', async () => {
    const r = await rig();
    await r.token(r.root, { policies: ['reader'], ttl: '10s' });
    expect(r.clock.pendingTimers()).toBe(2); // the token's expiry, and mounts' periodic work
    await r.core.sealNow();
    expect(r.clock.pendingTimers()).toBe(0);
    await r.clock.advance(20_000); // nothing fires against the sealed barrier
  });
});

describe('use limits', () => {
  it('the remaining count is stored, so it survives a restart', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const auth = await r.token(r.root, { policies: ['creator'], num_uses: 3 });
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    await r.restart();
    expect((await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token })).body.data.num_uses).toBe(2);
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    await r.ok('read', 'sys/policy/creator', auth.client_token);
    expect((await r.call('read', 'sys/policy/creator', auth.client_token)).status).toBe(403);
    expect(await r.stored(auth.client_token)).toBe(false);
  });

  it('lookup-self spends a use and shows what is left', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['default'], num_uses: 3 });
    expect((await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data.num_uses).toBe(2);
    expect((await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data.num_uses).toBe(1);
    expect((await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data.num_uses).toBe(0);
    expect((await r.call('read', 'auth/token/lookup-self', auth.client_token)).status).toBe(403);
  });

  it('a renewal running alongside a use does not give the use back', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const auth = await r.token(r.root, { policies: ['creator'], num_uses: 5, ttl: '1h' });
    await Promise.all([
      r.ok('read', 'sys/policy/creator', auth.client_token),
      r.ok('update', 'auth/token/renew', r.root, { token: auth.client_token, increment: '2h' }),
      r.ok('read', 'sys/policy/creator', auth.client_token),
    ]);
    const data = (await r.ok('update', 'auth/token/lookup', r.root, { token: auth.client_token })).body.data;
    expect(data.num_uses).toBe(3);
    expect(data.ttl).toBe(7200);
  });

  it('a use of a token revoked after it was looked up is refused', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], num_uses: 2 });
    const entry = await r.core.tokens.lookup(auth.client_token);
    expect(entry).not.toBeNull();
    await r.core.tokens.revokeTree(entry!.hash);
    await expect(r.core.tokens.use(entry!)).rejects.toMatchObject({ status: 403 });
    expect(await r.stored(auth.client_token)).toBe(false);
  });

  it('a renewal never brings back a token revoked meanwhile', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['reader'], ttl: '1h' });
    const entry = (await r.core.tokens.lookup(auth.client_token))!;
    await r.core.tokens.revokeTree(entry.hash);
    expect(await r.core.tokens.update(entry.hash, (e) => ({ ...e, expireTime: e.expireTime + 1000 }))).toBeNull();
    expect(await r.stored(auth.client_token)).toBe(false);
  });
});

describe('chosen IDs', () => {
  it('two concurrent creates of the same ID make one token', async () => {
    const r = await rig();
    const replies = await Promise.all([
      r.call('update', 'auth/token/create', r.root, { id: 'same-id', policies: ['a'] }),
      r.call('update', 'auth/token/create', r.root, { id: 'same-id', policies: ['b'] }),
    ]);
    expect(replies.map((x) => x.status).sort()).toEqual([200, 400]);
    expect(await r.core.barrier.list('sys/token/accessor/')).toHaveLength(2); // root and the one
  });
});

describe('what reaches physical storage', () => {
  function leaks(storage: MemoryStorage, secrets: string[]): string[] {
    const found: string[] = [];
    for (const [key, value] of storage.data) {
      for (const secret of secrets) {
        const needle = Buffer.from(secret, 'utf8');
        if (key.includes(secret) || value.includes(needle)) found.push(`${secret} in ${key}`);
      }
    }
    return found;
  }

  it('holds no token ID or accessor in plaintext, in keys or values', async () => {
    const r = await rig();
    await r.policy('creator', CREATOR);
    const parent = await r.token(r.root, { policies: ['creator'], ttl: '1h', meta: { team: 'payments-team' } });
    const child = await r.token(parent.client_token, { num_uses: 4 });
    const chosen = await r.token(r.root, { id: 'my-very-own-token-id', policies: ['reader'] });
    const orphan = (await r.ok('update', 'auth/token/create-orphan', r.root, { policies: ['reader'] })).body.auth;
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'] });
    await r.ok('read', 'sys/policy/creator', child.client_token); // rewrites the entry with a lower count
    await r.ok('update', 'auth/token/renew', r.root, { token: parent.client_token });
    await r.ok('update', 'auth/token/revoke-orphan', r.root, { token: parent.client_token }); // rewrites the child
    await r.restart();

    const secrets: string[] = [r.root, r.root.slice(4), 'payments-team'];
    for (const t of [parent, child, chosen, orphan]) secrets.push(t.client_token, t.client_token.replace(/^hvs\./, ''), t.accessor);
    secrets.push(batch.client_token);
    expect(secrets.every((s) => s.length >= 13)).toBe(true);
    expect(leaks(r.storage, secrets)).toEqual([]);
    // Keys are hashes of IDs and accessors: hex only after the prefix.
    const tokenKeys = [...r.storage.data.keys()].filter((k) => k.startsWith('sys/token/') && k !== 'sys/token/salt');
    expect(tokenKeys.length).toBeGreaterThan(0);
    for (const k of tokenKeys) expect(k).toMatch(/^sys\/token\/(id|accessor|parent\/[0-9a-f]{64})\/[0-9a-f]{64}$/);
  });

  it('keys token entries by a salted hash that differs between clusters', async () => {
    const a = await rig();
    const b = await rig();
    await a.token(a.root, { id: 'shared-id', policies: ['reader'] });
    await b.token(b.root, { id: 'shared-id', policies: ['reader'] });
    expect(a.core.tokens.hash('shared-id')).not.toBe(b.core.tokens.hash('shared-id'));
    expect(await a.stored('shared-id')).toBe(true);
    expect(await b.stored('shared-id')).toBe(true);
  });

  it('stores nothing for a batch token', async () => {
    const r = await rig();
    const before = [...r.storage.data.keys()].sort();
    const batch = await r.token(r.root, { type: 'batch', policies: ['reader'], ttl: '1h' });
    expect([...r.storage.data.keys()].sort()).toEqual(before);
    expect(await r.works(batch.client_token)).toBe(true);
  });
});

describe('revocation by path', () => {
  it('revokes the trees of every token issued at a path prefix', async () => {
    const r = await rig();
    await r.policy('creator', 'path "auth/token/create" { capabilities = ["update"] }');
    const viaOrphan = (await r.ok('update', 'auth/token/create-orphan', r.root, { policies: ['creator'] })).body.auth;
    const grandchild = await r.token(viaOrphan.client_token);
    const viaCreate = (await r.ok('update', 'auth/token/create', r.root, { policies: ['reader'], no_parent: true })).body.auth;
    await r.core.tokens.revokeByPath('auth/token/create-orphan', 'root');
    expect(await r.works(viaOrphan.client_token)).toBe(false);
    expect(await r.works(grandchild.client_token)).toBe(false); // issued at auth/token/create, but a descendant
    expect(await r.works(viaCreate.client_token)).toBe(true);
    expect(await r.works(r.root)).toBe(true);
  });
});

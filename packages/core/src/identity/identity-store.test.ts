/**
 * The identity store as auth methods and the identity backend use it: entities found or made
 * at login, metadata rewrites and their cost in storage writes, concurrent logins, lookups,
 * deletion with its indexes, and cleanup when an auth mount goes away.
 */
import { FakeClock } from '../clock';
import { BadRequestError } from '../errors';
import { PrefixedStorage } from '../storage/logical';
import { MemoryStorage } from '../storage/memory-storage';
import { IdentityStore, type LoginAliasInput } from './identity-store';
import { KeyedMutex } from '../keyed-mutex';
import { dump, inconsistencies, SlowStorage } from './testing';

const PREFIX = 'sys/identity/';
const START = Date.UTC(2026, 0, 1);

function setup(options: { slow?: boolean; mounts?: (a: string) => { type: string; path: string } | undefined } = {}) {
  const memory = new MemoryStorage();
  const clock = new FakeClock(START);
  const view = new PrefixedStorage(memory, PREFIX);
  const storage = options.slow ? new SlowStorage(view) : view;
  const store = new IdentityStore(storage, { clock, ...(options.mounts ? { mounts: options.mounts } : {}) });
  const spies = {
    get: jest.spyOn(memory, 'get'),
    put: jest.spyOn(memory, 'put'),
    delete: jest.spyOn(memory, 'delete'),
    txn: jest.spyOn(memory, 'txn'),
    reset() {
      for (const s of [spies.get, spies.put, spies.delete, spies.txn]) s.mockClear();
    },
    writes() {
      return spies.put.mock.calls.length + spies.delete.mock.calls.length + spies.txn.mock.calls.length;
    },
  };
  return { memory, clock, store, spies, consistent: () => inconsistencies(memory, PREFIX) };
}

const userpass = (aliasName: string, metadata: Record<string, string> = {}): LoginAliasInput => ({
  mountAccessor: 'auth_userpass_1a2b3c4d', mountType: 'userpass', mountPath: 'auth/userpass/', aliasName, metadata,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('IdentityStore.loginAlias', () => {
  it('makes an entity and its alias on the first login, in one txn', async () => {
    const { store, spies, consistent, memory } = setup();
    const result = await store.loginAlias(userpass('alice', { username: 'alice' }));
    expect(result.created).toBe(true);
    expect(result.entityId).toMatch(UUID);
    expect(result.aliasId).toMatch(UUID);
    const now = new Date(START).toISOString();
    expect(result.alias).toEqual({
      id: result.aliasId, name: 'alice', mount_accessor: 'auth_userpass_1a2b3c4d', mount_type: 'userpass',
      mount_path: 'auth/userpass/', canonical_id: result.entityId, metadata: { username: 'alice' },
      creation_time: now, last_update_time: now, local: false,
    });
    expect(result.entity).toEqual({
      id: result.entityId, name: expect.stringMatching(/^entity_[0-9a-f]{8}$/), metadata: {}, policies: [],
      disabled: false, creation_time: now, last_update_time: now, aliases: [result.alias],
    });
    expect(spies.txn).toHaveBeenCalledTimes(1);
    expect(spies.put).not.toHaveBeenCalled();
    expect(spies.txn.mock.calls[0]?.[0]).toHaveLength(4);
    expect(consistent()).toEqual([]);
    // Everything lives under the prefix the store was given.
    expect([...memory.data.keys()].every((k) => k.startsWith(PREFIX))).toBe(true);
  });

  it('finds the same entity on later logins without writing anything', async () => {
    const { store, spies } = setup();
    const first = await store.loginAlias(userpass('alice', { team: 'a' }));
    spies.reset();
    const second = await store.loginAlias(userpass('alice', { team: 'a' }));
    expect(second.created).toBe(false);
    expect(second.entityId).toBe(first.entityId);
    expect(second.aliasId).toBe(first.aliasId);
    expect(second.entity).toEqual(first.entity);
    expect(spies.writes()).toBe(0);
    // The alias by its (accessor, name) key, then the entity.
    expect(spies.get).toHaveBeenCalledTimes(2);
  });

  it('treats metadata as equal whatever the key order', async () => {
    const { store, spies } = setup();
    await store.loginAlias(userpass('alice', { a: '1', b: '2' }));
    spies.reset();
    await store.loginAlias(userpass('alice', { b: '2', a: '1' }));
    expect(spies.writes()).toBe(0);
  });

  it('rewrites only the alias, with exactly one storage write, when a metadata value changes', async () => {
    const { store, spies, clock, memory, consistent } = setup();
    const first = await store.loginAlias(userpass('alice', { team: 'a', env: 'prod' }));
    const entityBefore = dump(memory, PREFIX).entities;
    await clock.advance(60_000);
    spies.reset();
    const second = await store.loginAlias(userpass('alice', { team: 'b', env: 'prod' }));
    expect(spies.txn).toHaveBeenCalledTimes(1);
    expect(spies.put).not.toHaveBeenCalled();
    expect(spies.delete).not.toHaveBeenCalled();
    const ops = spies.txn.mock.calls[0]?.[0] ?? [];
    expect(ops).toHaveLength(1);
    expect(ops[0]?.key).toBe(`${PREFIX}alias/auth_userpass_1a2b3c4d/alice`);

    expect(second.created).toBe(false);
    expect(second.entityId).toBe(first.entityId);
    expect(second.aliasId).toBe(first.aliasId);
    expect(second.alias.metadata).toEqual({ team: 'b', env: 'prod' });
    expect(second.alias.creation_time).toBe(first.alias.creation_time);
    expect(second.alias.last_update_time).toBe(new Date(START + 60_000).toISOString());
    expect(second.entity.aliases).toEqual([second.alias]);
    // The entity record itself is untouched.
    expect(dump(memory, PREFIX).entities).toEqual(entityBefore);
    expect((await store.get(first.entityId))?.aliases[0]?.metadata).toEqual({ team: 'b', env: 'prod' });
    expect(consistent()).toEqual([]);
  });

  it('rewrites the alias when a key is dropped or added, and when the mount moved', async () => {
    const { store, spies } = setup();
    await store.loginAlias(userpass('alice', { team: 'a', env: 'prod' }));
    spies.reset();
    await store.loginAlias(userpass('alice', { team: 'a' }));
    expect(spies.writes()).toBe(1);
    spies.reset();
    await store.loginAlias(userpass('alice', { team: 'a', extra: '' }));
    expect(spies.writes()).toBe(1);
    spies.reset();
    const moved = await store.loginAlias({ ...userpass('alice', { team: 'a', extra: '' }), mountPath: 'auth/people/' });
    expect(spies.writes()).toBe(1);
    expect(moved.alias.mount_path).toBe('auth/people/');
  });

  it('scopes aliases to their mount accessor', async () => {
    const { store } = setup();
    const a = await store.loginAlias(userpass('alice'));
    const b = await store.loginAlias({ ...userpass('alice'), mountAccessor: 'auth_userpass_99999999', mountPath: 'auth/other/' });
    const c = await store.loginAlias(userpass('bob'));
    expect(new Set([a.entityId, b.entityId, c.entityId]).size).toBe(3);
    expect((await store.list()).map((e) => e.id).sort()).toEqual([a.entityId, b.entityId, c.entityId].sort());
  });

  it('makes one entity for simultaneous first logins of the same alias', async () => {
    const { store, consistent, memory } = setup({ slow: true });
    const results = await Promise.all(Array.from({ length: 10 }, () => store.loginAlias(userpass('alice', { n: '1' }))));
    expect(new Set(results.map((r) => r.entityId)).size).toBe(1);
    expect(new Set(results.map((r) => r.aliasId)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(dump(memory, PREFIX).entities.size).toBe(1);
    expect(dump(memory, PREFIX).aliases.size).toBe(1);
    expect(consistent()).toEqual([]);
  });

  it('keeps simultaneous first logins of different aliases apart', async () => {
    const { store, consistent } = setup({ slow: true });
    const names = ['a', 'b', 'c', 'd', 'e', 'a', 'b', 'c', 'd', 'e'];
    const results = await Promise.all(names.map((n) => store.loginAlias(userpass(n))));
    expect(new Set(results.map((r) => r.entityId)).size).toBe(5);
    expect(await store.listIds()).toHaveLength(5);
    expect(consistent()).toEqual([]);
  });

  it('lands on one final metadata value when changed logins race', async () => {
    const { store, consistent } = setup({ slow: true });
    const { entityId } = await store.loginAlias(userpass('alice', { v: '0' }));
    const results = await Promise.all(['1', '2', '3', '4'].map((v) => store.loginAlias(userpass('alice', { v }))));
    expect(new Set(results.map((r) => r.entityId))).toEqual(new Set([entityId]));
    const alias = await store.findAlias('auth_userpass_1a2b3c4d', 'alice');
    expect(['1', '2', '3', '4']).toContain(alias?.metadata['v']);
    expect(consistent()).toEqual([]);
  });

  it('never leaves an orphaned alias when a login races a delete', async () => {
    // The login starts a little later each round, so its reads and write fall at every point of the delete's.
    for (let round = 0; round < 8; round++) {
      const { store, consistent } = setup({ slow: true });
      const { entityId } = await store.loginAlias(userpass('alice', { v: '0' }));
      const delayedLogin = async () => {
        for (let i = 0; i < round; i++) await new Promise<void>((resolve) => setImmediate(resolve));
        return store.loginAlias(userpass('alice', { v: String(round + 1) }));
      };
      const [, login] = await Promise.all([store.delete(entityId), delayedLogin()]);
      expect(consistent()).toEqual([]);
      // Either the login came first and its entity was then deleted, or it came after and made a new one.
      const found = await store.lookupByAlias('alice', 'auth_userpass_1a2b3c4d');
      if (found) expect(found.id).toBe(login.entityId);
      expect(await store.get(entityId)).toBeNull();
    }
  });

  it('takes alias names that are not path-safe', async () => {
    const { store, consistent } = setup();
    const arn = 'arn:aws:iam::123456789012:role/path/to/Dev Role%2F';
    const { entityId } = await store.loginAlias(userpass(arn));
    expect((await store.lookupByAlias(arn, 'auth_userpass_1a2b3c4d'))?.id).toBe(entityId);
    expect(await store.lookupByAlias('arn:aws:iam::123456789012:role/path', 'auth_userpass_1a2b3c4d')).toBeNull();
    expect(await store.deleteAliasesForMount('auth_userpass_1a2b3c4d')).toBe(1);
    expect(consistent()).toEqual([]);
  });

  it('refuses a login with no alias name, no accessor or non-string metadata', async () => {
    const { store, spies } = setup();
    await expect(store.loginAlias(userpass(''))).rejects.toBeInstanceOf(BadRequestError);
    await expect(store.loginAlias({ ...userpass('alice'), mountAccessor: '' })).rejects.toBeInstanceOf(BadRequestError);
    await expect(store.loginAlias(userpass('alice', { n: 1 as unknown as string }))).rejects.toThrow(/"n" is not a string/);
    expect(spies.writes()).toBe(0);
  });

  it('gives an alias whose entity vanished a new entity, keeping the alias ID', async () => {
    const { store, memory, consistent } = setup();
    const first = await store.loginAlias(userpass('alice'));
    memory.data.delete(`${PREFIX}entity/${first.entityId}`);
    const again = await store.loginAlias(userpass('alice'));
    expect(again.created).toBe(true);
    expect(again.entityId).not.toBe(first.entityId);
    expect(again.aliasId).toBe(first.aliasId);
    // The old entity's name index is left dangling by the simulated loss, nothing else.
    expect(consistent().filter((p) => !p.includes('points to a missing entity'))).toEqual([]);
  });
});

describe('IdentityStore lookups', () => {
  it('finds an entity by alias with a single storage read for the alias', async () => {
    const { store, spies } = setup();
    const { entityId, aliasId } = await store.loginAlias(userpass('alice'));
    spies.reset();
    const alias = await store.findAlias('auth_userpass_1a2b3c4d', 'alice');
    expect(alias?.id).toBe(aliasId);
    expect(spies.get).toHaveBeenCalledTimes(1);
    expect((await store.lookupByAlias('alice', 'auth_userpass_1a2b3c4d'))?.id).toBe(entityId);
    expect(await store.lookupByAlias('alice', 'auth_other_00000000')).toBeNull();
    expect(await store.lookupByAlias('', 'auth_userpass_1a2b3c4d')).toBeNull();
  });

  it('finds an entity by ID, name and alias ID, and an alias by ID', async () => {
    const { store } = setup();
    const { entityId, aliasId, entity, alias } = await store.loginAlias(userpass('alice'));
    expect(await store.lookupById(entityId)).toEqual(entity);
    expect(await store.get(entityId)).toEqual(entity);
    expect(await store.lookupByName(entity.name)).toEqual(entity);
    expect(await store.lookupByAliasId(aliasId)).toEqual(entity);
    expect(await store.getAlias(aliasId)).toEqual(alias);
    expect(await store.get('nope')).toBeNull();
    expect(await store.get('')).toBeNull();
    expect(await store.lookupByName('entity_00000000')).toBeNull();
    expect(await store.getAlias('nope')).toBeNull();
    expect(await store.lookupByAliasId('nope')).toBeNull();
  });

  it('lists entities and aliases', async () => {
    const { store } = setup();
    expect(await store.list()).toEqual([]);
    expect(await store.listAliases()).toEqual([]);
    const a = await store.loginAlias(userpass('alice'));
    const b = await store.loginAlias(userpass('bob'));
    expect(await store.listIds()).toEqual([a.entityId, b.entityId].sort());
    expect((await store.list()).map((e) => e.name).sort()).toEqual([a.entity.name, b.entity.name].sort());
    expect(await store.listNames()).toEqual([a.entity.name, b.entity.name].sort());
    expect(await store.listAliasIds()).toEqual([a.aliasId, b.aliasId].sort());
    expect((await store.listAliases()).map((x) => x.name).sort()).toEqual(['alice', 'bob']);
  });

  it('shows the current mount type and path when given a resolver', async () => {
    const mounts = new Map([['auth_userpass_1a2b3c4d', { type: 'userpass', path: 'auth/people/' }]]);
    const { store } = setup({ mounts: (a) => mounts.get(a) });
    const { entityId, aliasId, alias } = await store.loginAlias(userpass('alice'));
    expect(alias.mount_path).toBe('auth/people/');
    expect((await store.getAlias(aliasId))?.mount_path).toBe('auth/people/');
    expect((await store.get(entityId))?.aliases[0]?.mount_path).toBe('auth/people/');
    mounts.clear();
    expect((await store.getAlias(aliasId))?.mount_path).toBe('auth/userpass/');
  });
});

describe('IdentityStore.delete', () => {
  it('removes the entity, its name, its aliases and their indexes in one txn', async () => {
    const { store, spies, memory } = setup();
    const keep = await store.loginAlias(userpass('bob'));
    const gone = await store.loginAlias(userpass('alice'));
    spies.reset();
    expect(await store.delete(gone.entityId)).toBe(true);
    expect(spies.txn).toHaveBeenCalledTimes(1);
    expect(spies.put).not.toHaveBeenCalled();
    expect(spies.delete).not.toHaveBeenCalled();
    expect(await store.get(gone.entityId)).toBeNull();
    expect(await store.lookupByName(gone.entity.name)).toBeNull();
    expect(await store.lookupByAlias('alice', 'auth_userpass_1a2b3c4d')).toBeNull();
    expect(await store.getAlias(gone.aliasId)).toBeNull();
    const left = dump(memory, PREFIX);
    expect([...left.entities.keys()]).toEqual([`entity/${keep.entityId}`]);
    expect([...left.names.keys()]).toEqual([`entity-name/${keep.entity.name}`]);
    expect([...left.aliases.keys()]).toEqual(['alias/auth_userpass_1a2b3c4d/bob']);
    expect([...left.aliasIds.keys()]).toEqual([`alias-id/${keep.aliasId}`]);
    expect(await store.delete(gone.entityId)).toBe(false);
    expect(await store.delete('')).toBe(false);
  });

  it('lets the next login of a deleted entity\'s alias make a new entity', async () => {
    const { store } = setup();
    const first = await store.loginAlias(userpass('alice'));
    await store.delete(first.entityId);
    const again = await store.loginAlias(userpass('alice'));
    expect(again.created).toBe(true);
    expect(again.entityId).not.toBe(first.entityId);
    expect(again.aliasId).not.toBe(first.aliasId);
  });

  it('deletes one alias and keeps its entity', async () => {
    const { store, consistent } = setup();
    const { entityId, aliasId } = await store.loginAlias(userpass('alice'));
    expect(await store.deleteAlias(aliasId)).toBe(true);
    expect(await store.deleteAlias(aliasId)).toBe(false);
    expect((await store.get(entityId))?.aliases).toEqual([]);
    expect(consistent()).toEqual([]);
  });
});

describe('IdentityStore.deleteAliasesForMount', () => {
  it('removes every alias of the mount and leaves entities and other mounts alone', async () => {
    const { store, consistent, clock } = setup();
    const other = { mountAccessor: 'auth_approle_0f0f0f0f', mountType: 'approle', mountPath: 'auth/approle/' };
    const a = await store.loginAlias(userpass('alice'));
    const b = await store.loginAlias(userpass('bob'));
    const c = await store.loginAlias({ ...other, aliasName: 'role-1' });
    await clock.advance(1000);
    expect(await store.deleteAliasesForMount('auth_userpass_1a2b3c4d')).toBe(2);
    expect(consistent()).toEqual([]);
    for (const r of [a, b]) {
      const entity = await store.get(r.entityId);
      expect(entity?.aliases).toEqual([]);
      expect(entity?.last_update_time).toBe(new Date(START + 1000).toISOString());
      expect(await store.getAlias(r.aliasId)).toBeNull();
    }
    expect(await store.lookupByAlias('alice', 'auth_userpass_1a2b3c4d')).toBeNull();
    expect((await store.lookupByAlias('role-1', other.mountAccessor))?.id).toBe(c.entityId);
    expect(await store.listAliasIds()).toEqual([c.aliasId]);
    expect(await store.deleteAliasesForMount('auth_userpass_1a2b3c4d')).toBe(0);
    expect(await store.deleteAliasesForMount('')).toBe(0);
  });
});

describe('IdentityStore.upsertEntity', () => {
  it('creates, updates by name and by ID, and renames', async () => {
    const { store, consistent } = setup();
    const made = await store.upsertEntity({ name: 'ops', metadata: { team: 'ops' }, policies: ['Ops ', 'base', 'ops', ''] });
    expect(made.created).toBe(true);
    expect(made.entity).toMatchObject({ name: 'ops', metadata: { team: 'ops' }, policies: ['base', 'ops'], disabled: false, aliases: [] });
    const byName = await store.upsertEntity({ name: 'ops', disabled: true });
    expect(byName).toMatchObject({ created: false, entity: { id: made.entity.id, disabled: true, metadata: { team: 'ops' }, policies: ['base', 'ops'] } });
    const renamed = await store.upsertEntity({ id: made.entity.id, name: 'sre', metadata: {} });
    expect(renamed.entity).toMatchObject({ id: made.entity.id, name: 'sre', metadata: {}, disabled: true });
    expect(await store.lookupByName('ops')).toBeNull();
    expect((await store.lookupByName('sre'))?.id).toBe(made.entity.id);
    expect(await store.listNames()).toEqual(['sre']);
    expect(consistent()).toEqual([]);
  });

  it('generates a name when none is given', async () => {
    const { store } = setup();
    const { entity } = await store.upsertEntity({});
    expect(entity.name).toMatch(/^entity_[0-9a-f]{8}$/);
  });

  it('refuses an unknown ID and a name held by another entity', async () => {
    const { store } = setup();
    await store.upsertEntity({ name: 'a' });
    const b = await store.upsertEntity({ name: 'b' });
    await expect(store.upsertEntity({ id: 'missing' })).rejects.toThrow(/no entity has ID "missing"/);
    await expect(store.upsertEntity({ id: b.entity.id, name: 'a' })).rejects.toThrow(/"a" is already in use/);
    await expect(store.upsertEntity({ name: '' })).rejects.toBeInstanceOf(BadRequestError);
  });

  it('makes one entity when the same name is created twice at once', async () => {
    const { store, consistent } = setup({ slow: true });
    const results = await Promise.all([1, 2, 3].map((n) => store.upsertEntity({ name: 'shared', metadata: { n: String(n) } })));
    expect(new Set(results.map((r) => r.entity.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(consistent()).toEqual([]);
  });

  it('keeps the aliases of an entity updated through the API', async () => {
    const { store } = setup();
    const { entityId, alias } = await store.loginAlias(userpass('alice'));
    const { entity } = await store.upsertEntity({ id: entityId, policies: ['dev'] });
    expect(entity.aliases).toEqual([alias]);
    expect(entity.policies).toEqual(['dev']);
  });
});

describe('KeyedMutex', () => {
  it('serializes holders of a key, lets other keys through and forgets settled keys', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    let releaseFirst!: () => void;
    const gate = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const first = mutex.run(['a'], async () => {
      order.push('first:start');
      await gate;
      order.push('first:end');
    });
    const second = mutex.run(['b', 'a'], async () => {
      order.push('second');
    });
    const other = mutex.run(['c'], async () => {
      order.push('other');
    });
    await other;
    expect(order).toEqual(['first:start', 'other']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first:start', 'other', 'first:end', 'second']);
    expect(mutex.size).toBe(0);
  });

  it('releases its keys when the section throws', async () => {
    const mutex = new KeyedMutex();
    await expect(mutex.run(['a'], async () => {
      throw new Error('boom');
    })).rejects.toThrow('boom');
    expect(mutex.size).toBe(0);
    await expect(mutex.run(['a'], async () => 1)).resolves.toBe(1);
  });
});

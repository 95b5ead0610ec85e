/**
 * The `identity/` backend's endpoints through BackendHarness: reply shapes as Vault clients read
 * them, and the router's view of empty answers (404 for reads and lists, 204 for writes).
 */
import { FakeClock } from '../clock';
import { buildEnvelope } from '../envelope';
import { StrongroomError } from '../errors';
import { Backend } from '../framework/backend';
import { BackendHarness } from '../framework/testing';
import type { BackendRequest, BackendResponse, Operation } from '../framework/types';
import { PrefixedStorage } from '../storage/logical';
import { MemoryStorage } from '../storage/memory-storage';
import { IdentityStore, type LoginAliasInput } from './identity-store';
import { identityPaths } from './paths';
import { inconsistencies } from './testing';

const START = Date.UTC(2026, 0, 1);
const T0 = new Date(START).toISOString();
const ACCESSOR = 'auth_userpass_1a2b3c4d';

function setup() {
  const memory = new MemoryStorage();
  const store = new IdentityStore(new PrefixedStorage(memory, 'sys/identity/'), { clock: new FakeClock(START) });
  const harness = new BackendHarness(new Backend('identity', identityPaths(store)), { path: 'identity/', type: 'identity' });
  const call = (op: Operation | 'write', path: string, data: Record<string, unknown> = {}) => harness.request(op, path, data);
  const login = (aliasName: string, metadata: Record<string, string> = {}, extra: Partial<LoginAliasInput> = {}) =>
    store.loginAlias({ mountAccessor: ACCESSOR, mountType: 'userpass', mountPath: 'auth/userpass/', aliasName, metadata, ...extra });
  return { store, call, login, consistent: () => inconsistencies(memory, 'sys/identity/') };
}

/** The HTTP status the router would answer with for this backend reply. */
function status(operation: Operation, resp: BackendResponse | null): number {
  try {
    return buildEnvelope({ id: 'r', operation } as BackendRequest, resp, 'identity').status;
  } catch (err) {
    if (err instanceof StrongroomError) return err.status;
    throw err;
  }
}

async function failure(promise: Promise<unknown>): Promise<StrongroomError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof StrongroomError) return err;
    throw err;
  }
  throw new Error('expected the request to fail');
}

const UUID = expect.stringMatching(/^[0-9a-f-]{36}$/);

describe('identity/entity/id/:id', () => {
  it('reads an entity in Vault\'s shape', async () => {
    const { call, login } = setup();
    const { entityId, aliasId, entity } = await login('alice', { username: 'alice' });
    const resp = await call('read', `entity/id/${entityId}`);
    expect(status('read', resp)).toBe(200);
    expect(resp?.data).toEqual({
      id: entityId,
      name: entity.name,
      metadata: null,
      policies: [],
      disabled: false,
      aliases: [{
        id: aliasId, name: 'alice', canonical_id: entityId, mount_accessor: ACCESSOR, mount_type: 'userpass',
        mount_path: 'auth/userpass/', metadata: { username: 'alice' }, creation_time: T0, last_update_time: T0,
        local: false, merged_from_canonical_ids: null, custom_metadata: {},
      }],
      creation_time: T0,
      last_update_time: T0,
      direct_group_ids: [],
      group_ids: [],
      inherited_group_ids: [],
      namespace_id: 'root',
      merged_entity_ids: null,
      mfa_secrets: {},
    });
  });

  it('answers 404 for an unknown ID', async () => {
    const { call } = setup();
    expect(status('read', await call('read', 'entity/id/00000000-0000-0000-0000-000000000000'))).toBe(404);
  });

  it('deletes with 204, taking the aliases along, and 204 again for what is gone', async () => {
    const { call, login, store, consistent } = setup();
    const { entityId, aliasId } = await login('alice');
    expect(status('delete', await call('delete', `entity/id/${entityId}`))).toBe(204);
    expect(status('read', await call('read', `entity/id/${entityId}`))).toBe(404);
    expect(status('read', await call('read', `entity-alias/id/${aliasId}`))).toBe(404);
    expect(await store.lookupByAlias('alice', ACCESSOR)).toBeNull();
    expect(status('delete', await call('delete', `entity/id/${entityId}`))).toBe(204);
    expect(consistent()).toEqual([]);
  });

  it('updates an entity by ID with 204, and refuses an unknown ID with 400', async () => {
    const { call, login } = setup();
    const { entityId } = await login('alice');
    const resp = await call('write', `entity/id/${entityId}`, { policies: 'dev,ops', metadata: ['team=a', 'env=x=y'], disabled: 'true' });
    expect(status('update', resp)).toBe(204);
    const read = await call('read', `entity/id/${entityId}`);
    expect(read?.data).toMatchObject({ policies: ['dev', 'ops'], metadata: { team: 'a', env: 'x=y' }, disabled: true });
    const err = await failure(call('write', 'entity/id/missing', { policies: 'dev' }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/no entity has ID "missing"/);
  });
});

describe('identity/entity/id LIST', () => {
  it('lists IDs with names and aliases in key_info', async () => {
    const { call, login, store } = setup();
    const a = await login('alice');
    const b = await store.upsertEntity({ name: 'no-aliases' });
    const resp = await call('list', 'entity/id/');
    expect(status('list', resp)).toBe(200);
    expect(resp?.data).toEqual({
      keys: [a.entityId, b.entity.id].sort(),
      key_info: {
        [a.entityId]: {
          name: a.entity.name,
          aliases: [{ id: a.aliasId, name: 'alice', mount_accessor: ACCESSOR, mount_type: 'userpass', mount_path: 'auth/userpass/' }],
        },
        [b.entity.id]: { name: 'no-aliases', aliases: [] },
      },
    });
    // Without the trailing slash as well, as `vault list identity/entity/id` may send it.
    expect((await call('list', 'entity/id'))?.data?.['keys']).toHaveLength(2);
  });

  it('answers 404 when there are no entities', async () => {
    const { call } = setup();
    expect(status('list', await call('list', 'entity/id/'))).toBe(404);
  });
});

describe('identity/entity/name', () => {
  it('reads by name, lists names, and deletes by name', async () => {
    const { call, login } = setup();
    const { entityId, entity } = await login('alice');
    expect((await call('read', `entity/name/${entity.name}`))?.data?.['id']).toBe(entityId);
    expect(status('read', await call('read', 'entity/name/nobody'))).toBe(404);
    expect((await call('list', 'entity/name/'))?.data?.['keys']).toEqual([entity.name]);
    expect(status('delete', await call('delete', `entity/name/${entity.name}`))).toBe(204);
    expect(status('read', await call('read', `entity/id/${entityId}`))).toBe(404);
    expect(status('delete', await call('delete', 'entity/name/nobody'))).toBe(204);
  });

  it('creates by name with 200 and its ID, then updates with 204', async () => {
    const { call } = setup();
    const created = await call('write', 'entity/name/ops', { policies: ['ops'] });
    expect(status('update', created)).toBe(200);
    expect(created?.data).toEqual({ id: UUID, name: 'ops', aliases: null });
    expect(status('update', await call('write', 'entity/name/ops', { disabled: true }))).toBe(204);
    expect((await call('read', 'entity/name/ops'))?.data).toMatchObject({ id: created?.data?.['id'], policies: ['ops'], disabled: true });
  });
});

describe('identity/entity POST', () => {
  it('creates with a generated name, or the given one, and updates by name or ID', async () => {
    const { call } = setup();
    const generated = await call('write', 'entity', {});
    expect(generated?.data).toEqual({ id: UUID, name: expect.stringMatching(/^entity_[0-9a-f]{8}$/), aliases: null });
    const named = await call('write', 'entity', { name: 'team-a', metadata: { org: 'acme' }, policies: ['Reader'] });
    expect(named?.data).toEqual({ id: UUID, name: 'team-a', aliases: null });
    const id = named?.data?.['id'] as string;
    expect((await call('read', `entity/id/${id}`))?.data).toMatchObject({ name: 'team-a', metadata: { org: 'acme' }, policies: ['reader'] });
    expect(status('update', await call('write', 'entity', { name: 'team-a', policies: ['writer'] }))).toBe(204);
    expect(status('update', await call('write', 'entity', { id, name: 'team-b' }))).toBe(204);
    expect((await call('read', `entity/id/${id}`))?.data).toMatchObject({ name: 'team-b', policies: ['writer'], metadata: { org: 'acme' } });
  });

  it('answers 400 naming the field for bad metadata, an unknown ID or a taken name', async () => {
    const { call } = setup();
    await call('write', 'entity', { name: 'taken' });
    const other = await call('write', 'entity', { name: 'other' });
    const errors = await Promise.all([
      failure(call('write', 'entity', { metadata: { a: { nested: true } } })),
      failure(call('write', 'entity', { metadata: ['novalue'] })),
      failure(call('write', 'entity', { metadata: 42 })),
      failure(call('write', 'entity', { id: 'missing' })),
      failure(call('write', 'entity', { id: other?.data?.['id'], name: 'taken' })),
      failure(call('write', 'entity', { disabled: 'maybe' })),
    ]);
    expect(errors.map((e) => e.status)).toEqual([400, 400, 400, 400, 400, 400]);
    expect(errors[0]?.message).toMatch(/"metadata".*"a" is not a string/);
    expect(errors[1]?.message).toMatch(/"metadata".*"novalue" is not of the form "key=value"/);
    expect(errors[2]?.message).toMatch(/"metadata"/);
    expect(errors[3]?.message).toMatch(/"missing"/);
    expect(errors[4]?.message).toMatch(/"name".*"taken" is already in use/);
    expect(errors[5]?.message).toMatch(/"disabled"/);
  });
});

describe('identity/entity-alias/id', () => {
  it('reads an alias in Vault\'s shape', async () => {
    const { call, login } = setup();
    const { entityId, aliasId } = await login('alice', { team: 'a' });
    const resp = await call('read', `entity-alias/id/${aliasId}`);
    expect(status('read', resp)).toBe(200);
    expect(resp?.data).toEqual({
      id: aliasId, name: 'alice', canonical_id: entityId, mount_accessor: ACCESSOR, mount_type: 'userpass',
      mount_path: 'auth/userpass/', metadata: { team: 'a' }, creation_time: T0, last_update_time: T0, local: false,
      namespace_id: 'root', custom_metadata: {}, merged_from_canonical_ids: null,
    });
    expect(status('read', await call('read', 'entity-alias/id/nope'))).toBe(404);
  });

  it('lists alias IDs with key_info, and 404 when there are none', async () => {
    const { call, login } = setup();
    expect(status('list', await call('list', 'entity-alias/id/'))).toBe(404);
    const a = await login('alice');
    const b = await login('bob', { k: 'v' });
    const resp = await call('list', 'entity-alias/id/');
    expect(resp?.data?.['keys']).toEqual([a.aliasId, b.aliasId].sort());
    expect(resp?.data?.['key_info']).toEqual({
      [a.aliasId]: {
        name: 'alice', canonical_id: a.entityId, mount_accessor: ACCESSOR, mount_type: 'userpass', mount_path: 'auth/userpass/',
        metadata: null, local: false, custom_metadata: {},
      },
      [b.aliasId]: {
        name: 'bob', canonical_id: b.entityId, mount_accessor: ACCESSOR, mount_type: 'userpass', mount_path: 'auth/userpass/',
        metadata: { k: 'v' }, local: false, custom_metadata: {},
      },
    });
  });

  it('deletes an alias with 204 and keeps its entity', async () => {
    const { call, login } = setup();
    const { entityId, aliasId } = await login('alice');
    expect(status('delete', await call('delete', `entity-alias/id/${aliasId}`))).toBe(204);
    expect(status('read', await call('read', `entity-alias/id/${aliasId}`))).toBe(404);
    expect((await call('read', `entity/id/${entityId}`))?.data?.['aliases']).toEqual([]);
  });
});

describe('identity/lookup/entity', () => {
  it('finds an entity by ID, name, alias ID, or alias name and mount accessor', async () => {
    const { call, login } = setup();
    const { entityId, aliasId, entity } = await login('alice');
    const expected = (await call('read', `entity/id/${entityId}`))?.data;
    for (const criteria of [
      { id: entityId },
      { name: entity.name },
      { alias_id: aliasId },
      { alias_name: 'alice', alias_mount_accessor: ACCESSOR },
    ]) {
      const resp = await call('write', 'lookup/entity', criteria);
      expect(status('update', resp)).toBe(200);
      expect(resp?.data).toEqual(expected);
    }
  });

  it('answers 204 with no data when nothing matches', async () => {
    const { call, login } = setup();
    await login('alice');
    for (const criteria of [
      { id: 'nope' },
      { name: 'nope' },
      { alias_id: 'nope' },
      { alias_name: 'alice', alias_mount_accessor: 'auth_other_00000000' },
      { alias_name: 'nobody', alias_mount_accessor: ACCESSOR },
    ]) {
      const resp = await call('write', 'lookup/entity', criteria);
      expect(resp).toBeNull();
      expect(status('update', resp)).toBe(204);
    }
  });

  it('answers 400 naming the fields when criteria are missing, incomplete or conflicting', async () => {
    const { call } = setup();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /missing lookup criteria: give one of "id", "name", "alias_id", or "alias_name" with "alias_mount_accessor"/],
      [{ id: '' }, /missing lookup criteria/],
      [{ alias_name: 'alice' }, /missing "alias_mount_accessor": "alias_name" needs it/],
      [{ alias_mount_accessor: ACCESSOR }, /missing "alias_name": "alias_mount_accessor" needs it/],
      [{ id: 'x', name: 'y' }, /conflicting lookup criteria "id", "name"/],
      [{ alias_id: 'x', alias_name: 'a', alias_mount_accessor: ACCESSOR }, /conflicting lookup criteria "alias_id", "alias_name"\+"alias_mount_accessor"/],
    ];
    for (const [data, message] of cases) {
      const err = await failure(call('write', 'lookup/entity', data));
      expect(err.status).toBe(400);
      expect(err.message).toMatch(message);
    }
  });

  it('warns about parameters it does not know', async () => {
    const { call, login } = setup();
    const { entityId } = await login('alice');
    const resp = await call('write', 'lookup/entity', { id: entityId, type: 'entity' });
    expect(resp?.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [type]']);
  });
});

describe('identity backend routing', () => {
  it('refuses operations a path does not serve', async () => {
    const { call } = setup();
    expect((await failure(call('read', 'lookup/entity'))).status).toBe(405);
    expect((await failure(call('write', 'entity-alias/id/x', { name: 'n' }))).status).toBe(405);
    expect((await failure(call('read', 'nothing/here'))).status).toBe(404);
  });
});

describe('identity/entity writes', () => {
  it('refuses a name or ID with a lone surrogate with a 400 naming the field', async () => {
    const { call } = setup();
    const byId = await failure(call('write', 'entity', { id: '\udfff' }));
    expect([byId.status, byId.message]).toEqual([400, expect.stringMatching(/"id".*lone surrogate/)]);
    const byName = await failure(call('write', 'entity', { name: 'a\ud800' }));
    expect([byName.status, byName.message]).toEqual([400, expect.stringMatching(/"name".*lone surrogate/)]);
  });
});

import { Backend } from '../framework/backend';
import type { EngineFactory } from '../framework/engine';
import { definePath } from '../framework/types';
import { rig } from '../testing/core-rig';

/** An auth method that logs in whoever names themselves, with a team as metadata. */
const testAuth: EngineFactory = {
  type: 'testauth',
  kind: 'auth',
  create: () => new Backend('testauth', [
    definePath({
      pattern: 'login',
      unauthenticated: true,
      fields: { name: { type: 'string', required: true }, team: { type: 'string', default: 'none' }, ttl: { type: 'duration' } },
      operations: {
        update: async (_req, f) => ({
          login: { aliasName: f.string('name'), metadata: { team: f.string('team') }, policies: ['reader'], ttl: f.int('ttl') },
        }),
      },
    }),
  ]),
};

async function setup() {
  const r = await rig({ engines: [testAuth] });
  await r.ok('update', 'sys/auth/test', r.root, { type: 'testauth' });
  const accessor = (await r.ok('read', 'sys/auth', r.root)).body.data['test/'].accessor as string;
  const login = async (data: Record<string, unknown>) => (await r.ok('update', 'auth/test/login', undefined, data)).body.auth;
  return { r, accessor, login };
}

describe('logging in through an auth method', () => {
  it('issues an orphan token carrying a new entity, with the method\'s policies and metadata', async () => {
    const { r, login } = await setup();
    const auth = await login({ name: 'alice', team: 'blue', ttl: '1h' });
    expect(auth).toMatchObject({
      policies: ['default', 'reader'], metadata: { team: 'blue' }, lease_duration: 3600, orphan: true, token_type: 'service',
    });
    expect(auth.entity_id).toMatch(/^[0-9a-f-]{36}$/);
    const self = (await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data;
    expect(self).toMatchObject({ entity_id: auth.entity_id, path: 'auth/test/login', display_name: 'test-alice', meta: { team: 'blue' } });
  });

  it('finds the same entity on the next login and rewrites the alias when metadata changes', async () => {
    const { r, accessor, login } = await setup();
    const first = await login({ name: 'bob', team: 'red' });
    const second = await login({ name: 'bob', team: 'green' });
    expect(second.entity_id).toBe(first.entity_id);
    const entity = (await r.ok('update', 'identity/lookup/entity', r.root, { alias_name: 'bob', alias_mount_accessor: accessor })).body.data;
    expect(entity.id).toBe(first.entity_id);
    expect(entity.aliases).toHaveLength(1);
    expect(entity.aliases[0]).toMatchObject({ name: 'bob', mount_accessor: accessor, mount_path: 'auth/test/', metadata: { team: 'green' } });
    expect((await r.ok('read', `identity/entity/id/${first.entity_id}`, r.root)).body.data.aliases[0].canonical_id).toBe(first.entity_id);
    const other = await login({ name: 'carol' });
    expect(other.entity_id).not.toBe(first.entity_id);
  });

  it('refuses a login whose entity is disabled', async () => {
    const { r, login } = await setup();
    const { entity_id } = await login({ name: 'dave' });
    await r.ok('update', `identity/entity/id/${entity_id}`, r.root, { disabled: true });
    expect((await r.call('update', 'auth/test/login', undefined, { name: 'dave' })).status).toBe(403);
  });

  it('grants an entity\'s policies to its tokens, and refuses its tokens while it is disabled', async () => {
    const { r, login } = await setup();
    await r.policy('extra', 'path "sys/policies/acl/*" { capabilities = ["read"] }');
    const auth = await login({ name: 'frank' });
    expect((await r.call('read', 'sys/policies/acl/extra', auth.client_token)).status).toBe(403);
    await r.ok('update', `identity/entity/id/${auth.entity_id}`, r.root, { policies: ['extra'] });
    expect((await r.call('read', 'sys/policies/acl/extra', auth.client_token)).status).toBe(200);
    expect((await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data.identity_policies).toEqual(['extra']);
    await r.ok('update', `identity/entity/id/${auth.entity_id}`, r.root, { disabled: true });
    expect((await r.call('read', 'auth/token/lookup-self', auth.client_token)).status).toBe(403);
    await r.ok('update', `identity/entity/id/${auth.entity_id}`, r.root, { disabled: false });
    expect((await r.call('read', 'auth/token/lookup-self', auth.client_token)).status).toBe(200);
  });

  it('revokes the method\'s tokens and drops its aliases when the method is disabled', async () => {
    const { r, accessor, login } = await setup();
    const auth = await login({ name: 'erin' });
    await r.ok('delete', 'sys/auth/test', r.root);
    expect(await r.works(auth.client_token)).toBe(false);
    const found = await r.call('update', 'identity/lookup/entity', r.root, { alias_name: 'erin', alias_mount_accessor: accessor });
    expect(found.status).toBe(204);
    // The entity itself stays, as in Vault.
    expect((await r.ok('read', `identity/entity/id/${auth.entity_id}`, r.root)).body.data.aliases).toEqual([]);
  });
});

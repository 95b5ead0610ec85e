import { collectKeys, testing } from '@strongroom/core';
import { associationsPrefix } from './associations';
import { CLOUD3_CREDENTIALS, CREDENTIALS, valid } from './test-support/fixtures';
import { syncRig, type SyncRig } from './test-support/sync-rig';

const { data, failure } = testing;

let rig: SyncRig;
// Every reply of every test, searched for credentials at the end.
const replies: unknown[] = [];

beforeEach(async () => {
  rig = await syncRig();
  const call = rig.call;
  rig.call = async (...args) => {
    const reply = await call(...args);
    replies.push(reply);
    return reply;
  };
});
afterEach(() => rig.close());

const path = (type: string, name: string) => `sys/sync/destinations/${type}/${name}`;

async function bad(type: string, name: string, body: Record<string, unknown>): Promise<string> {
  const f = await failure(rig.call('update', path(type, name), body));
  expect(f.status).toBe(400);
  return f.message;
}

describe('sync destinations', () => {
  it('reads each type back in the read shape, every credential obfuscated, with its default options', async () => {
    await rig.call('update', path('cloud1-sm', 'aws1'), valid('cloud1-sm'));
    expect(data(await rig.call('read', path('cloud1-sm', 'aws1')))).toEqual({
      name: 'aws1', type: 'cloud1-sm',
      connection_details: { access_key_id: '*****', secret_access_key: '*****', region: 'us-east-1' },
      options: { granularity_level: 'secret-path', secret_name_template: 'vault/{{ .MountAccessor }}/{{ .SecretPath }}', custom_tags: {} },
    });

    await rig.call('update', path('cloud2-kv', 'az1'), valid('cloud2-kv'));
    const az = data(await rig.call('read', path('cloud2-kv', 'az1')));
    expect(az['connection_details']).toEqual({
      key_vault_uri: 'https://my-vault.vault.azure.net/', client_id: '11111111-2222-3333-4444-555555555555',
      client_secret: '*****', tenant_id: 'contoso.onmicrosoft.com', cloud: 'cloud',
    });
    expect(az['options']).toMatchObject({ granularity_level: 'secret-path', custom_tags: {} });

    await rig.call('update', path('cloud3-sm', 'gcp1'), valid('cloud3-sm'));
    expect(data(await rig.call('read', path('cloud3-sm', 'gcp1')))['connection_details']).toEqual({ credentials: '*****' });

    await rig.call('update', path('repohost', 'gh1'), valid('repohost'));
    expect(data(await rig.call('read', path('repohost', 'gh1')))).toEqual({
      name: 'gh1', type: 'repohost',
      connection_details: { access_token: '*****', repository_owner: 'acme', repository_name: 'web-app', environment_name: '' },
      options: { granularity_level: 'secret-key', secret_name_template: expect.stringContaining('.SecretKey'), custom_tags: {} },
    });

    await rig.call('update', path('deployhost-project', 'vc1'), valid('deployhost-project'));
    const vc = data(await rig.call('read', path('deployhost-project', 'vc1')));
    expect(vc['connection_details']).toEqual({
      access_token: '*****', project_id: 'prj_123', team_id: 'team_a', deployment_environments: ['production', 'preview'],
    });
    expect(vc['options']).toMatchObject({ granularity_level: 'secret-key' });
  });

  it('answers a write with the read view', async () => {
    const reply = await rig.call('update', path('repohost', 'gh1'), valid('repohost'));
    expect(reply.status).toBe(200);
    expect(data(reply)).toEqual(data(await rig.call('read', path('repohost', 'gh1'))));
  });

  it('shows a cloud1-sm destination without keys (the SDK chain) with empty credentials', async () => {
    await rig.call('update', path('cloud1-sm', 'chain'), {});
    expect(data(await rig.call('read', path('cloud1-sm', 'chain')))['connection_details']).toEqual({
      access_key_id: '', secret_access_key: '', region: '',
    });
  });

  it('updates only the fields a write names', async () => {
    await rig.call('update', path('deployhost-project', 'vc'), { ...valid('deployhost-project'), custom_tags: undefined });
    await rig.ok('update', path('deployhost-project', 'vc'), { deployment_environments: ['development'] });
    await rig.ok('update', path('deployhost-project', 'vc'), { secret_name_template: 'APP_{{ .SecretKey | uppercase }}' });
    const d = data(await rig.call('read', path('deployhost-project', 'vc')));
    expect(d['connection_details']).toEqual({ access_token: '*****', project_id: 'prj_123', team_id: 'team_a', deployment_environments: ['development'] });
    expect(d['options']).toEqual({ granularity_level: 'secret-key', secret_name_template: 'APP_{{ .SecretKey | uppercase }}', custom_tags: {} });

    await rig.ok('update', path('cloud1-sm', 'aws'), { ...valid('cloud1-sm'), custom_tags: { team: 'payments' } });
    await rig.ok('update', path('cloud1-sm', 'aws'), { region: 'eu-west-1' });
    const aws = data(await rig.call('read', path('cloud1-sm', 'aws')));
    expect(aws['connection_details']).toEqual({ access_key_id: '*****', secret_access_key: '*****', region: 'eu-west-1' });
    expect(aws['options']).toMatchObject({ custom_tags: { team: 'payments' } });
  });

  it('keeps a default template in step with the granularity, and an empty template goes back to the default', async () => {
    await rig.ok('update', path('cloud3-sm', 'g'), valid('cloud3-sm'));
    await rig.ok('update', path('cloud3-sm', 'g'), { granularity: 'secret-key' });
    let options = data(await rig.call('read', path('cloud3-sm', 'g')))['options'] as Record<string, unknown>;
    expect(options['granularity_level']).toBe('secret-key');
    expect(options['secret_name_template']).toContain('.SecretKey');
    await rig.ok('update', path('cloud3-sm', 'g'), { secret_name_template: 'x_{{ .SecretKey }}' });
    await rig.ok('update', path('cloud3-sm', 'g'), { secret_name_template: '', granularity: 'secret-path' });
    options = data(await rig.call('read', path('cloud3-sm', 'g')))['options'] as Record<string, unknown>;
    expect(options['secret_name_template']).toBe('vault_{{ .MountAccessor }}_{{ .SecretPath | replace "/" "_" | replace "." "_" }}');
  });

  it('lists names by type and every destination grouped by type (none: 404, as for every list)', async () => {
    expect((await rig.call('list', 'sys/sync/destinations/')).status).toBe(404);
    expect((await rig.call('list', 'sys/sync/destinations/repohost/')).status).toBe(404);
    for (const name of ['b', 'a']) await rig.ok('update', path('repohost', name), valid('repohost'));
    await rig.ok('update', path('cloud1-sm', 'x'), valid('cloud1-sm'));
    expect(data(await rig.call('list', 'sys/sync/destinations/repohost/'))).toEqual({ keys: ['a', 'b'], total_destinations: 2 });
    expect(data(await rig.call('list', 'sys/sync/destinations/'))).toEqual({
      keys: ['cloud1-sm/', 'repohost/'], key_info: { 'cloud1-sm/': ['x'], 'repohost/': ['a', 'b'] }, total_destinations: 3,
    });
    expect((await failure(rig.call('list', 'sys/sync/destinations/cloud9/'))).message).toContain('"type"');
  });

  it('deletes (purge accepted), and deleting what is not there succeeds', async () => {
    await rig.ok('update', path('repohost', 'gh'), valid('repohost'));
    expect((await rig.call('delete', path('repohost', 'gh'), { purge: true })).status).toBe(204);
    expect((await rig.call('read', path('repohost', 'gh'))).status).toBe(404);
    expect((await rig.call('delete', path('repohost', 'gh'))).status).toBe(204);
  });

  it('refuses to delete a destination while the association store holds associations for it, without purge', async () => {
    await rig.ok('update', path('cloud1-sm', 'aws'), valid('cloud1-sm'));
    const key = `${associationsPrefix({ namespaceId: 'root', type: 'cloud1-sm', name: 'aws' })}kv_1/app`;
    await rig.core.barrier.put(key, Buffer.from('{}'));
    const refused = await failure(rig.call('delete', path('cloud1-sm', 'aws')));
    expect(refused).toEqual({ status: 400, message: expect.stringContaining('still manages 1 association(s)') });
    expect((await rig.call('read', path('cloud1-sm', 'aws'))).status).toBe(200);
    await rig.core.barrier.delete(key);
    expect((await rig.call('delete', path('cloud1-sm', 'aws'))).status).toBe(204);
  });

  it('keeps destinations across a restart, behind the barrier', async () => {
    await rig.ok('update', path('cloud3-sm', 'g'), valid('cloud3-sm'));
    expect(await rig.core.barrier.get('sys/sync/destinations/root/cloud3-sm/g')).not.toBeNull();
    const physical: string[] = [];
    const keys = await collectKeys(rig.storage, '');
    expect(keys.length).toBeGreaterThan(3);
    for (const key of keys) physical.push(key, String(await rig.storage.get(key)));
    expect(physical.join('\n')).not.toContain('SYNCFAKEKEY');
    await rig.restart();
    expect(data(await rig.call('read', path('cloud3-sm', 'g')))['connection_details']).toEqual({ credentials: '*****' });
  });

  it('keeps each namespace\'s destinations apart', async () => {
    await rig.ok('update', 'sys/namespaces/team', {});
    await rig.ok('update', `team/${path('repohost', 'gh')}`, valid('repohost'));
    expect((await rig.call('read', path('repohost', 'gh'))).status).toBe(404);
    expect(data(await rig.call('list', 'team/sys/sync/destinations/repohost/'))['keys']).toEqual(['gh']);
  });

  describe('bad input: 400 naming the field and the rule', () => {
    it('an unknown type', async () => {
      expect(await bad('cloud9', 'x', {})).toContain('invalid value for "type": must be one of cloud1-sm, cloud2-kv, cloud3-sm, repohost, deployhost-project');
      expect((await failure(rig.call('read', path('cloud9', 'x')))).status).toBe(400);
    });

    it.each([
      ['cloud2-kv', 'key_vault_uri'], ['cloud2-kv', 'client_id'], ['cloud2-kv', 'client_secret'], ['cloud2-kv', 'tenant_id'],
      ['cloud3-sm', 'credentials'], ['repohost', 'access_token'], ['repohost', 'repository_owner'], ['repohost', 'repository_name'],
      ['deployhost-project', 'access_token'], ['deployhost-project', 'project_id'], ['deployhost-project', 'deployment_environments'],
    ])('%s without %s', async (type, field) => {
      const body = { ...valid(type) };
      delete body[field];
      expect(await bad(type, 'x', body)).toBe(`missing required field "${field}" for destination type ${type}`);
    });

    it('a field of another type', async () => {
      expect(await bad('repohost', 'x', { ...valid('repohost'), region: 'us-east-1' })).toBe('"region" is a field of destination type cloud1-sm, not of repohost');
      expect(await bad('cloud1-sm', 'x', { access_token: 'abc' })).toContain('"access_token" is a field of destination type repohost');
    });

    it('a bad granularity or template, and SecretKey only with secret-key', async () => {
      expect(await bad('repohost', 'x', { ...valid('repohost'), granularity: 'secret-value' })).toBe('invalid value for "granularity": must be one of secret-path, secret-key');
      expect(await bad('cloud1-sm', 'x', { secret_name_template: '{{ .Nope }}' })).toContain('"secret_name_template": unknown placeholder');
      expect(await bad('cloud1-sm', 'x', { secret_name_template: 'a/{{ .SecretKey }}' })).toContain('.SecretKey is only known with granularity secret-key');
      expect(await bad('repohost', 'x', { ...valid('repohost'), secret_name_template: 'A_{{ .SecretPath }}' })).toContain('must use .SecretKey');
      await rig.ok('update', path('repohost', 'gh'), valid('repohost'));
      // Switching an explicit per-key template to secret-path would leave it naming a key that is not there.
      await rig.ok('update', path('repohost', 'gh'), { secret_name_template: 'K_{{ .SecretKey }}' });
      expect(await bad('repohost', 'gh', { granularity: 'secret-path' })).toContain('.SecretKey is only known with granularity secret-key');
    });

    it('custom_tags on a type without tags, or tags a cloud refuses', async () => {
      expect(await bad('repohost', 'x', { ...valid('repohost'), custom_tags: { a: 'b' } })).toContain('"custom_tags": destination type repohost has no tags');
      expect(await bad('deployhost-project', 'x', { ...valid('deployhost-project'), custom_tags: {} })).toContain('has no tags');
      expect(await bad('cloud3-sm', 'x', { ...valid('cloud3-sm'), custom_tags: { Team: 'a' } })).toContain('"custom_tags": destination type cloud3-sm takes');
      const many = Object.fromEntries(Array.from({ length: 15 }, (_v, i) => [`k${i}`, 'v']));
      expect(await bad('cloud2-kv', 'x', { ...valid('cloud2-kv'), custom_tags: many })).toContain('at most 14 tags');
      expect(await bad('cloud1-sm', 'x', { custom_tags: { a: 1 } })).toContain('"custom_tags"');
    });

    it.each([
      ['cloud3-sm', { credentials: '{"client_email":"a@b"}' }, 'credentials', '"private_key"'],
      ['cloud3-sm', { credentials: JSON.stringify({ private_key: '-----BEGIN PRIVATE KEY-----\nx' }) }, 'credentials', '"client_email"'],
      ['cloud3-sm', { credentials: 'not json' }, 'credentials', 'JSON'],
      ['cloud3-sm', { credentials: '@/etc/service-account.json' }, 'credentials', 'JSON contents'],
      ['cloud1-sm', { access_key_id: 'AKIASYNCEXAMPLE00001' }, 'secret_access_key', 'together'],
      ['cloud1-sm', { access_key_id: 'short', secret_access_key: 'x'.repeat(40) }, 'access_key_id', 'upper-case letters and digits'],
      ['cloud1-sm', { region: 'Mars' }, 'region', 'region name'],
      ['cloud2-kv', { ...valid('cloud2-kv'), key_vault_uri: 'http://my-vault.vault.azure.net/' }, 'key_vault_uri', 'https'],
      ['cloud2-kv', { ...valid('cloud2-kv'), key_vault_uri: 'https://169.254.169.254/' }, 'key_vault_uri', '.vault.azure.net'],
      ['cloud2-kv', { ...valid('cloud2-kv'), key_vault_uri: 'https://my-vault.vault.azure.net.evil.example/' }, 'key_vault_uri', '.vault.azure.net'],
      ['cloud2-kv', { ...valid('cloud2-kv'), key_vault_uri: 'https://u:p@my-vault.vault.azure.net/' }, 'key_vault_uri', 'user info'],
      ['cloud2-kv', { ...valid('cloud2-kv'), key_vault_uri: 'https://my-vault.vault.azure.net/secrets' }, 'key_vault_uri', 'a path'],
      ['cloud2-kv', { ...valid('cloud2-kv'), cloud: 'china' }, 'key_vault_uri', '.vault.azure.cn'],
      ['cloud2-kv', { ...valid('cloud2-kv'), cloud: 'moon' }, 'cloud', 'one of cloud, china, usgovernment'],
      ['cloud2-kv', { ...valid('cloud2-kv'), cloud: 'constructor' }, 'cloud', 'one of cloud, china, usgovernment'],
      ['cloud2-kv', { ...valid('cloud2-kv'), cloud: 'toString' }, 'cloud', 'one of cloud, china, usgovernment'],
      ['cloud2-kv', { ...valid('cloud2-kv'), client_secret: 'has a space' }, 'client_secret', 'without spaces'],
      ['repohost', { ...valid('repohost'), repository_owner: '-acme' }, 'repository_owner', 'single "-"'],
      ['repohost', { ...valid('repohost'), repository_name: '..' }, 'repository_name', 'not "." or ".."'],
      ['repohost', { ...valid('repohost'), access_token: 'tab\tinside' }, 'access_token', 'printable'],
      ['repohost', { ...valid('repohost'), environment_name: 'prod\nuction' }, 'environment_name', 'control characters'],
      ['repohost', { ...valid('repohost'), environment_name: 'e'.repeat(256) }, 'environment_name', 'at most 255'],
      ['deployhost-project', { ...valid('deployhost-project'), deployment_environments: ['staging'] }, 'deployment_environments', 'development, preview, production'],
      ['deployhost-project', { ...valid('deployhost-project'), deployment_environments: ['preview', 'preview'] }, 'deployment_environments', 'repeat'],
      ['deployhost-project', { ...valid('deployhost-project'), team_id: 'a b' }, 'team_id', 'letters'],
    ])('%s with a bad %#', async (type, body, field, rule) => {
      const message = await bad(type, 'x', body as Record<string, unknown>);
      expect(message).toContain(`"${field}"`);
      expect(message).toContain(rule);
    });

    it('a name that breaks the path-name rules', async () => {
      expect(await bad('repohost', '..', valid('repohost'))).toContain('invalid value for "name"');
      expect(await bad('repohost', 'a'.repeat(257), valid('repohost'))).toContain('longer than the limit');
      expect(await bad('repohost', 'tab\u0001', valid('repohost'))).toContain('control characters');
    });

    it('purge on a write', async () => {
      expect(await bad('repohost', 'x', { ...valid('repohost'), purge: true })).toContain('"purge"');
    });

    it('leaves nothing stored after a refused write', async () => {
      await bad('cloud3-sm', 'x', { credentials: '{}' });
      expect((await rig.call('read', path('cloud3-sm', 'x'))).status).toBe(404);
      await rig.ok('update', path('cloud3-sm', 'x'), valid('cloud3-sm'));
      await bad('cloud3-sm', 'x', { credentials: '{}' });
      expect((await rig.call('read', path('cloud3-sm', 'x'))).status).toBe(200);
    });
  });

  it('accepts a key vault origin the operator allowed, but no other non-cloud address', async () => {
    await rig.ok('update', path('cloud2-kv', 'emu'), { ...valid('cloud2-kv'), key_vault_uri: 'https://127.0.0.1:8443' });
    expect(await bad('cloud2-kv', 'emu2', { ...valid('cloud2-kv'), key_vault_uri: 'https://127.0.0.1:8444' })).toContain('"key_vault_uri"');
  });

  afterAll(() => {
    // No credential in any reply: reads, lists, writes and every error above.
    const text = JSON.stringify(replies);
    expect(replies.length).toBeGreaterThan(50);
    for (const secret of CREDENTIALS) expect(text).not.toContain(secret);
    expect(text).not.toContain(CLOUD3_CREDENTIALS);
  });
});

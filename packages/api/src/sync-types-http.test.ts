import { Cloud1Emulator, DeployhostProjectEmulator } from '@strongroom/emulators';
import { defaultClients, syncSettingsFromEnv, type Destination, type DestinationType, type Granularity } from '@strongroom/sync';
import { startCloudEmulators, type CloudEmulators } from './test-support/cloud-emulators';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';
import { eventually, operatorSettings } from './test-support/sync-support';

/** One destination type as the matrix drives it: how to make a destination, and what its emulator's admin view holds. */
interface TypeCase {
  type: DestinationType;
  /** Separates the parts of a templated name: key vault names take no "_". */
  sep: string;
  /** A fresh destination's connection fields (credentials included) against the emulator. */
  connection(): Record<string, unknown>;
  /** The fields a read shows in the clear; the rest must read `*****`. */
  plain: readonly string[];
  /** Every external secret the emulator holds now, by the name as the sync made it, with its current value. */
  external(): Record<string, string>;
  /** External versions of one name, where the store keeps versions. */
  versions?(name: string): number;
}

/**
 * The per-type proof of secret sync through HTTP on one real server and the five destination
 * emulators: for each type, both granularities with a template of our own (the names the
 * emulator shows are exactly the template's), set, update, delete, undelete, destroy and
 * remove, the client's read back, obfuscated reads and the delete refused while associated.
 */
describe('secret sync per destination type over HTTP', () => {
  let t: TestServer;
  let root: string;
  let accessor: string;
  let cloud1: Cloud1Emulator;
  let clouds: CloudEmulators;
  let deployhost: DeployhostProjectEmulator;
  const settings = operatorSettings();
  const env = settings.set;

  beforeAll(async () => {
    cloud1 = new Cloud1Emulator();
    const { api } = await cloud1.start({ listen: '127.0.0.1:0' });
    clouds = await startCloudEmulators(env);
    deployhost = await DeployhostProjectEmulator.start();
    // Operator settings, read when the server starts.
    env('AWS_ENDPOINT_URL_SECRETS_MANAGER', api);
    env('STRONGROOM_DEPLOYHOST_API_URL', deployhost.url);
    t = await startTestServer();
    root = await initAndUnseal(t);
    accessor = (await send('GET', 'sys/mounts/secret')).json.data.accessor as string;
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    await cloud1?.stop();
    await clouds?.close();
    await deployhost?.close();
    settings.restore();
  });

  const send = (method: string, path: string, body?: unknown) => call(t.url, method, path, { token: root, ...(body !== undefined ? { body } : {}) });

  const cases: TypeCase[] = [
    {
      type: 'cloud1-sm', sep: '_', plain: ['region'],
      connection() {
        const { accountId } = cloud1.createAccount({});
        const keys = cloud1.issueRootCredentials(accountId);
        return { access_key_id: keys.accessKeyId, secret_access_key: keys.secretAccessKey, region: 'us-east-1' };
      },
      external: () => Object.fromEntries(cloud1.secretsManagerSecrets().filter((s) => s.deletionDate === undefined)
        .map((s) => [s.name, s.versions.find((v) => v.stages.includes('AWSCURRENT'))?.secretString ?? ''])),
      versions: (name) => cloud1.secretsManagerSecrets().find((s) => s.name === name)?.versions.length ?? 0,
    },
    {
      type: 'cloud2-kv', sep: '-', plain: ['key_vault_uri', 'client_id', 'tenant_id', 'cloud'],
      connection() {
        const app = clouds.kv.addClient();
        return { key_vault_uri: clouds.kv.url, tenant_id: clouds.kv.tenantId, client_id: app.clientId, client_secret: app.clientSecret };
      },
      external: () => Object.fromEntries(clouds.kv.secrets().filter((s) => !s.deleted).map((s) => [s.name, s.versions.at(-1)?.value ?? ''])),
      versions: (name) => clouds.kv.secrets().find((s) => s.name === name)?.versions.length ?? 0,
    },
    {
      type: 'cloud3-sm', sep: '_', plain: [],
      connection: () => ({ credentials: JSON.stringify(clouds.sm.createServiceAccount('matrix-project')) }),
      external: () => Object.fromEntries(clouds.sm.secrets().map((s) => [
        s.name.replace(/^projects\/matrix-project\/secrets\//, ''), s.versions.filter((v) => v.state === 'ENABLED').at(-1)?.value ?? '',
      ])),
      versions: (name) => clouds.sm.secrets().find((s) => s.name.endsWith(`/secrets/${name}`))?.versions.filter((v) => v.state !== 'DESTROYED').length ?? 0,
    },
    {
      type: 'repohost', sep: '_', plain: ['repository_owner', 'repository_name', 'environment_name'],
      connection() {
        if (!clouds.repohost.repositories().some((r) => r.full_name === 'acme/matrix')) clouds.repohost.createRepository('acme/matrix');
        return { access_token: clouds.repohost.addToken({ repositories: ['acme/matrix'] }), repository_owner: 'acme', repository_name: 'matrix' };
      },
      external: () => Object.fromEntries((clouds.repohost.repositories().find((r) => r.full_name === 'acme/matrix')?.secrets ?? []).map((s) => [s.name, s.value])),
    },
    {
      type: 'deployhost-project', sep: '_', plain: ['project_id', 'team_id', 'deployment_environments'],
      connection() {
        const { token } = deployhost.createToken({ teams: ['team_m'] });
        if (!deployhost.projects().some((p) => p.id === 'prj_matrix')) deployhost.createProject({ name: 'matrix', id: 'prj_matrix', teamId: 'team_m' });
        return { access_token: token, project_id: 'prj_matrix', team_id: 'team_m', deployment_environments: ['production'] };
      },
      external: () => Object.fromEntries((deployhost.projects().find((p) => p.id === 'prj_matrix')?.envs ?? []).map((e) => [e.key, e.value])),
    },
  ];

  it.each(cases.map((c) => [c.type, c] as const))('%s: both granularities with a template, every trigger, read back, obfuscated, delete refused', async (type, c) => {
    const s = c.sep;
    const slug = type.replace(/-/g, '').toUpperCase();
    const secret = `${slug.toLowerCase()}/cfg`;
    const templates: Record<Granularity, string> = {
      'secret-path': `SR${s}{{ .DestinationName | uppercase }}${s}{{ .SecretPath | replace "/" "${s}" | uppercase }}`,
      'secret-key': `SR${s}{{ .DestinationName | uppercase }}${s}{{ .SecretPath | replace "/" "${s}" | uppercase }}${s}{{ .SecretKey | uppercase }}`,
    };
    const dests: Record<Granularity, Destination> = {
      'secret-path': { name: 'p', type, connection: c.connection(), granularity: 'secret-path', secret_name_template: templates['secret-path'], custom_tags: {} },
      'secret-key': { name: 'k', type, connection: c.connection(), granularity: 'secret-key', secret_name_template: templates['secret-key'], custom_tags: {} },
    };
    const pathName = `SR${s}P${s}${slug}${s}CFG`;
    const keyName = (key: string) => `SR${s}K${s}${slug}${s}CFG${s}${key}`;

    for (const d of Object.values(dests)) {
      const made = await send('POST', `sys/sync/destinations/${type}/${d.name}`, { ...d.connection, granularity: d.granularity, secret_name_template: d.secret_name_template });
      expect([d.name, made.status]).toEqual([d.name, 200]);
      // Reads show every credential as `*****` and the options as set.
      const read = (await send('GET', `sys/sync/destinations/${type}/${d.name}`)).json.data;
      expect(read.options).toMatchObject({ granularity_level: d.granularity, secret_name_template: d.secret_name_template });
      for (const [field, value] of Object.entries(read.connection_details as Record<string, unknown>)) {
        if (c.plain.includes(field)) continue;
        expect([field, value]).toEqual([field, '*****']);
      }
      for (const value of Object.values(d.connection)) {
        if (typeof value === 'string' && value.length > 8 && !c.plain.some((f) => d.connection[f] === value)) expect(JSON.stringify(read)).not.toContain(value);
      }
    }

    const v1 = { user: 'u1', pass: 'p1' };
    expect((await send('POST', `secret/data/${secret}`, { data: v1 })).status).toBe(200);
    for (const d of Object.values(dests)) {
      expect((await send('POST', `sys/sync/destinations/${type}/${d.name}/associations/set`, { mount: 'secret', secret_name: secret })).status).toBe(200);
    }
    const synced = { [pathName]: JSON.stringify(v1), [keyName('USER')]: 'u1', [keyName('PASS')]: 'p1' };
    // Exactly the names the templates yield, nothing else.
    await eventually('the first sync', c.external, (e) => JSON.stringify(sorted(e)) === JSON.stringify(sorted(synced)));
    await eventually('SYNCED', () => send('GET', `sys/sync/destinations/${type}/k/associations`), (r) => {
      const all = Object.values(r.json.data.associated_secrets as Record<string, { sync_status: string }>);
      return all.length === 2 && all.every((a) => a.sync_status === 'SYNCED');
    });
    expect((await send('GET', `sys/sync/destinations/${type}/p/associations`)).json.data.associated_secrets[`${accessor}/${secret}`]).toMatchObject({ sync_status: 'SYNCED' });

    // The destination cannot go while it has associations.
    for (const d of Object.values(dests)) {
      const refused = await send('DELETE', `sys/sync/destinations/${type}/${d.name}`);
      expect(refused.status).toBe(400);
      expect(refused.json.errors[0]).toMatch(/associat/);
    }

    // A new KV version: a new external version for the path, the dropped key removed.
    const v2 = { user: 'u2' };
    await send('POST', `secret/data/${secret}`, { data: v2 });
    const updated = { [pathName]: JSON.stringify(v2), [keyName('USER')]: 'u2' };
    await eventually('the update', c.external, (e) => JSON.stringify(sorted(e)) === JSON.stringify(sorted(updated)));
    if (c.versions) expect(c.versions(pathName)).toBe(2);

    // The client's read, as the reconciliation uses it, against the emulator.
    const settings = syncSettingsFromEnv(process.env);
    for (const [d, name, want] of [
      [dests['secret-path'], pathName, JSON.stringify(v2)], [dests['secret-key'], keyName('USER'), 'u2'], [dests['secret-key'], keyName('PASS'), undefined],
    ] as const) {
      const client = defaultClients(d, settings);
      try {
        const got = await client.read(name);
        if (want === undefined) expect([name, got]).toEqual([name, { exists: false }]);
        else expect([name, got]).toEqual([name, { exists: true, value: type === 'repohost' ? null : want }]);
      } finally {
        await client.close?.();
      }
    }

    await send('DELETE', `secret/data/${secret}`);
    await eventually('the delete', c.external, (e) => Object.keys(e).length === 0);
    expect((await send('POST', `secret/undelete/${secret}`, { versions: [2] })).status).toBe(204);
    await eventually('the undelete', c.external, (e) => JSON.stringify(sorted(e)) === JSON.stringify(sorted(updated)));
    expect((await send('POST', `secret/destroy/${secret}`, { versions: [2] })).status).toBe(204);
    await eventually('the destroy', c.external, (e) => Object.keys(e).length === 0);

    const v3 = { user: 'u3', pass: 'p3' };
    await send('POST', `secret/data/${secret}`, { data: v3 });
    const again = { [pathName]: JSON.stringify(v3), [keyName('USER')]: 'u3', [keyName('PASS')]: 'p3' };
    await eventually('the write after the destroy', c.external, (e) => JSON.stringify(sorted(e)) === JSON.stringify(sorted(again)));

    for (const d of Object.values(dests)) {
      expect((await send('POST', `sys/sync/destinations/${type}/${d.name}/associations/remove`, { mount: 'secret', secret_name: secret })).status).toBe(200);
    }
    await eventually('the unsync', c.external, (e) => Object.keys(e).length === 0);
    for (const d of Object.values(dests)) expect((await send('DELETE', `sys/sync/destinations/${type}/${d.name}`)).status).toBe(204);
  }, 90_000);

  it('removes the associations of a KV v2 mount disabled, and of a namespace deleted, unsyncing their secrets', async () => {
    const inNs = (ns: string) => (method: string, path: string, body?: unknown) =>
      call(t.url, method, path, { token: root, headers: ns ? { 'x-vault-namespace': ns } : {}, ...(body !== undefined ? { body } : {}) });
    const { accountId } = cloud1.createAccount({});
    const keys = cloud1.issueRootCredentials(accountId);
    const names = () => cloud1.secretsManagerSecrets().filter((s) => s.deletionDate === undefined && s.accountId === accountId).map((s) => s.name).sort();
    expect((await send('POST', 'sys/namespaces/team', {})).status).toBeLessThan(300);

    const made: Array<{ ns: string; mount: string; accessor: string }> = [];
    for (const [ns, mount] of [['', 'gone'], ['', 'kept'], ['team', 'gone']] as const) {
      const at = inNs(ns);
      expect((await at('POST', `sys/mounts/${mount}`, { type: 'kv', options: { version: '2' } })).status).toBe(204);
      const acc = (await at('GET', `sys/mounts/${mount}`)).json.data.accessor as string;
      if (!made.some((m) => m.ns === ns)) {
        expect((await at('POST', 'sys/sync/destinations/cloud1-sm/aws', { access_key_id: keys.accessKeyId, secret_access_key: keys.secretAccessKey, region: 'us-east-1' })).status).toBe(200);
      }
      await at('POST', `${mount}/data/app`, { data: { a: ns || 'root' } });
      expect((await at('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/set', { mount, secret_name: 'app' })).status).toBe(200);
      made.push({ ns, mount, accessor: acc });
    }
    const [gone, kept, teamGone] = made.map((m) => `vault/${m.accessor}/app`) as [string, string, string];
    await eventually('the first syncs', names, (n) => JSON.stringify(n) === JSON.stringify([gone, kept, teamGone].sort()));

    // Disabling the mount takes its associations, and so the secrets they made.
    expect((await send('DELETE', 'sys/mounts/gone')).status).toBe(204);
    await eventually('the unsync of the disabled mount', names, (n) => JSON.stringify(n) === JSON.stringify([kept, teamGone].sort()));
    const atRoot = (await send('GET', 'sys/sync/destinations/cloud1-sm/aws/associations')).json.data.associated_secrets;
    expect(Object.keys(atRoot)).toEqual([`${made[1]!.accessor}/app`]);
    expect((await send('LIST', 'sys/sync/associations')).json.data.key_info).not.toHaveProperty(`${made[0]!.accessor}/`);

    // A namespace goes once its mounts are disabled; then its destinations, credentials and all, go too.
    const team = inNs('team');
    const teamId = (await send('GET', 'sys/namespaces/team')).json.data.id as string;
    expect((await team('DELETE', 'sys/mounts/gone')).status).toBe(204);
    await eventually('the unsync in the namespace', names, (n) => JSON.stringify(n) === JSON.stringify([kept]));
    expect((await team('GET', 'sys/sync/destinations/cloud1-sm/aws/associations')).json.data.associated_secrets).toEqual({});
    const stored = () => t.server.core.barrier.list('sys/sync/destinations/');
    expect(await stored()).toContain(`${teamId}/`);
    expect((await send('DELETE', 'sys/namespaces/team')).status).toBeLessThan(300);
    await eventually('the namespace\'s destination deleted', stored, (keys) => !keys.includes(`${teamId}/`));
    // The root namespace's destination, still associated, stays.
    expect(await stored()).toContain('root/');

    await send('POST', 'sys/sync/destinations/cloud1-sm/aws/associations/remove', { mount: 'kept', secret_name: 'app' });
    await eventually('the last unsync', names, (n) => n.length === 0);
    expect((await send('DELETE', 'sys/sync/destinations/cloud1-sm/aws')).status).toBe(204);
  }, 60_000);
});

function sorted(e: Record<string, string>): Array<[string, string]> {
  return Object.entries(e).sort(([a], [b]) => a.localeCompare(b));
}

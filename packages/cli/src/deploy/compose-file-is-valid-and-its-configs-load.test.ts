/**
 * No Docker engine runs in CI, so the compose file is proved without one: it must be valid
 * against the Compose Specification's JSON schema, every config it hands a node must load with
 * the server's own loader under that node's environment, and the topology must be the one the
 * deployment promises (names, networks, volumes, health checks, no secret in the file).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { loadConfigFile } from '@strongroom/api';

const ROOT = resolve(__dirname, '../../../..');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const TOPOLOGY_FILE = join(ROOT, 'deploy', 'topology.json');
// Debian's package (scripts/test-deps.js installs it); `config` parses, resolves and validates
// the file as `up` would, and needs no Docker engine.
const DOCKER_COMPOSE = '/usr/bin/docker-compose';

const PRIMARY = ['primary-1', 'primary-2', 'primary-3'];
const DR = ['dr-1', 'dr-2', 'dr-3'];
const NODES = ['unseal', ...PRIMARY, ...DR, 'perf-1'];
const EMULATORS = ['s3', 'azure', 'gcs'];
const SERVICES = [...NODES, ...EMULATORS, 'bootstrap'];
const SEALED_BY_TRANSIT = NODES.filter((n) => n !== 'unseal');

interface Service {
  image?: string;
  build?: unknown;
  hostname?: string;
  command?: string[];
  environment?: Record<string, string> | string[];
  volumes?: Array<string | { type?: string; source?: string; target: string; read_only?: boolean }>;
  networks?: string[] | Record<string, unknown>;
  ports?: Array<string | { host_ip?: string; published?: string | number; target: number }>;
  healthcheck?: { test?: string | string[] };
  depends_on?: string[] | Record<string, { condition: string }>;
  restart?: string;
}

interface ComposeFile {
  services: Record<string, Service>;
  networks?: Record<string, unknown>;
  volumes?: Record<string, unknown>;
}

interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
  bind: boolean;
}

function loadCompose(): ComposeFile {
  // Compose resolves YAML merge keys (`<<: *node`) before it validates, and so does this.
  return parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as ComposeFile;
}

/** The official compose-spec schema, as the dclint package ships it (kept in step with compose-spec). */
function composeSchemaValidator(): ValidateFunction {
  const schemaFile = join(dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json');
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
  // Its `$schema` names draft-07 by an https URL Ajv does not know by that spelling; Ajv's
  // default dialect is draft-07 anyway.
  delete schema['$schema'];
  return new Ajv({ allErrors: true, strict: false }).compile(schema);
}

/** `docker-compose config -q` on `text`, given on stdin, as if it were the file at the root. */
function composeConfig(text: string): { status: number | null; stderr: string } {
  const env = { ...process.env };
  // Nothing here may reach for a Docker engine, whatever the environment points at.
  delete env['DOCKER_HOST'];
  const r = spawnSync(DOCKER_COMPOSE, ['--project-directory', ROOT, '-f', '-', 'config', '-q'], {
    cwd: ROOT, input: text, encoding: 'utf8', env, timeout: 60_000,
  });
  return { status: r.status, stderr: `${r.error?.message ?? ''}${r.stderr ?? ''}` };
}

function describeErrors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`).join('\n');
}

function envOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (!Array.isArray(env)) return { ...env };
  return Object.fromEntries(env.map((kv) => {
    const at = kv.indexOf('=');
    return at < 0 ? [kv, ''] : [kv.slice(0, at), kv.slice(at + 1)];
  }));
}

function mountsOf(service: Service): Mount[] {
  return (service.volumes ?? []).map((v) => {
    if (typeof v !== 'string') {
      const source = v.source ?? '';
      return { source, target: v.target, readOnly: v.read_only === true, bind: v.type === 'bind' };
    }
    const [source = '', target = '', mode = ''] = v.split(':');
    return { source, target, readOnly: mode.split(',').includes('ro'), bind: source.startsWith('.') || source.startsWith('/') };
  });
}

function networksOf(service: Service): string[] {
  const n = service.networks ?? [];
  return Array.isArray(n) ? n : Object.keys(n);
}

function healthTest(service: Service): string {
  const test = service.healthcheck?.test ?? [];
  return Array.isArray(test) ? test.join(' ') : test;
}

/** The host file that a path inside the container comes from, through a bind mount. */
function hostFileFor(service: Service, containerPath: string): string | undefined {
  for (const m of mountsOf(service)) {
    if (!m.bind) continue;
    if (containerPath === m.target || containerPath.startsWith(`${m.target}/`)) {
      return join(ROOT, m.source, posix.relative(m.target, containerPath));
    }
  }
  return undefined;
}

function sharesANetwork(compose: ComposeFile, a: string, b: string): boolean {
  const of = (name: string) => networksOf(compose.services[name] ?? {});
  return of(a).some((n) => of(b).includes(n));
}

/** Node names in the topology description, whichever way its clusters list them. */
function topologyNodeNames(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) topologyNodeNames(item, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'nodes' && Array.isArray(child)) {
        for (const node of child) {
          if (typeof node === 'string') out.add(node);
          else if (node && typeof node === 'object' && typeof (node as { name?: unknown }).name === 'string') out.add((node as { name: string }).name);
        }
      } else topologyNodeNames(child, out);
    }
  }
  return out;
}

describe('docker-compose.yml', () => {
  const compose = loadCompose();
  const services = compose.services;
  const service = (name: string): Service => {
    const s = services[name];
    if (!s) throw new Error(`no service ${name}`);
    return s;
  };

  it('is valid against the Compose Specification schema', () => {
    const validate = composeSchemaValidator();
    const valid = validate(compose);
    expect(describeErrors(validate)).toBe('');
    expect(valid).toBe(true);
  });

  it('the schema check is not vacuous: a misspelled key, a wrong type and a bad dependency condition are refused', () => {
    const validate = composeSchemaValidator();
    const broken = (edit: (c: ComposeFile) => void) => {
      const copy = structuredClone(compose);
      edit(copy);
      return validate(copy);
    };
    expect(broken((c) => { (c.services['unseal'] as unknown as Record<string, unknown>)['restrat'] = 'always'; })).toBe(false);
    expect(broken((c) => { (c.services['perf-1'] as unknown as Record<string, unknown>)['ports'] = '127.0.0.1:8400:8200'; })).toBe(false);
    expect(broken((c) => { (c.services['bootstrap']!.depends_on as Record<string, { condition: string }>)['unseal'] = { condition: 'service_ready' }; })).toBe(false);
  });

  it('is accepted by Compose itself (docker-compose config), which refuses a misspelled key', () => {
    const text = readFileSync(COMPOSE_FILE, 'utf8');
    expect(composeConfig(text)).toEqual({ status: 0, stderr: '' });
    const broken = composeConfig(text.replace('restart: "no"', 'restrat: "no"'));
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toContain('restrat');
  });

  it('has exactly the services of the topology, each named as its host', () => {
    expect(Object.keys(services).sort()).toEqual([...SERVICES].sort());
    for (const name of [...NODES, ...EMULATORS]) expect(service(name).hostname).toBe(name);
  });

  it('declares every network and named volume its services use', () => {
    const networks = Object.keys(compose.networks ?? {});
    const volumes = Object.keys(compose.volumes ?? {});
    for (const [name, s] of Object.entries(services)) {
      for (const n of networksOf(s)) expect(`${name} on ${n}: ${networks.includes(n)}`).toBe(`${name} on ${n}: true`);
      for (const m of mountsOf(s).filter((m) => !m.bind)) {
        expect(`${name} mounts ${m.source}: ${volumes.includes(m.source)}`).toBe(`${name} mounts ${m.source}: true`);
      }
    }
  });

  it('puts perf-1 in another region: on region-2 only, with the primary and the unseal service', () => {
    expect(networksOf(service('perf-1'))).toEqual(['region-2']);
    const onRegion2 = Object.keys(services).filter((n) => networksOf(service(n)).includes('region-2')).sort();
    // bootstrap is there too: activating perf-1 is a call to perf-1's own API.
    expect(onRegion2).toEqual(['bootstrap', 'perf-1', ...PRIMARY, 'unseal'].sort());
    const onPrimaryNet = Object.keys(services).filter((n) => networksOf(service(n)).includes('primary-net')).sort();
    expect(onPrimaryNet).toEqual(['unseal', ...PRIMARY, ...DR, ...EMULATORS, 'bootstrap'].sort());
  });

  it('gives every node its own data volume, its identity from the environment and the seal token read-only', () => {
    const dataVolumes = new Set<string>();
    for (const name of NODES) {
      const s = service(name);
      const data = mountsOf(s).find((m) => m.target === '/strongroom/data');
      expect(data?.bind).toBe(false);
      dataVolumes.add(data?.source ?? '');
      expect(s.restart).toBe('unless-stopped');
      const env = envOf(s);
      expect(env['STRONGROOM_CONFIG']).toMatch(/^\/strongroom\/config\/[a-z-]+\.hcl$/);
      if (name === 'unseal') {
        expect(env['STRONGROOM_SEAL_TOKEN_FILE']).toBeUndefined();
        expect(mountsOf(s).some((m) => m.source === 'seal-tokens')).toBe(false);
        continue;
      }
      expect(env['VAULT_RAFT_NODE_ID']).toBe(name);
      expect(env['VAULT_API_ADDR']).toBe(`http://${name}:8200`);
      expect(env['VAULT_CLUSTER_ADDR']).toBe(`https://${name}:8201`);
      expect(env['STRONGROOM_SEAL_TOKEN_FILE']).toMatch(/^\/strongroom\/seal\/[a-z-]+\.token$/);
      const seal = mountsOf(s).find((m) => m.source === 'seal-tokens');
      expect(seal).toEqual({ source: 'seal-tokens', target: '/strongroom/seal', readOnly: true, bind: false });
    }
    expect(dataVolumes.size).toBe(NODES.length);
  });

  it('checks each node\'s health with sys/health, counting standbys, performance standbys and DR secondaries as healthy', () => {
    for (const name of NODES) {
      const test = healthTest(service(name));
      const url = /https?:\/\/\S+\/v1\/sys\/health\?\S+/.exec(test)?.[0];
      expect(url).toBeDefined();
      const params = new URL(url as string).searchParams;
      expect(params.get('standbyok')).toBe('true');
      expect(params.get('perfstandbyok')).toBe('true');
      expect(params.get('drsecondarycode')).toBe('200');
      expect(test).toContain('/opt/strongroom/deploy/healthcheck.js');
    }
    for (const name of EMULATORS) expect(healthTest(service(name))).not.toBe('');
  });

  it('runs bootstrap once, after the nodes have started (they are sealed until it runs) and the emulators answer', () => {
    const b = service('bootstrap');
    expect(b.restart).toBe('no');
    expect(b.command).toEqual(['scripts/bootstrap', '--topology', 'deploy/topology.json',
      '--operator-dir', '/strongroom/operator', '--seal-token-dir', '/strongroom/seal']);
    const deps = b.depends_on as Record<string, { condition: string }>;
    for (const name of NODES) expect(`${name}: ${deps[name]?.condition}`).toBe(`${name}: service_started`);
    for (const name of EMULATORS) expect(`${name}: ${deps[name]?.condition}`).toBe(`${name}: service_healthy`);
    expect(mountsOf(b)).toEqual(expect.arrayContaining([
      { source: 'seal-tokens', target: '/strongroom/seal', readOnly: false, bind: false },
      { source: 'operator', target: '/strongroom/operator', readOnly: false, bind: false },
    ]));
  });

  it('mounts the operator volume, which holds the keys and root tokens, in bootstrap only', () => {
    const withOperator = Object.keys(services).filter((n) => mountsOf(service(n)).some((m) => m.source === 'operator'));
    expect(withOperator).toEqual(['bootstrap']);
  });

  it('publishes API ports on loopback only, and no cluster port', () => {
    const published: string[] = [];
    for (const [name, s] of Object.entries(services)) {
      for (const p of s.ports ?? []) {
        const spec = typeof p === 'string' ? p : `${p.host_ip ?? ''}:${p.published ?? ''}:${p.target}`;
        expect(`${name} ${spec}`).toMatch(new RegExp(`^${name} 127\\.0\\.0\\.1:\\d+:8200$`));
        published.push(spec.split(':')[1] as string);
      }
    }
    expect(service('primary-1').ports).toEqual(['127.0.0.1:8200:8200']);
    expect(new Set(published).size).toBe(published.length);
  });

  it('mounts only files that exist, configs read-only', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const m of mountsOf(s).filter((m) => m.bind)) {
        expect(`${name}: ${m.source} exists: ${existsSync(join(ROOT, m.source))}`).toBe(`${name}: ${m.source} exists: true`);
        expect(`${name}: ${m.source} read-only: ${m.readOnly}`).toBe(`${name}: ${m.source} read-only: true`);
      }
    }
  });

  it.each(NODES)('%s: its config loads with the server\'s loader under its environment', async (name) => {
    const s = service(name);
    const env = envOf(s);
    const hostFile = hostFileFor(s, env['STRONGROOM_CONFIG'] ?? '');
    expect(hostFile).toBeDefined();
    // A stand-in for the token the entrypoint reads from the seal token file.
    const config = await loadConfigFile(hostFile as string, { ...env, VAULT_TOKEN: 'stand-in' });
    expect(config.warnings).toEqual([]);
    expect(config.storage.nodeId).toBe(name);
    expect(config.apiAddr).toBe(`http://${name}:8200`);
    expect(config.clusterAddr).toBe(`https://${name}:8201`);
    expect(config.storage.path).toBe('/strongroom/data');
    expect(config.listeners.map((l) => `${l.host}:${l.port}`)).toEqual(['0.0.0.0:8200']);
    expect(config.listeners[0]?.clusterAddress).toEqual({ host: '0.0.0.0', port: 8201 });

    // Whatever the config reaches by name must be a service on one of this node's networks.
    for (const leader of config.storage.retryJoin ?? []) {
      const host = new URL(leader.leaderApiAddr).hostname;
      expect(`${name} joins ${host}: ${sharesANetwork(compose, name, host)}`).toBe(`${name} joins ${host}: true`);
    }
    if (name === 'unseal') {
      expect(config.seals ?? []).toEqual([]);
      return;
    }
    expect(config.seals).toHaveLength(1);
    const seal = config.seals![0]!;
    const sealHost = new URL(seal.address).hostname;
    expect(sealHost).toBe('unseal');
    expect(sharesANetwork(compose, name, sealHost)).toBe(true);
    // The token file is named after the transit key it may use (bootstrap writes <key_name>.token).
    expect(posix.basename(env['STRONGROOM_SEAL_TOKEN_FILE'] ?? '')).toBe(`${seal.keyName}.token`);
  });

  it('every node of one cluster shares the config of its role', () => {
    const configOf = (n: string) => envOf(service(n))['STRONGROOM_CONFIG'];
    expect(new Set(PRIMARY.map(configOf)).size).toBe(1);
    expect(new Set(DR.map(configOf)).size).toBe(1);
    expect(new Set(NODES.map(configOf)).size).toBe(4);
  });

  it('holds no secret: no token, key or password in an environment, no key-like string anywhere', () => {
    const text = readFileSync(COMPOSE_FILE, 'utf8');
    for (const name of SERVICES) {
      for (const [key, value] of Object.entries(envOf(service(name)))) {
        if (!/TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL/i.test(key)) continue;
        // A file name is where a secret is, not the secret.
        expect(`${name} ${key}=${value}`).toMatch(/^\S+ \S+_FILE=\/\S+$/);
      }
    }
    expect(text).not.toMatch(/VAULT_TOKEN/);
    expect(text).not.toMatch(/\b(hvs|hvb|hvr|s)\.[A-Za-z0-9]{16,}/);
    expect(text).not.toMatch(/AccountKey=|AKIA[0-9A-Z]{12,}|-----BEGIN/);
    // Long runs of letters and digits are what keys and tokens look like; no word, path or
    // URL here has one.
    expect([...text.matchAll(/[A-Za-z0-9+=]{24,}/g)].map((m) => m[0])).toEqual([]);
  });

  // deploy/topology.json is bootstrap's description of this topology: both must name the same nodes.
  it('names the same nodes as deploy/topology.json', () => {
    const names = topologyNodeNames(JSON.parse(readFileSync(TOPOLOGY_FILE, 'utf8')));
    expect([...names].sort()).toEqual([...NODES].sort());
  });
});

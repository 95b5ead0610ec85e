import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfigFile, parseConfig, type ServerConfig } from './index';

let dir: string;
let cert: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-config-'));
  cert = join(dir, 'tls.crt');
  key = join(dir, 'tls.key');
  writeFileSync(cert, 'not really a cert');
  writeFileSync(key, 'not really a key');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const exampleHcl = () => `
storage "raft" {
  path    = "/var/lib/strongroom"
  node_id = "node1"
}
listener "tcp" {
  address          = "127.0.0.1:8200"
  tls_cert_file    = "${cert}"
  tls_key_file     = "${key}"
  tls_disable      = true
  max_request_size = 33554432
}
api_addr     = "https://127.0.0.1:8200"
cluster_addr = "https://127.0.0.1:8201"
ui           = true
`;

const exampleListener = () => ({
  address: '127.0.0.1:8200',
  tls_cert_file: cert,
  tls_key_file: key,
  tls_disable: true,
  max_request_size: 33554432,
});

const exampleTop = {
  api_addr: 'https://127.0.0.1:8200',
  cluster_addr: 'https://127.0.0.1:8201',
  ui: true,
};

function expectExample(config: ServerConfig, file: string): void {
  expect(config).toEqual({
    storage: { type: 'raft', path: '/var/lib/strongroom', nodeId: 'node1' },
    listeners: [
      {
        type: 'tcp',
        address: '127.0.0.1:8200',
        host: '127.0.0.1',
        port: 8200,
        tlsDisable: true,
        tlsCertFile: cert,
        tlsKeyFile: key,
        maxRequestSize: 33554432,
        clusterAddress: { host: '127.0.0.1', port: 8201 },
        jsonLimits: { maxDepth: 500, maxStringLength: 1048576, maxObjectEntries: 10000, maxArrayElements: 10000 },
      },
    ],
    apiAddr: 'https://127.0.0.1:8200',
    clusterAddr: 'https://127.0.0.1:8201',
    ui: true,
    sourceFile: file,
    warnings: [],
  });
}

/** Minimal valid HCL, with `extra` appended at the top level. */
const minimalHcl = (extra = '', listenerBody = 'tls_disable = true') => `
storage "raft" {
  path = "/data"
}
listener "tcp" {
  ${listenerBody}
}
${extra}
`;

async function rejection(text: string, format: 'hcl' | 'json' = 'hcl'): Promise<ConfigError> {
  const err = await parseConfig(text, '/etc/x.hcl', format).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

async function expectRejected(text: string, field: string, rule: string, format: 'hcl' | 'json' = 'hcl') {
  const err = await rejection(text, format);
  expect({ field: err.field, rule: err.rule }).toEqual({ field, rule });
  expect(err.file).toBe('/etc/x.hcl');
  expect(err.message).toBe(`/etc/x.hcl: ${field}: ${rule}`);
}

describe('the documented example', () => {
  test('HCL file', async () => {
    const file = write('example.hcl', exampleHcl());
    expectExample(await loadConfigFile(file), file);
  });

  test('JSON with blocks as objects', async () => {
    const file = write('object.json', JSON.stringify({
      storage: { raft: { path: '/var/lib/strongroom', node_id: 'node1' } },
      listener: { tcp: exampleListener() },
      ...exampleTop,
    }));
    expectExample(await loadConfigFile(file), file);
  });

  test('JSON with blocks as arrays of objects', async () => {
    const file = write('array.json', JSON.stringify({
      storage: [{ raft: { path: '/var/lib/strongroom', node_id: 'node1' } }],
      listener: [{ tcp: exampleListener() }],
      ...exampleTop,
    }));
    expectExample(await loadConfigFile(file), file);
  });

  test('JSON in the HCL-converted shape (bodies in arrays)', async () => {
    const file = write('converted.json', JSON.stringify({
      storage: { raft: [{ path: '/var/lib/strongroom', node_id: 'node1' }] },
      listener: { tcp: [exampleListener()] },
      ...exampleTop,
    }));
    expectExample(await loadConfigFile(file), file);
  });

  test('format is sniffed from content when the extension says nothing', async () => {
    const json = write('server.conf', JSON.stringify({
      storage: { raft: { path: '/var/lib/strongroom', node_id: 'node1' } },
      listener: { tcp: exampleListener() },
      ...exampleTop,
    }));
    expectExample(await loadConfigFile(json), json);
    const hcl = write('server.cfg', exampleHcl());
    expectExample(await loadConfigFile(hcl), hcl);
  });
});

describe('shapes', () => {
  test('several listeners, mixed array-of-objects shape, indexed per type', async () => {
    const config = await parseConfig(JSON.stringify({
      storage: { raft: { path: '/d' } },
      listener: [
        { tcp: { address: '127.0.0.1:8200', tls_disable: true } },
        { tcp: [{ address: '127.0.0.1:8300', tls_disable: true }, { address: 'nope', tls_disable: true }] },
      ],
    }), 'c.json').catch((e: ConfigError) => e);
    expect(config).toBeInstanceOf(ConfigError);
    expect((config as ConfigError).field).toBe('listener.tcp[2].address');
  });

  test('several HCL listeners keep their order', async () => {
    const config = await parseConfig(minimalHcl('listener "tcp" {\n address = "0.0.0.0:9000"\n tls_disable = 1\n}'), 'c.hcl');
    expect(config.listeners.map((l) => l.address)).toEqual(['127.0.0.1:8200', '0.0.0.0:9000']);
  });

  test('explicit format overrides the name', async () => {
    const config = await parseConfig(
      JSON.stringify({ storage: { raft: { path: '/d' } }, listener: { tcp: { tls_disable: true } } }),
      'weird.hcl',
      'json',
    );
    expect(config.storage.path).toBe('/d');
  });
});

describe('defaults', () => {
  test('minimal config', async () => {
    const config = await parseConfig(minimalHcl(), 'min.hcl');
    expect(config).toEqual({
      storage: {
        type: 'raft',
        path: '/data',
        nodeId: `node-${createHash('sha256').update('/data').digest('hex').slice(0, 8)}`,
      },
      listeners: [
        {
          type: 'tcp',
          address: '127.0.0.1:8200',
          host: '127.0.0.1',
          port: 8200,
          tlsDisable: true,
          maxRequestSize: 32 * 1024 * 1024,
          clusterAddress: { host: '127.0.0.1', port: 8201 },
          jsonLimits: { maxDepth: 500, maxStringLength: 1048576, maxObjectEntries: 10000, maxArrayElements: 10000 },
        },
      ],
      ui: false,
      sourceFile: 'min.hcl',
      warnings: [],
    });
    expect(config.storage.nodeId).toMatch(/^node-[0-9a-f]{8}$/);
  });

  test('the cluster port listens where cluster_address says, or one above the API port', async () => {
    const explicit = await parseConfig('storage "raft" {\n path = "/d"\n}\nlistener "tcp" {\n tls_disable = true\n address = "127.0.0.1:9200"\n cluster_address = "127.0.0.1:9301"\n}\n', 'c.hcl');
    expect(explicit.listeners[0]?.clusterAddress).toEqual({ host: '127.0.0.1', port: 9301 });
    const implied = await parseConfig('storage "raft" {\n path = "/d"\n}\nlistener "tcp" {\n tls_disable = true\n address = "127.0.0.1:9200"\n}\n', 'c.hcl');
    expect(implied.listeners[0]?.clusterAddress).toEqual({ host: '127.0.0.1', port: 9201 });
  });

  test('max_request_size 0 means the default', async () => {
    const config = await parseConfig(minimalHcl('', 'tls_disable = true\nmax_request_size = 0'), 'c.hcl');
    expect(config.listeners[0]!.maxRequestSize).toBe(32 * 1024 * 1024);
  });

  test('the JSON body limits are set per listener, 0 meaning the default', async () => {
    const config = await parseConfig(minimalHcl('', [
      'tls_disable = true', 'max_json_depth = 20', 'max_json_string_value_length = "4096"',
      'max_json_object_entry_count = 0', 'max_json_array_element_count = 300',
    ].join('\n')), 'c.hcl');
    expect(config.listeners[0]!.jsonLimits).toEqual({ maxDepth: 20, maxStringLength: 4096, maxObjectEntries: 10000, maxArrayElements: 300 });
    await expect(parseConfig(minimalHcl('', 'tls_disable = true\nmax_json_depth = -1'), 'c.hcl'))
      .rejects.toThrow('c.hcl: listener.tcp[0].max_json_depth: must be a non-negative integer');
    await expect(parseConfig(minimalHcl('', 'tls_disable = true\nmax_json_array_element_count = "many"'), 'c.hcl'))
      .rejects.toThrow('c.hcl: listener.tcp[0].max_json_array_element_count: must be a non-negative integer');
  });

  test('TLS is on by default and uses the given files', async () => {
    const config = await parseConfig(
      minimalHcl('', `tls_cert_file = "${cert}"\ntls_key_file = "${key}"`),
      'c.hcl',
    );
    expect(config.listeners[0]).toMatchObject({ tlsDisable: false, tlsCertFile: cert, tlsKeyFile: key });
  });

  test('JSON null is the same as absent', async () => {
    const config = await parseConfig(JSON.stringify({
      storage: { raft: { path: '/d', node_id: null } },
      listener: { tcp: { tls_disable: true, address: null } },
      api_addr: null,
    }), 'c.json');
    expect(config.listeners[0]!.address).toBe('127.0.0.1:8200');
    expect(config.apiAddr).toBeUndefined();
    expect(config.storage.nodeId).toMatch(/^node-/);
  });
});

describe('per-node values from the environment', () => {
  const withAddrs = minimalHcl('api_addr = "http://file:8200"\ncluster_addr = "https://file:8201"');

  it('VAULT_API_ADDR, VAULT_CLUSTER_ADDR, VAULT_RAFT_NODE_ID and VAULT_RAFT_PATH win over the file, as in Vault', async () => {
    const config = await parseConfig(withAddrs, 'c.hcl', undefined, {
      VAULT_API_ADDR: 'http://primary-2:8200',
      VAULT_CLUSTER_ADDR: 'https://primary-2:8201',
      VAULT_RAFT_NODE_ID: 'primary-2',
      VAULT_RAFT_PATH: '/strongroom/data',
    });
    expect(config.apiAddr).toBe('http://primary-2:8200');
    expect(config.clusterAddr).toBe('https://primary-2:8201');
    expect(config.storage).toMatchObject({ nodeId: 'primary-2', path: '/strongroom/data' });
  });

  it('the file counts when they are unset or empty', async () => {
    const config = await parseConfig(withAddrs, 'c.hcl', undefined, { VAULT_API_ADDR: '' });
    expect(config.apiAddr).toBe('http://file:8200');
    expect(config.clusterAddr).toBe('https://file:8201');
    expect(config.storage.path).toBe('/data');
  });

  it('a malformed address in the environment is refused by its name', async () => {
    const err = await parseConfig(withAddrs, 'c.hcl', undefined, { VAULT_CLUSTER_ADDR: 'primary-2:8201' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toBe('c.hcl: VAULT_CLUSTER_ADDR: must be an http:// or https:// URL');
  });
});

describe('value forms', () => {
  test('numeric strings', async () => {
    const config = await parseConfig(minimalHcl('', 'tls_disable = true\nmax_request_size = "1048576"'), 'c.hcl');
    expect(config.listeners[0]!.maxRequestSize).toBe(1048576);
  });

  test.each([
    ['true', true], ['"true"', true], ['"1"', true], ['1', true],
    ['false', false], ['"false"', false], ['"0"', false], ['0', false],
  ])('tls_disable = %s', async (literal, expected) => {
    const body = `tls_disable = ${literal}\ntls_cert_file = "${cert}"\ntls_key_file = "${key}"`;
    const config = await parseConfig(minimalHcl('', body), 'c.hcl');
    expect(config.listeners[0]!.tlsDisable).toBe(expected);
  });

  test('ui as a string', async () => {
    expect((await parseConfig(minimalHcl('ui = "true"'), 'c.hcl')).ui).toBe(true);
  });

  test('IPv6 address', async () => {
    const config = await parseConfig(minimalHcl('', 'tls_disable = true\naddress = "[::1]:8200"'), 'c.hcl');
    expect(config.listeners[0]).toMatchObject({ address: '[::1]:8200', host: '::1', port: 8200 });
  });

  test('hostname address', async () => {
    const config = await parseConfig(minimalHcl('', 'tls_disable = true\naddress = "localhost:443"'), 'c.hcl');
    expect(config.listeners[0]).toMatchObject({ host: 'localhost', port: 443 });
  });
});

describe('Vault-only settings', () => {
  test('give warnings, not failures', async () => {
    const config = await parseConfig(
      minimalHcl('cluster_name = "prod"\ndefault_lease_ttl = "768h"', 'tls_disable = true\ntls_min_version = "tls12"'),
      'c.hcl',
    );
    expect(config.warnings.sort()).toEqual([
      'c.hcl: cluster_name: not supported by Strongroom, ignored',
      'c.hcl: default_lease_ttl: not supported by Strongroom, ignored',
      'c.hcl: listener.tcp[0].tls_min_version: not supported by Strongroom, ignored',
    ]);
  });

  test('disable_mlock and log_level are accepted silently', async () => {
    const config = await parseConfig(minimalHcl('disable_mlock = true\nlog_level = "debug"'), 'c.hcl');
    expect(config.warnings).toEqual([]);
  });

  test('the snapshot schedule and trailing log come from the raft block, as Vault writes them', async () => {
    const config = await parseConfig(
      'storage "raft" {\n path = "/d"\n snapshot_threshold = 16384\n snapshot_interval = "5m"\n trailing_logs = 10000\n}\nlistener "tcp" {\n tls_disable = 1\n}\n',
      'c.hcl',
    );
    expect(config.storage).toMatchObject({ snapshotThreshold: 16384, snapshotIntervalMs: 300_000, trailingLogs: 10000 });
    expect(config.warnings).toEqual([]);
    const seconds = await parseConfig(JSON.stringify({ storage: { raft: { path: '/d', snapshot_interval: 30 } }, listener: { tcp: { tls_disable: true } } }), 'c.json');
    expect(seconds.storage.snapshotIntervalMs).toBe(30_000);
  });

  test('raft settings we ignore also warn', async () => {
    const config = await parseConfig(
      'storage "raft" {\n path = "/d"\n performance_multiplier = 1\n}\nlistener "tcp" {\n tls_disable = 1\n}\n',
      'c.hcl',
    );
    expect(config.warnings).toEqual(['c.hcl: storage.raft.performance_multiplier: not supported by Strongroom, ignored']);
  });
});

describe('rejections', () => {
  const raft = 'storage "raft" {\n path = "/d"\n}\n';
  const tcp = 'listener "tcp" {\n tls_disable = true\n}\n';

  test.each<[string, string, string, string]>([
    ['no storage', tcp, 'storage', 'is required'],
    ['two storage blocks', `${raft}${raft}${tcp}`, 'storage', 'only one storage block is allowed'],
    ['other storage type', `storage "consul" {\n address = "x"\n}\n${tcp}`, 'storage "consul"', 'unsupported storage type, only "raft" is supported'],
    ['storage without a label', `storage {\n path = "/d"\n}\n${tcp}`, 'storage', 'block must have a type label, e.g. storage "raft" { ... }'],
    ['raft path missing', `storage "raft" {\n node_id = "n"\n}\n${tcp}`, 'storage.raft.path', 'is required'],
    ['raft path not a string', `storage "raft" {\n path = 5\n}\n${tcp}`, 'storage.raft.path', 'must be a string'],
    ['raft path empty', `storage "raft" {\n path = ""\n}\n${tcp}`, 'storage.raft.path', 'must not be empty'],
    ['node_id not a string', `storage "raft" {\n path = "/d"\n node_id = true\n}\n${tcp}`, 'storage.raft.node_id', 'must be a string'],
    ['unknown raft key', `storage "raft" {\n path = "/d"\n pth = "/e"\n}\n${tcp}`, 'storage.raft.pth', 'unknown setting'],
    ['snapshot_threshold 0', `storage "raft" {\n path = "/d"\n snapshot_threshold = 0\n}\n${tcp}`, 'storage.raft.snapshot_threshold', 'must be a positive integer (entries between snapshots)'],
    ['snapshot_threshold not a number', `storage "raft" {\n path = "/d"\n snapshot_threshold = "many"\n}\n${tcp}`, 'storage.raft.snapshot_threshold', 'must be a non-negative integer'],
    ['snapshot_interval not a duration', `storage "raft" {\n path = "/d"\n snapshot_interval = "soon"\n}\n${tcp}`, 'storage.raft.snapshot_interval', 'must be a duration such as "120s" or "2m", or a number of seconds'],
    ['snapshot_interval 0', `storage "raft" {\n path = "/d"\n snapshot_interval = "0s"\n}\n${tcp}`, 'storage.raft.snapshot_interval', 'must be a positive duration, e.g. "120s"'],
    ['trailing_logs negative', `storage "raft" {\n path = "/d"\n trailing_logs = -5\n}\n${tcp}`, 'storage.raft.trailing_logs', 'must be a non-negative integer'],
    ['no listener', raft, 'listener', 'at least one listener block is required'],
    ['other listener type', `${raft}listener "unix" {\n address = "/s"\n}\n`, 'listener "unix"', 'unsupported listener type, only "tcp" is supported'],
    ['unknown listener key', `${raft}listener "tcp" {\n tls_disable = true\n adress = "x"\n}\n`, 'listener.tcp[0].adress', 'unknown setting'],
    ['tls_disable wrong', `${raft}listener "tcp" {\n tls_disable = "yes"\n}\n`, 'listener.tcp[0].tls_disable', 'must be a boolean (true/false, or "true"/"false"/"1"/"0")'],
    ['tls_disable = 2', `${raft}listener "tcp" {\n tls_disable = 2\n}\n`, 'listener.tcp[0].tls_disable', 'must be a boolean (true/false, or "true"/"false"/"1"/"0")'],
    ['negative max_request_size', `${raft}listener "tcp" {\n tls_disable = true\n max_request_size = -1\n}\n`, 'listener.tcp[0].max_request_size', 'must be a non-negative integer'],
    ['fractional max_request_size', `${raft}listener "tcp" {\n tls_disable = true\n max_request_size = 1.5\n}\n`, 'listener.tcp[0].max_request_size', 'must be a non-negative integer'],
    ['non-numeric max_request_size', `${raft}listener "tcp" {\n tls_disable = true\n max_request_size = "32MiB"\n}\n`, 'listener.tcp[0].max_request_size', 'must be a non-negative integer'],
    ['cert missing with TLS on', `${raft}listener "tcp" {\n tls_key_file = "/k"\n}\n`, 'listener.tcp[0].tls_cert_file', 'is required unless tls_disable is true'],
    ['key missing with TLS on', `${raft}listener "tcp" {\n tls_disable = "false"\n tls_cert_file = "/c"\n}\n`, 'listener.tcp[0].tls_key_file', 'is required unless tls_disable is true'],
    ['bad cluster_address', `${raft}listener "tcp" {\n tls_disable = true\n cluster_address = "nowhere"\n}\n`, 'listener.tcp[0].cluster_address', 'must be host:port with a port from 1 to 65535 (IPv6 hosts in brackets, e.g. [::1]:8200)'],
    ['cluster port past 65535', `${raft}listener "tcp" {\n tls_disable = true\n address = "127.0.0.1:65535"\n}\n`, 'listener.tcp[0].cluster_address', 'is required when the API port is 65535 (it defaults to the API port plus one)'],
    ['bad api_addr', `${raft}${tcp}api_addr = "127.0.0.1:8200"\n`, 'api_addr', 'must be an http:// or https:// URL'],
    ['ftp cluster_addr', `${raft}${tcp}cluster_addr = "ftp://host:8201"\n`, 'cluster_addr', 'must be an http:// or https:// URL'],
    ['api_addr not a string', `${raft}${tcp}api_addr = 8200\n`, 'api_addr', 'must be a string'],
    ['ui not a boolean', `${raft}${tcp}ui = "on"\n`, 'ui', 'must be a boolean (true/false, or "true"/"false"/"1"/"0")'],
    ['unknown top-level key', `${raft}${tcp}colour = "blue"\n`, 'colour', 'unknown setting'],
  ])('%s', async (_name, text, field, rule) => {
    await expectRejected(text, field, rule);
  });

  const addressRule = 'must be host:port with a port from 1 to 65535 (IPv6 hosts in brackets, e.g. [::1]:8200)';
  test.each(['127.0.0.1', '127.0.0.1:0', '127.0.0.1:65536', ':8200', '::1:8200', 'host:port', 'a b:80', '127.0.0.1:-1'])(
    'address %s',
    async (address) => {
      await expectRejected(`${raft}listener "tcp" {\n tls_disable = true\n address = "${address}"\n}\n`, 'listener.tcp[0].address', addressRule);
    },
  );

  test('bracketed non-IPv6 host', async () => {
    await expectRejected(`${raft}listener "tcp" {\n tls_disable = true\n address = "[nothost]:80"\n}\n`, 'listener.tcp[0].address', '"nothost" is not an IPv6 address');
  });

  test('second listener is named by its index', async () => {
    await expectRejected(`${raft}${tcp}listener "tcp" {\n tls_disable = true\n max_request_size = -5\n}\n`, 'listener.tcp[1].max_request_size', 'must be a non-negative integer');
  });

  test('JSON rejections use the same fields', async () => {
    await expectRejected(
      JSON.stringify({ storage: { raft: { path: '/d' } }, listener: [{ tcp: { tls_disable: true, max_request_size: '-3' } }] }),
      'listener.tcp[0].max_request_size',
      'must be a non-negative integer',
      'json',
    );
    await expectRejected(
      JSON.stringify({ storage: { path: '/d' }, listener: { tcp: { tls_disable: true } } }),
      'storage',
      'block must have a type label, e.g. storage "raft" { ... }',
      'json',
    );
    await expectRejected(
      JSON.stringify({ storage: 'raft', listener: { tcp: { tls_disable: true } } }),
      'storage',
      'must be a block',
      'json',
    );
  });
});

describe('TLS files', () => {
  test('cert file missing', async () => {
    const missing = join(dir, 'absent.crt');
    await expectRejected(
      minimalHcl('', `tls_cert_file = "${missing}"\ntls_key_file = "${key}"`),
      'listener.tcp[0].tls_cert_file',
      `file "${missing}" does not exist`,
    );
  });

  test('key file missing', async () => {
    const missing = join(dir, 'absent.key');
    await expectRejected(
      minimalHcl('', `tls_cert_file = "${cert}"\ntls_key_file = "${missing}"`),
      'listener.tcp[0].tls_key_file',
      `file "${missing}" does not exist`,
    );
  });

  test('key path is a directory', async () => {
    await expectRejected(
      minimalHcl('', `tls_cert_file = "${cert}"\ntls_key_file = "${dir}"`),
      'listener.tcp[0].tls_key_file',
      `"${dir}" is not a regular file`,
    );
  });

  test('missing files do not matter when TLS is disabled', async () => {
    const config = await parseConfig(minimalHcl('', 'tls_disable = true\ntls_cert_file = "/nope.crt"\ntls_key_file = "/nope.key"'), 'c.hcl');
    expect(config.listeners[0]).toMatchObject({ tlsDisable: true, tlsCertFile: '/nope.crt' });
  });
});

describe('file-level failures', () => {
  test('missing file', async () => {
    const file = join(dir, 'nowhere.hcl');
    await expect(loadConfigFile(file)).rejects.toMatchObject({
      name: 'ConfigError',
      file,
      field: '',
      message: `${file}: file not found`,
    });
  });

  test('HCL syntax error reports the first diagnostic only', async () => {
    const err = await rejection('storage "raft" {\n path = \n}\n');
    expect(err.field).toBe('');
    expect(err.message).toMatch(/^\/etc\/x\.hcl: could not parse as HCL: line 2, column \d+: Invalid expression/);
    expect(err.message).not.toContain('strongroom-config.hcl');
    expect(err.message).not.toContain('\n');
  });

  test('JSON syntax error', async () => {
    const file = write('broken.json', '{"storage": ');
    await expect(loadConfigFile(file)).rejects.toThrow(new RegExp(`^${file.replace(/[.\\]/g, '\\$&')}: could not parse as JSON: `));
  });

  test('JSON top level must be an object', async () => {
    const err = await rejection('[1, 2]', 'json');
    expect(err.message).toBe('/etc/x.hcl: could not parse as JSON: the top level must be an object');
  });

  test('empty file', async () => {
    await expectRejected('', 'storage', 'is required');
  });
});

describe('retry_join', () => {
  const tcp = 'listener "tcp" {\n tls_disable = true\n}\n';
  const raftWith = (...blocks: string[]) => `storage "raft" {\n path = "/d"\n${blocks.map((b) => ` retry_join {\n${b}\n }\n`).join('')}}\n${tcp}`;

  test('several HCL blocks keep their order, with their TLS files', async () => {
    const config = await parseConfig(raftWith(
      '  leader_api_addr = "http://10.0.0.9:8200/"',
      `  leader_api_addr = "https://node1.example:8200"\n  leader_ca_cert_file = "${cert}"\n  leader_client_cert_file = "${cert}"\n  leader_client_key_file = "${key}"\n  leader_tls_servername = "node1"`,
    ), 'c.hcl');
    expect(config.storage.retryJoin).toEqual([
      { leaderApiAddr: 'http://10.0.0.9:8200' },
      { leaderApiAddr: 'https://node1.example:8200', leaderCaCertFile: cert, leaderClientCertFile: cert, leaderClientKeyFile: key, leaderTlsServername: 'node1' },
    ]);
    expect(config.warnings).toEqual([]);
  });

  test('JSON takes a list of blocks or a single one', async () => {
    const json = (retryJoin: unknown) => JSON.stringify({ storage: { raft: { path: '/d', retry_join: retryJoin } }, listener: { tcp: { tls_disable: true } } });
    const list = await parseConfig(json([{ leader_api_addr: 'http://a:8200' }, { leader_api_addr: 'http://b:8200' }]), 'c.json');
    expect(list.storage.retryJoin).toEqual([{ leaderApiAddr: 'http://a:8200' }, { leaderApiAddr: 'http://b:8200' }]);
    const one = await parseConfig(json({ leader_api_addr: 'https://a:8200' }), 'c.json');
    expect(one.storage.retryJoin).toEqual([{ leaderApiAddr: 'https://a:8200' }]);
  });

  test('without retry_join there is nothing to retry', async () => {
    expect((await parseConfig(raftWith(), 'c.hcl')).storage.retryJoin).toBeUndefined();
  });

  test.each<[string, string[], string, string]>([
    ['an address that is not a URL', ['  leader_api_addr = "http://a:8200"', '  leader_api_addr = "10.0.0.1:8200"'],
      'storage.raft.retry_join[1].leader_api_addr', 'must be an http:// or https:// URL'],
    ['another scheme', ['  leader_api_addr = "ftp://a:8200"'], 'storage.raft.retry_join[0].leader_api_addr', 'must be an http:// or https:// URL'],
    ['no address', ['  leader_tls_servername = "a"'], 'storage.raft.retry_join[0].leader_api_addr', 'is required'],
    ['an empty address', ['  leader_api_addr = ""'], 'storage.raft.retry_join[0].leader_api_addr', 'must not be empty'],
    ['a CA file that does not exist', ['  leader_api_addr = "https://a:8200"\n  leader_ca_cert_file = "/nonexistent/ca.pem"'],
      'storage.raft.retry_join[0].leader_ca_cert_file', 'file "/nonexistent/ca.pem" does not exist'],
    ['a client key that is a directory', ['  leader_api_addr = "https://a:8200"\n  leader_client_cert_file = "CERT"\n  leader_client_key_file = "/"'],
      'storage.raft.retry_join[0].leader_client_key_file', '"/" is not a regular file'],
    ['a client certificate without its key', ['  leader_api_addr = "https://a:8200"\n  leader_client_cert_file = "CERT"'],
      'storage.raft.retry_join[0].leader_client_key_file', 'is required with the other half of the client certificate'],
    ['an inline CA', ['  leader_api_addr = "https://a:8200"\n  leader_ca_cert = "-----BEGIN CERTIFICATE-----"'],
      'storage.raft.retry_join[0].leader_ca_cert', 'not supported by Strongroom, use leader_ca_cert_file'],
    ['cloud auto-join', ['  auto_join = "provider=aws"'],
      'storage.raft.retry_join[0].auto_join', 'cloud auto-join is not supported by Strongroom, list each leader with leader_api_addr'],
    ['a typo', ['  leader_api_adr = "http://a:8200"'], 'storage.raft.retry_join[0].leader_api_adr', 'unknown setting'],
    ['a number for the servername', ['  leader_api_addr = "https://a:8200"\n  leader_tls_servername = 5'],
      'storage.raft.retry_join[0].leader_tls_servername', 'must be a string'],
  ])('%s is refused naming the field', async (_name, blocks, field, rule) => {
    await expectRejected(raftWith(...blocks.map((b) => b.replace('CERT', cert))), field, rule);
  });

  test('a JSON entry that is not a block', async () => {
    const text = JSON.stringify({ storage: { raft: { path: '/d', retry_join: [{ leader_api_addr: 'http://a:8200' }, 'http://b:8200'] } }, listener: { tcp: { tls_disable: true } } });
    await expectRejected(text, 'storage.raft.retry_join[1]', 'must be a block with leader_api_addr, e.g. retry_join { leader_api_addr = "https://10.0.0.1:8200" }', 'json');
  });

  test('an unreadable file is refused as such', async () => {
    if (process.getuid?.() === 0) return; // root reads anything
    const locked = write('locked.pem', 'x');
    chmodSync(locked, 0o000);
    try {
      await expectRejected(raftWith(`  leader_api_addr = "https://a:8200"\n  leader_ca_cert_file = "${locked}"`),
        'storage.raft.retry_join[0].leader_ca_cert_file', `file "${locked}" is not readable (permission denied)`);
    } finally {
      chmodSync(locked, 0o600);
    }
  });
});

describe('replication', () => {
  it('reads Vault\'s WAL window settings, in HCL and JSON', async () => {
    const hcl = await parseConfig(minimalHcl('replication {\n  logshipper_buffer_length = 1000\n  logshipper_buffer_size = "512mb"\n}'), '/etc/x.hcl');
    expect(hcl.replication).toEqual({ logshipperBufferLength: 1000, logshipperBufferSize: 512 * 1024 * 1024 });
    const json = await parseConfig(JSON.stringify({
      storage: { raft: { path: '/data' } }, listener: { tcp: { tls_disable: true } }, replication: { logshipper_buffer_size: 4096 },
    }), '/etc/x.json', 'json');
    expect(json.replication).toEqual({ logshipperBufferSize: 4096 });
  });

  it('warns about Vault\'s other replication settings and refuses the rest', async () => {
    const config = await parseConfig(minimalHcl('replication {\n  resolver_discover_servers = true\n}'), '/etc/x.hcl');
    expect(config.warnings).toEqual(['/etc/x.hcl: replication.resolver_discover_servers: not supported by Strongroom, ignored']);
    await expectRejected(minimalHcl('replication {\n  logshipper_buffer = 3\n}'), 'replication.logshipper_buffer', 'unknown setting');
    await expectRejected(minimalHcl('replication {\n  logshipper_buffer_length = 0\n}'), 'replication.logshipper_buffer_length', 'must be a positive integer (WAL entries kept)');
    await expectRejected(minimalHcl('replication {\n  logshipper_buffer_size = "lots"\n}'), 'replication.logshipper_buffer_size', 'must be a positive size such as "512mb", "1gb" or a number of bytes');
  });
});

describe('telemetry', () => {
  it('reads a listener\'s unauthenticated_metrics_access, in HCL and JSON, for that listener only', async () => {
    const hcl = await parseConfig(
      `${minimalHcl('', 'tls_disable = true\n  telemetry {\n    unauthenticated_metrics_access = true\n  }')}listener "tcp" {\n  address = "127.0.0.1:8300"\n  tls_disable = true\n}\n`,
      'c.hcl',
    );
    expect(hcl.listeners.map((l) => l.unauthenticatedMetricsAccess)).toEqual([true, undefined]);
    expect(hcl.warnings).toEqual([]);
    const json = await parseConfig(JSON.stringify({
      storage: { raft: { path: '/data' } }, listener: { tcp: { tls_disable: true, telemetry: { unauthenticated_metrics_access: 'false' } } },
    }), 'c.json');
    expect(json.listeners[0]?.unauthenticatedMetricsAccess).toBeUndefined();
    expect(json.warnings).toEqual([]);
  });

  it('refuses what a listener\'s telemetry block cannot hold, naming the field', async () => {
    const inListener = (body: string) => minimalHcl('', `tls_disable = true\n  ${body}`);
    await expectRejected(inListener('telemetry {\n unauthenticated_metrics_access = "sometimes"\n}'),
      'listener.tcp[0].telemetry.unauthenticated_metrics_access', 'must be a boolean (true/false, or "true"/"false"/"1"/"0")');
    await expectRejected(inListener('telemetry {\n prometheus_retention_time = "24h"\n}'),
      'listener.tcp[0].telemetry.prometheus_retention_time', 'unknown setting (a listener\'s telemetry block takes only unauthenticated_metrics_access)');
    await expectRejected(inListener('telemetry = "on"'), 'listener.tcp[0].telemetry', 'must be a block');
    await expectRejected(inListener('telemetry {\n}\n  telemetry {\n}'), 'listener.tcp[0].telemetry', 'may be given only once');
  });

  it('accepts Vault\'s top-level telemetry block quietly: the metrics are always served at sys/metrics', async () => {
    const config = await parseConfig(
      minimalHcl('telemetry {\n  prometheus_retention_time = "24h"\n  disable_hostname = true\n  usage_gauge_period = "10m"\n}'),
      'c.hcl',
    );
    expect(config.warnings).toEqual([]);
    await expectRejected(minimalHcl('telemetry = 3'), 'telemetry', 'must be a block');
  });
});

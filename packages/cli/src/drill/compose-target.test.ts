import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { publishedAddress, readComposeServices } from './compose-file';
import { readComposeTarget } from './compose-target';

/**
 * A compose deployment as the drill reads it, without a Docker engine: each node's API address
 * from its published port, the credentials from the file given, and `docker compose kill` and
 * `start` run as an argv of `$DOCKER`, a failure reported with its stderr's first line.
 */

const ROOT = resolve(__dirname, '../../../..');
const TOPOLOGY = join(ROOT, 'deploy', 'topology.json');

let dir: string;
let savedDocker: string | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-compose-target-'));
  savedDocker = process.env['DOCKER'];
});

afterAll(() => {
  if (savedDocker === undefined) delete process.env['DOCKER'];
  else process.env['DOCKER'] = savedDocker;
  rmSync(dir, { recursive: true, force: true });
});

function composeFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const PORTS = `
x-node: &node
  image: strongroom:local
  restart: unless-stopped
services:
  merged: { <<: *node, ports: ["127.0.0.1:8200:8200"] }
  any-interface: { ports: ["0.0.0.0:8300:8200/tcp"] }
  host-port-only: { ports: [ "8400:8200" ] }
  port-range: { ports: ["127.0.0.1:9000-9001:8200-8201"] }
  ipv6: { ports: ["[::1]:8500:8200"] }
  long: { ports: [{ target: 8200, published: "8600", host_ip: 0.0.0.0, protocol: tcp }] }
  long-range: { ports: [{ target: 8200-8201, published: 8700-8701 }] }
  long-number: { ports: [{ target: 8200, published: 8800 }] }
  udp-first: { ports: ["8900:8200/udp", { target: 8200, published: 8901, protocol: udp }, "8902:8200"] }
  unpublished: { <<: *node }
  other-port: { ports: ["127.0.0.1:8201:8201"] }
  random-port: { ports: ["8200"] }
  random-on-loopback: { ports: ["127.0.0.1::8200"] }
  random-host-range: { ports: ["9100-9110:8200"] }
  variable: { ports: ["127.0.0.1:\${PRIMARY_PORT:-8200}:8200"] }
  bad-port: { ports: ["127.0.0.1:99999:8200"] }
  ports-not-a-list: { ports: "8200:8200" }
`;

describe('published ports', () => {
  it('reads the short and the long syntax; a wildcard or absent host address is dialled on loopback', () => {
    const file = composeFile('ports.yml', PORTS);
    const services = readComposeServices(file);
    const at = (service: string, port = 8200) => publishedAddress(services, service, port, file);
    expect(at('merged')).toBe('http://127.0.0.1:8200');
    expect(at('any-interface')).toBe('http://127.0.0.1:8300');
    expect(at('host-port-only')).toBe('http://127.0.0.1:8400');
    expect(at('port-range')).toBe('http://127.0.0.1:9000');
    expect(at('port-range', 8201)).toBe('http://127.0.0.1:9001');
    expect(at('ipv6')).toBe('http://[::1]:8500');
    expect(at('long')).toBe('http://127.0.0.1:8600');
    expect(at('long-range', 8201)).toBe('http://127.0.0.1:8701');
    expect(at('long-number')).toBe('http://127.0.0.1:8800');
    expect(at('udp-first')).toBe('http://127.0.0.1:8902');
  });

  it.each([
    ['unpublished', /service "unpublished" publishes no port for its API port 8200; publish it/],
    ['other-port', /service "other-port" publishes no port for its API port 8200/],
    ['random-port', /service "random-port" publishes its API port 8200 on a host port compose picks at random/],
    ['random-on-loopback', /service "random-on-loopback" publishes its API port 8200 on a host port compose picks at random/],
    ['random-host-range', /service "random-host-range": host ports 9100-9110 do not map one to one onto container ports 8200-8200/],
    ['variable', /service "variable" ports\[0\]: ".*" holds a variable; give the drill the file that `docker compose config` prints/],
    ['bad-port', /service "bad-port" ports\[0\]: "99999" is not a port or a port range/],
    ['ports-not-a-list', /service "ports-not-a-list": "ports" must be a list/],
    ['nope', /service "nope" is missing \(a node of the topology is a service of the same name\)/],
  ])('names the service %s and what is wrong', (service, message) => {
    const file = composeFile('ports.yml', PORTS);
    expect(() => publishedAddress(readComposeServices(file), service, 8200, file)).toThrow(message);
  });

  it('names a file that is missing, not YAML, or without services', () => {
    expect(() => readComposeServices(join(dir, 'none.yml'))).toThrow(/cannot read the compose file .*none\.yml: ENOENT/);
    expect(() => readComposeServices(composeFile('bad.yml', 'services: [\n'))).toThrow(/the compose file .*bad\.yml is not YAML: /);
    expect(() => readComposeServices(composeFile('empty.yml', 'name: x\n'))).toThrow(/empty\.yml: "services" must be a map of services/);
  });
});

describe('the compose target', () => {
  const credentials = () => {
    const file = join(dir, 'credentials.json');
    writeFileSync(file, JSON.stringify({ primary: { recovery_keys_b64: ['a2V5'], root_token: 'root' } }));
    return file;
  };

  it('takes the nodes of the topology description at the ports the repository\'s compose file publishes', () => {
    const t = readComposeTarget({ file: join(ROOT, 'docker-compose.yml'), credentials: credentials(), topology: TOPOLOGY });
    const nodes = (c: { nodes: { name: string; apiAddr: string }[] } | null) => c?.nodes.map((n) => `${n.name} ${n.apiAddr}`);
    expect(t.pair.map((c) => c.name)).toEqual(['primary', 'dr']);
    expect(nodes(t.pair[0])).toEqual(['primary-1 http://127.0.0.1:8200', 'primary-2 http://127.0.0.1:8210', 'primary-3 http://127.0.0.1:8220']);
    expect(nodes(t.pair[1])).toEqual(['dr-1 http://127.0.0.1:8300', 'dr-2 http://127.0.0.1:8310', 'dr-3 http://127.0.0.1:8320']);
    expect(nodes(t.performance)).toEqual(['perf-1 http://127.0.0.1:8400']);
    expect(t.credentials).toEqual({ rootToken: 'root', keyShares: ['a2V5'] });
  });

  it('refuses a node whose service publishes no API port, and credentials without the primary\'s', () => {
    const doc = parseDocument(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'));
    doc.deleteIn(['services', 'dr-2', 'ports']);
    const file = composeFile('no-dr-2.yml', String(doc));
    expect(() => readComposeTarget({ file, credentials: credentials(), topology: TOPOLOGY })).toThrow(/service "dr-2" publishes no port for its API port 8200/);
    const bad = join(dir, 'bad-credentials.json');
    writeFileSync(bad, JSON.stringify({ dr: { root_token: 'x' } }));
    expect(() => readComposeTarget({ file: join(ROOT, 'docker-compose.yml'), credentials: bad, topology: TOPOLOGY }))
      .toThrow(/bad-credentials\.json: "primary" needs "root_token" and its key shares/);
    expect(() => readComposeTarget({ file: join(ROOT, 'docker-compose.yml'), credentials: bad, topology: join(dir, 'none.json') }))
      .toThrow(/cannot read the topology description .*none\.json/);
  });

  it('kills and starts a node with docker compose (an argv of $DOCKER); a failure names the command and its stderr\'s first line', async () => {
    // Nothing listens on these ports (this test's range), so a killed node stops answering at once.
    const doc = parseDocument(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'));
    ['primary-1', 'primary-2', 'primary-3', 'dr-1', 'dr-2', 'dr-3', 'perf-1'].forEach((s, i) => doc.setIn(['services', s, 'ports'], doc.createNode([`127.0.0.1:${26780 + i}:8200`])));
    const file = composeFile('unused-ports.yml', String(doc));
    const calls = join(dir, 'calls.jsonl');
    const docker = join(dir, 'docker with space');
    // Succeeds for primary-1 only, as an engine without the others' containers would.
    writeFileSync(docker, `#!${process.execPath}
require('node:fs').appendFileSync(${JSON.stringify(calls)}, JSON.stringify(process.argv.slice(2)) + '\\n');
if (process.argv.at(-1) !== 'primary-1') {
  process.stderr.write('\\nError response from daemon: No such container: p-' + process.argv.at(-1) + '-1\\nsecond line\\n');
  process.exit(1);
}
`);
    chmodSync(docker, 0o755);
    process.env['DOCKER'] = docker;
    const t = readComposeTarget({ file, projectName: 'my-proj', credentials: credentials(), topology: TOPOLOGY });
    const [p1, p2] = t.pair[0].nodes;
    await p1!.kill('SIGKILL');
    await p1!.start();
    await expect(p2!.kill('SIGTERM')).rejects.toThrow(/^docker compose kill -s SIGTERM primary-2 failed: Error response from daemon: No such container: p-primary-2-1$/);
    await expect(p2!.start()).rejects.toThrow(/^docker compose start primary-2 failed: Error response from daemon: No such container: p-primary-2-1$/);
    const recorded = readFileSync(calls, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(recorded).toEqual([
      ['compose', '-f', file, '-p', 'my-proj', 'kill', '-s', 'SIGKILL', 'primary-1'],
      ['compose', '-f', file, '-p', 'my-proj', 'start', 'primary-1'],
      ['compose', '-f', file, '-p', 'my-proj', 'kill', '-s', 'SIGTERM', 'primary-2'],
      ['compose', '-f', file, '-p', 'my-proj', 'start', 'primary-2'],
    ]);
    process.env['DOCKER'] = join(dir, 'no-such-docker');
    await expect(p1!.start()).rejects.toThrow(/docker compose start primary-1: cannot run ".*no-such-docker" \(set DOCKER or put docker on PATH\)/);
  });
});

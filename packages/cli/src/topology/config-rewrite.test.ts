import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfigFile } from '@strongroom/api';
import { rewriteConfig } from './config-rewrite';
import { allNodes, loadTopology, TopologyError } from './description';
import { addressMap, portMap } from './local-topology';

/**
 * The local topology runs the compose deployment's own role configs: each node's file is the
 * role's text with only its addresses and data path changed, and the server loads it.
 */

const TOPOLOGY = resolve(__dirname, '../../../../deploy/topology.json');
const topology = loadTopology(TOPOLOGY);
const ports = portMap(topology, 26500);
const addresses = addressMap(topology, ports);
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-config-rewrite-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const cases = allNodes(topology).map(({ cluster, node }) => [node.name, cluster] as const);

test.each(cases)('the config of %s loads and differs from its role file only in addresses and the data path', async (name, cluster) => {
  const source = readFileSync(topology.clusters[cluster].config, 'utf8');
  const p = ports.nodes.get(name) as { api: number; cluster: number };
  const dataPath = join(dir, name, 'data');
  const written = rewriteConfig(source, { apiListen: `127.0.0.1:${p.api}`, clusterListen: `127.0.0.1:${p.cluster}`, addresses, dataPath });

  // Undo exactly the documented substitutions: what is left must be the role's text.
  let undone = written.split(JSON.stringify(dataPath)).join('"/strongroom/data"');
  undone = undone.replace(/(https?):\/\/127\.0\.0\.1:(\d+)/g, (_w, scheme: string, port: string) => {
    const back = [...addresses].find(([, to]) => to === `127.0.0.1:${port}`);
    return `${scheme}://${back?.[0] ?? 'unmapped'}`;
  });
  undone = undone.split(`127.0.0.1:${p.api}`).join('0.0.0.0:8200').split(`127.0.0.1:${p.cluster}`).join('0.0.0.0:8201');
  expect(undone).toBe(source);
  expect(written).not.toMatch(/0\.0\.0\.0|https?:\/\/(?!127\.0\.0\.1)/);

  const file = join(dir, `${name}.hcl`);
  writeFileSync(file, written);
  expect(addresses.size).toBe(2 * allNodes(topology).length + 3);
  const config = await loadConfigFile(file, {
    VAULT_RAFT_NODE_ID: name, VAULT_API_ADDR: `http://127.0.0.1:${p.api}`, VAULT_CLUSTER_ADDR: `https://127.0.0.1:${p.cluster}`,
    ...(cluster === 'unseal' ? {} : { VAULT_TOKEN: 'seal-token-for-the-test' }),
  });
  expect(config.storage.path).toBe(dataPath);
  expect(config.storage.nodeId).toBe(name);
  expect(config.listeners[0]).toMatchObject({ host: '127.0.0.1', port: p.api });
  for (const retry of config.storage.retryJoin ?? []) expect(retry.leaderApiAddr).toMatch(/^http:\/\/127\.0\.0\.1:265\d\d$/);
  if (cluster !== 'unseal') expect(config.seals?.[0]?.address).toBe(`http://127.0.0.1:${ports.nodes.get('unseal')?.api}`);
});

test('an address the description does not know is refused, not left pointing at a compose hostname', () => {
  const source = 'storage "raft" {\n  path = "/strongroom/data"\n}\nseal "transit" {\n  address = "http://elsewhere:8200"\n}\n';
  expect(() => rewriteConfig(source, { apiListen: '127.0.0.1:1', clusterListen: '127.0.0.1:2', addresses, dataPath: '/tmp/x' }))
    .toThrow(TopologyError);
});

import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { allNodes, loadTopology, parseTopology, TopologyError } from './description';

/** The topology description: the compose one loads, and a broken one is refused naming the field and the rule. */

const FILE = resolve(__dirname, '../../../../deploy/topology.json');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const raw = (): Doc => JSON.parse(readFileSync(FILE, 'utf8'));

test('deploy/topology.json describes the unseal node, three primary and three DR nodes and one performance node', () => {
  const t = loadTopology(FILE);
  expect(allNodes(t).map((n) => n.node.name)).toEqual(['unseal', 'primary-1', 'primary-2', 'primary-3', 'dr-1', 'dr-2', 'dr-3', 'perf-1']);
  expect(t.clusters.primary.nodes[0]).toEqual({ name: 'primary-1', api_addr: 'http://primary-1:8200', cluster_addr: 'https://primary-1:8201' });
  for (const c of Object.values(t.clusters)) expect(isAbsolute(c.config)).toBe(true);
  expect([t.clusters.primary.seal_key, t.clusters.dr.seal_key, t.clusters.perf.seal_key]).toEqual(['primary', 'dr-secondary', 'perf-secondary']);
  expect(t.snapshot.endpoint).toBe('http://s3:4566');
});

test.each([
  ['a cluster without its seal key', (d: Doc) => { delete d.clusters.dr.seal_key; }, /clusters\.dr\.seal_key: expected a non-empty string/],
  ['a cluster address without https', (d: Doc) => { d.clusters.primary.nodes[1].cluster_addr = 'http://primary-2:8201'; }, /clusters\.primary\.nodes\[1\]\.cluster_addr: expected a https:\/\/host:port URL/],
  ['an address without a port', (d: Doc) => { d.clusters.perf.nodes[0].api_addr = 'http://perf-1'; }, /clusters\.perf\.nodes\[0\]\.api_addr/],
  ['a node name used twice', (d: Doc) => { d.clusters.dr.nodes[0].name = 'primary-1'; }, /clusters\.dr\.nodes\[0\]\.name: "primary-1" is used twice/],
  ['a snapshot target that is no emulator', (d: Doc) => { d.snapshot.endpoint = 'http://s3.example:443'; }, /snapshot\.endpoint: must be the endpoint of one of the emulators/],
  ['a retain of zero', (d: Doc) => { d.snapshot.retain = 0; }, /snapshot\.retain: expected a whole number of at least 1/],
])('refuses %s', (_what, spoil, message) => {
  const d = raw();
  spoil(d);
  expect(() => parseTopology(d)).toThrow(TopologyError);
  expect(() => parseTopology(d)).toThrow(message);
});

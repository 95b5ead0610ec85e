import { TopologyError } from './description';

/**
 * Turns a role's HCL file, written for containers, into the one a local process runs: the same
 * text with only its addresses and its data path changed, so that local runs prove the files
 * the compose deployment mounts.
 */
export interface ConfigRewrite {
  /** What `0.0.0.0:8200` and `0.0.0.0:8201` become: this node's loopback API and cluster listeners. */
  apiListen: string;
  clusterListen: string;
  /** `host:port` of the description (as in `http://primary-1:8200`) -> `127.0.0.1:port`. */
  addresses: ReadonlyMap<string, string>;
  /** The storage's `path`. */
  dataPath: string;
}

const URL_IN_TEXT = /\b(https?):\/\/([A-Za-z0-9.-]+):(\d+)/g;
// The first `path = "..."` at the start of a line is the storage stanza's (the seal's is `mount_path`).
const STORAGE_PATH = /^(\s*path\s*=\s*)"[^"]*"/m;

export function rewriteConfig(text: string, r: ConfigRewrite): string {
  let out = text.split('0.0.0.0:8200').join(r.apiListen).split('0.0.0.0:8201').join(r.clusterListen);
  out = out.replace(URL_IN_TEXT, (whole, scheme: string, host: string, port: string) => {
    const to = r.addresses.get(`${host}:${port}`);
    if (to !== undefined) return `${scheme}://${to}`;
    if (host === '127.0.0.1') return whole;
    throw new TopologyError(`the config names ${whole}, which is not an address of the topology description`);
  });
  if (!STORAGE_PATH.test(out)) throw new TopologyError('the config has no storage path to place in the node\'s directory');
  // JSON string escaping is HCL's too, so any directory name survives.
  return out.replace(STORAGE_PATH, (_whole, head: string) => `${head}${JSON.stringify(r.dataPath)}`);
}

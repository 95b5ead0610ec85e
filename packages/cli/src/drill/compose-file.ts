import { readFileSync } from 'node:fs';
import { TargetError } from './operator-credentials';

/**
 * Where the host reaches each service of a compose file: its published ports, in the short
 * (`127.0.0.1:8200:8200`, `8200-8201:8200-8201/tcp`, `[::1]:8200:8200`) or the long syntax
 * (`target:`, `published:`, `host_ip:`, which `docker compose config` prints).
 */

export type ComposeServices = Record<string, unknown>;

interface PortMapping {
  container: [number, number];
  /** Absent when compose picks a host port at random. */
  host?: [number, number];
  hostIp?: string;
}

/** Reads the file's `services`; YAML merge keys (`<<: *node`) resolve as compose resolves them. */
export function readComposeServices(file: string): ComposeServices {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new TargetError(`cannot read the compose file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // Loaded here only: a drill on a topology directory never needs the YAML parser.
  const { parse } = require('yaml') as typeof import('yaml');
  let doc: unknown;
  try {
    doc = parse(text, { merge: true });
  } catch (err) {
    throw new TargetError(`the compose file ${file} is not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const services = (doc as { services?: unknown } | null)?.services;
  if (typeof services !== 'object' || services === null || Array.isArray(services)) throw new TargetError(`${file}: "services" must be a map of services`);
  return services as ComposeServices;
}

function range(text: string, where: string): [number, number] {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  const first = Number(m?.[1]);
  const last = m?.[2] === undefined ? first : Number(m[2]);
  if (!m || first < 1 || last > 65_535 || last < first) throw new TargetError(`${where}: "${text}" is not a port or a port range`);
  return [first, last];
}

function interpolated(text: string, where: string): string {
  if (text.includes('$')) throw new TargetError(`${where}: "${text}" holds a variable; give the drill the file that \`docker compose config\` prints, with the ports written out`);
  return text;
}

/** One entry of `ports:`; null for a UDP or SCTP port, which cannot be an HTTP API. */
function parseEntry(entry: unknown, where: string): PortMapping | null {
  if (typeof entry === 'number') return { container: range(String(entry), where) };
  if (typeof entry === 'string') {
    const [spec = '', protocol = 'tcp'] = interpolated(entry, where).split('/');
    if (protocol !== 'tcp') return null;
    // From the right, so that an IPv6 host address keeps its colons.
    const parts = spec.split(':');
    const container = range(parts.pop() ?? '', where);
    if (parts.length === 0) return { container };
    const host = parts.pop() as string;
    const hostIp = parts.length > 0 ? parts.join(':') : undefined;
    return { container, ...(host !== '' ? { host: range(host, where) } : {}), ...(hostIp !== undefined ? { hostIp } : {}) };
  }
  if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
    const e = entry as Record<string, unknown>;
    if (e['protocol'] !== undefined && e['protocol'] !== 'tcp') return null;
    const text = (v: unknown, field: string): string | undefined => {
      if (v === undefined || v === null || v === '') return undefined;
      if (typeof v !== 'string' && typeof v !== 'number') throw new TargetError(`${where}.${field}: expected a string or a number`);
      return interpolated(String(v), `${where}.${field}`);
    };
    const target = text(e['target'], 'target');
    if (target === undefined) throw new TargetError(`${where}: the long syntax needs "target"`);
    const published = text(e['published'], 'published');
    const hostIp = text(e['host_ip'], 'host_ip');
    return {
      container: range(target, `${where}.target`),
      ...(published !== undefined ? { host: range(published, `${where}.published`) } : {}),
      ...(hostIp !== undefined ? { hostIp } : {}),
    };
  }
  throw new TargetError(`${where}: expected a port string or a map with "target"`);
}

/** An address the host can dial: a wildcard listens on loopback too, where the drill reaches it. */
function dialHost(hostIp: string | undefined): string {
  const ip = hostIp?.replace(/^\[(.*)\]$/, '$1');
  if (ip === undefined || ip === '' || ip === '0.0.0.0' || ip === '::') return '127.0.0.1';
  return ip.includes(':') ? `[${ip}]` : ip;
}

/** `http://HOST:PORT` at which the host reaches `containerPort` of `service`. */
export function publishedAddress(services: ComposeServices, service: string, containerPort: number, file: string): string {
  const where = `${file}: service "${service}"`;
  const s = services[service];
  if (typeof s !== 'object' || s === null) throw new TargetError(`${where} is missing (a node of the topology is a service of the same name)`);
  const ports = (s as { ports?: unknown }).ports;
  if (ports !== undefined && !Array.isArray(ports)) throw new TargetError(`${where}: "ports" must be a list`);
  const mappings = (ports ?? []).map((p, i) => parseEntry(p, `${where} ports[${i}]`));
  const m = mappings.find((p) => p !== null && p.container[0] <= containerPort && containerPort <= p.container[1]);
  if (!m) throw new TargetError(`${where} publishes no port for its API port ${containerPort}; publish it (e.g. "127.0.0.1:${containerPort}:${containerPort}") so the drill can reach the node`);
  if (!m.host) throw new TargetError(`${where} publishes its API port ${containerPort} on a host port compose picks at random; give it a fixed host port`);
  const [hostFirst, hostLast] = m.host;
  const [containerFirst, containerLast] = m.container;
  if (hostLast - hostFirst !== containerLast - containerFirst) {
    throw new TargetError(`${where}: host ports ${hostFirst}-${hostLast} do not map one to one onto container ports ${containerFirst}-${containerLast}; give its API port one host port`);
  }
  return `http://${dialHost(m.hostIp)}:${hostFirst + (containerPort - containerFirst)}`;
}

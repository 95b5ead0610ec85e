/**
 * Projects' secrets and their numbered versions, with the service's rules: secret IDs of 1-255
 * letters, digits, `_` and `-`; a replication policy on create; label syntax and count; payloads
 * up to 64 KiB with an optional CRC32C the server checks; `latest` as the newest version;
 * disabled and destroyed versions that cannot be read.
 */
import { status } from '@grpc/grpc-js';
import { crc32c } from '../cloud3/crc32c';

export const MAX_PAYLOAD_BYTES = 64 * 1024;
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
const PROJECT = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$|^\d{1,19}$/;
const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;
const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const MAX_LABELS = 64;

/** A refusal with a gRPC status code; the message is what the client sees in `details`. */
export class SmError extends Error {
  override readonly name = 'SmError';

  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

export type VersionState = 'ENABLED' | 'DISABLED' | 'DESTROYED';

export interface StoredVersion {
  number: number;
  state: VersionState;
  data?: Buffer;
  createTime: number;
  destroyTime?: number;
  etag: string;
}

export interface StoredSecret {
  project: string;
  id: string;
  createTime: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  replication: unknown;
  etag: string;
  versions: StoredVersion[];
}

const invalid = (message: string): SmError => new SmError(status.INVALID_ARGUMENT, message);
const notFound = (what: string): SmError => new SmError(status.NOT_FOUND, `${what} not found or has no versions.`);

/** `projects/{p}` → p, or INVALID_ARGUMENT naming the field. */
export function parseProject(field: string, value: string): string {
  const m = /^projects\/([^/]+)$/.exec(value);
  if (!m || !PROJECT.test(m[1]!)) throw invalid(`${field} must be of the form projects/{project}, got '${value}'.`);
  return m[1]!;
}

export function parseSecretName(field: string, value: string): { project: string; id: string } {
  const m = /^projects\/([^/]+)\/secrets\/([^/]+)$/.exec(value);
  if (!m || !PROJECT.test(m[1]!)) throw invalid(`${field} must be of the form projects/{project}/secrets/{secret}, got '${value}'.`);
  return { project: m[1]!, id: m[2]! };
}

export function parseVersionName(field: string, value: string): { project: string; id: string; version: string } {
  const m = /^projects\/([^/]+)\/secrets\/([^/]+)\/versions\/([^/]+)$/.exec(value);
  if (!m || !PROJECT.test(m[1]!) || !(/^[1-9]\d*$/.test(m[3]!) || m[3] === 'latest')) {
    throw invalid(`${field} must be of the form projects/{project}/secrets/{secret}/versions/{version|latest}, got '${value}'.`);
  }
  return { project: m[1]!, id: m[2]!, version: m[3]! };
}

export function checkLabels(labels: Record<string, string>): Record<string, string> {
  const entries = Object.entries(labels);
  if (entries.length > MAX_LABELS) throw invalid(`A secret may have at most ${MAX_LABELS} labels.`);
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key)) throw invalid(`Label key '${key}' must start with a lowercase letter and hold at most 63 lowercase letters, digits, _ or -.`);
    if (!LABEL_VALUE.test(value)) throw invalid(`The value of label '${key}' must hold at most 63 lowercase letters, digits, _ or -.`);
  }
  return { ...labels };
}

export class SecretStore {
  private readonly secrets = new Map<string, StoredSecret>();
  private lastTime = 0;

  create(project: string, id: string, secret: { labels: Record<string, string>; annotations: Record<string, string>; replication: unknown }): StoredSecret {
    if (!SECRET_ID.test(id)) throw invalid(`secret_id '${id}' must be 1-255 characters of letters, digits, _ and -.`);
    if (!secret.replication) throw invalid('secret.replication is required (automatic or user_managed).');
    const key = `${project}/${id}`;
    if (this.secrets.has(key)) throw new SmError(status.ALREADY_EXISTS, `Secret [projects/${project}/secrets/${id}] already exists.`);
    const stored: StoredSecret = {
      project,
      id,
      createTime: this.now(),
      labels: checkLabels(secret.labels),
      annotations: { ...secret.annotations },
      replication: secret.replication,
      etag: this.etag(),
      versions: [],
    };
    this.secrets.set(key, stored);
    return stored;
  }

  get(project: string, id: string): StoredSecret {
    const secret = this.secrets.get(`${project}/${id}`);
    if (!secret) throw new SmError(status.NOT_FOUND, `Secret [projects/${project}/secrets/${id}] not found.`);
    return secret;
  }

  update(secret: StoredSecret, paths: string[], changes: { labels: Record<string, string>; annotations: Record<string, string> }): StoredSecret {
    if (paths.length === 0) throw invalid('update_mask must name at least one field.');
    for (const path of paths) {
      if (path === 'labels') secret.labels = checkLabels(changes.labels);
      else if (path === 'annotations') secret.annotations = { ...changes.annotations };
      else throw invalid(`update_mask path '${path}' cannot be updated by this emulator (labels, annotations).`);
    }
    secret.etag = this.etag();
    return secret;
  }

  delete(project: string, id: string, etag: string): void {
    const secret = this.get(project, id);
    checkEtag(etag, secret.etag);
    this.secrets.delete(`${project}/${id}`);
  }

  addVersion(secret: StoredSecret, data: Buffer, checksum: string | null): StoredVersion {
    if (data.length > MAX_PAYLOAD_BYTES) throw invalid(`payload.data is ${data.length} bytes; at most ${MAX_PAYLOAD_BYTES} are allowed.`);
    if (checksum !== null && BigInt(checksum) !== BigInt(crc32c(data))) {
      throw invalid('payload.data_crc32c does not match the CRC32C of payload.data: the payload was corrupted in transit.');
    }
    const version: StoredVersion = { number: secret.versions.length + 1, state: 'ENABLED', data, createTime: this.now(), etag: this.etag() };
    secret.versions.push(version);
    return version;
  }

  /** A version by number or `latest` (the newest version, whatever its state). */
  version(project: string, id: string, version: string): { secret: StoredSecret; version: StoredVersion } {
    const secret = this.get(project, id);
    const found = version === 'latest' ? secret.versions.at(-1) : secret.versions[Number(version) - 1];
    if (!found) throw notFound(`Secret Version [projects/${project}/secrets/${id}/versions/${version}]`);
    return { secret, version: found };
  }

  setState(found: { secret: StoredSecret; version: StoredVersion }, state: VersionState, etag: string): StoredVersion {
    const { secret, version } = found;
    checkEtag(etag, version.etag);
    const name = `projects/${secret.project}/secrets/${secret.id}/versions/${version.number}`;
    if (version.state === 'DESTROYED') throw new SmError(status.FAILED_PRECONDITION, `Secret Version [${name}] is in DESTROYED state.`);
    version.state = state;
    if (state === 'DESTROYED') {
      delete version.data;
      version.destroyTime = this.now();
    }
    version.etag = this.etag();
    return version;
  }

  list(project: string): StoredSecret[] {
    return [...this.secrets.values()].filter((s) => s.project === project).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  all(): StoredSecret[] {
    return [...this.secrets.values()].sort((a, b) => (`${a.project}/${a.id}` < `${b.project}/${b.id}` ? -1 : 1));
  }

  clear(): void {
    this.secrets.clear();
  }

  /** Strictly increasing milliseconds, so create times order like creation. */
  private now(): number {
    this.lastTime = Math.max(Date.now(), this.lastTime + 1);
    return this.lastTime;
  }

  private etag(): string {
    return `"${this.now().toString(16)}"`;
  }
}

function checkEtag(given: string, current: string): void {
  if (given && given !== current) throw new SmError(status.ABORTED, `The etag ${given} does not match the current etag; reread and retry.`);
}

/**
 * The cloud3-sm emulator: a Secret Manager gRPC server (secrets, versions, access, enable,
 * disable, destroy, delete, list) built from the official client's own .proto files, plus a small
 * HTTP listener for the admin view and the service accounts' token endpoint.
 *
 * Point the client at it with `{ apiEndpoint: host, port, sslCreds: grpc.credentials.createInsecure() }`.
 * Over an insecure channel the client sends no credentials; a call that carries
 * `authorization: Bearer ...` has it checked (a token issued here, or a JWT signed by a service
 * account key generated here, which only reaches its own project). `requireAuth` refuses calls
 * without one.
 */
import { Server, ServerCredentials, status, type Metadata, type ServiceError, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Faults, HttpError, isRecord, listen, readBody, readJson, sendJson, type Listening } from '../json-http';
import { crc32c } from '../cloud3/crc32c';
import { Cloud3Auth, type Principal, type ServiceAccountCredentials } from './auth';
import { secretManagerService } from './protos';
import {
  parseProject,
  parseSecretName,
  parseVersionName,
  SecretStore,
  SmError,
  type StoredSecret,
  type StoredVersion,
} from './store';

export interface Cloud3SmStartOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** The gRPC port; default 0, a free port. The admin listener always takes a free port. */
  port?: number;
  /** Refuse calls without an `authorization` bearer token (UNAUTHENTICATED). Default false. */
  requireAuth?: boolean;
}

/** What the admin view shows of one secret: every version, payloads included. */
export interface Cloud3SecretView {
  name: string;
  labels: Record<string, string>;
  versions: Array<{ name: string; state: string; value?: string; valueBase64?: string }>;
}

type Request = Record<string, any>;
type Rpc = (request: Request, principal: Principal | undefined) => unknown;

const DEFAULT_PAGE_SIZE = 25_000;
const ADMIN_BODY_LIMIT = 1024 * 1024;

const timestamp = (ms: number): { seconds: string; nanos: number } => ({ seconds: String(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
const secretName = (s: StoredSecret): string => `projects/${s.project}/secrets/${s.id}`;
const versionName = (s: StoredSecret, v: StoredVersion): string => `${secretName(s)}/versions/${v.number}`;

export class Cloud3SecretManagerEmulator {
  private readonly store = new SecretStore();
  private readonly auth = new Cloud3Auth();
  private readonly faults = new Faults();
  private server!: Server;
  private admin!: Listening;
  private grpcHost = '127.0.0.1';
  private grpcPort = 0;
  private requireAuth = false;

  private constructor() {}

  static async start(options: Cloud3SmStartOptions = {}): Promise<Cloud3SecretManagerEmulator> {
    const emulator = new Cloud3SecretManagerEmulator();
    emulator.grpcHost = options.host ?? '127.0.0.1';
    emulator.requireAuth = options.requireAuth ?? false;
    emulator.server = new Server();
    emulator.server.addService(secretManagerService(), emulator.implementation());
    const address = emulator.grpcHost.includes(':') ? `[${emulator.grpcHost}]` : emulator.grpcHost;
    emulator.grpcPort = await new Promise<number>((resolve, reject) => {
      emulator.server.bindAsync(`${address}:${options.port ?? 0}`, ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      );
    });
    try {
      emulator.admin = await listen(
        { host: emulator.grpcHost, port: 0 },
        (req, res, url) => emulator.adminRequest(req, res, url),
        () => new HttpError(500, { error: { code: 500, message: 'Internal error' } }),
      );
    } catch (error) {
      emulator.server.forceShutdown();
      throw error;
    }
    return emulator;
  }

  /** The client's `apiEndpoint`. */
  get host(): string {
    return this.grpcHost;
  }

  /** The client's `port`. */
  get port(): number {
    return this.grpcPort;
  }

  /** `host:port`, the form `STRONGROOM_CLOUD3_SM_ENDPOINT` takes. */
  get endpoint(): string {
    return `${this.grpcHost.includes(':') ? `[${this.grpcHost}]` : this.grpcHost}:${this.grpcPort}`;
  }

  /** Base URL of the admin listener (`/_admin/...` and the service accounts' `/token`). */
  get adminUrl(): string {
    return this.admin.url;
  }

  async close(): Promise<void> {
    this.server.forceShutdown();
    await this.admin.close();
  }

  /** A bearer token reaching every project (random unless given). */
  issueToken(token?: string): string {
    return this.auth.issueToken(token);
  }

  /** A service account of `project` with a new key: the credentials file a client is given. */
  createServiceAccount(project: string, name = 'strongroom-sync'): ServiceAccountCredentials {
    parseProject('project', `projects/${project}`);
    return this.auth.createServiceAccount(project, name, `${this.admin.url}/token`);
  }

  deleteServiceAccountKey(keyId: string): void {
    this.auth.deleteServiceAccountKey(keyId);
  }

  /** Every secret of every project, with all versions and their payloads. */
  secrets(): Cloud3SecretView[] {
    return this.store.all().map((s) => ({
      name: secretName(s),
      labels: { ...s.labels },
      versions: s.versions.map((v) => ({
        name: versionName(s, v),
        state: v.state,
        ...(v.data ? { value: v.data.toString('utf8'), valueBase64: v.data.toString('base64') } : {}),
      })),
    }));
  }

  /** The next `count` RPCs are answered with `code` (default UNAVAILABLE). */
  failNextRequests(count: number, code: status = status.UNAVAILABLE): void {
    this.faults.failNext(count, code);
  }

  reset(): void {
    this.store.clear();
    this.auth.clear();
    this.faults.failNext(0);
  }

  private implementation(): UntypedServiceImplementation {
    const rpcs: Record<string, Rpc> = {
      CreateSecret: (r, p) => {
        const project = this.project('parent', r.parent, p, 'secrets.create');
        const secret = r.secret ?? {};
        const replication = secret.replication;
        if (!replication || (!replication.automatic && !replication.userManaged)) {
          throw new SmError(status.INVALID_ARGUMENT, 'secret.replication is required (automatic or user_managed).');
        }
        if (replication.userManaged && !(replication.userManaged.replicas?.length > 0)) {
          throw new SmError(status.INVALID_ARGUMENT, 'secret.replication.user_managed.replicas needs at least one location.');
        }
        return this.secretMessage(this.store.create(project, r.secretId, { labels: secret.labels ?? {}, annotations: secret.annotations ?? {}, replication }));
      },
      GetSecret: (r, p) => this.secretMessage(this.secret('name', r.name, p, 'secrets.get')),
      UpdateSecret: (r, p) => {
        const secret = this.secret('secret.name', r.secret?.name ?? '', p, 'secrets.update');
        const changes = { labels: r.secret?.labels ?? {}, annotations: r.secret?.annotations ?? {} };
        return this.secretMessage(this.store.update(secret, r.updateMask?.paths ?? [], changes));
      },
      DeleteSecret: (r, p) => {
        const { project, id } = parseSecretName('name', r.name);
        this.allow(p, project, 'secrets.delete', r.name);
        this.store.delete(project, id, r.etag ?? '');
        return {};
      },
      ListSecrets: (r, p) => {
        const project = this.project('parent', r.parent, p, 'secrets.list');
        const matching = this.store.list(project).filter(secretFilter(r.filter ?? ''));
        const page = paginate(matching, r.pageSize, r.pageToken);
        return { secrets: page.items.map((s) => this.secretMessage(s)), nextPageToken: page.next, totalSize: matching.length };
      },
      AddSecretVersion: (r, p) => {
        const secret = this.secret('parent', r.parent, p, 'versions.add');
        const payload = r.payload;
        if (!payload) throw new SmError(status.INVALID_ARGUMENT, 'payload is required.');
        const data = Buffer.from(payload.data ?? []);
        const checksum = payload.dataCrc32c === undefined || payload.dataCrc32c === null ? null : String(payload.dataCrc32c);
        return this.versionMessage(secret, this.store.addVersion(secret, data, checksum), checksum !== null);
      },
      GetSecretVersion: (r, p) => {
        const found = this.version(r.name, p, 'versions.get');
        return this.versionMessage(found.secret, found.version);
      },
      ListSecretVersions: (r, p) => {
        const secret = this.secret('parent', r.parent, p, 'versions.list');
        const matching = [...secret.versions].reverse().filter(versionFilter(r.filter ?? ''));
        const page = paginate(matching, r.pageSize, r.pageToken);
        return { versions: page.items.map((v) => this.versionMessage(secret, v)), nextPageToken: page.next, totalSize: matching.length };
      },
      AccessSecretVersion: (r, p) => {
        const { secret, version } = this.version(r.name, p, 'versions.access');
        if (version.state !== 'ENABLED' || !version.data) {
          throw new SmError(status.FAILED_PRECONDITION, `Secret Version [${versionName(secret, version)}] is in ${version.state} state.`);
        }
        return { name: versionName(secret, version), payload: { data: version.data, dataCrc32c: String(crc32c(version.data)) } };
      },
      EnableSecretVersion: (r, p) => this.changeState(r, p, 'ENABLED'),
      DisableSecretVersion: (r, p) => this.changeState(r, p, 'DISABLED'),
      DestroySecretVersion: (r, p) => this.changeState(r, p, 'DESTROYED'),
    };
    return Object.fromEntries(
      Object.entries(rpcs).map(([name, rpc]) => [
        name,
        (call: { request: Request; metadata: Metadata }, callback: (error: Partial<ServiceError> | null, value?: unknown) => void) => {
          try {
            const injected = this.faults.take();
            if (injected !== undefined) throw new SmError(injected, `Injected fault (${status[injected]}).`);
            const header = call.metadata.get('authorization')[0];
            const principal = this.auth.authenticate(header === undefined ? undefined : String(header));
            if (!principal && this.requireAuth) {
              throw new SmError(status.UNAUTHENTICATED, 'Request is missing required authentication credential: expected an OAuth 2 access token.');
            }
            callback(null, rpc(call.request, principal));
          } catch (error) {
            if (error instanceof SmError) callback({ code: error.code, details: error.message });
            else callback({ code: status.INTERNAL, details: 'Internal error.' });
          }
        },
      ]),
    );
  }

  private changeState(r: Request, p: Principal | undefined, state: 'ENABLED' | 'DISABLED' | 'DESTROYED'): unknown {
    const permission = state === 'ENABLED' ? 'versions.enable' : state === 'DISABLED' ? 'versions.disable' : 'versions.destroy';
    const found = this.version(r.name, p, permission);
    return this.versionMessage(found.secret, this.store.setState(found, state, r.etag ?? ''));
  }

  private project(field: string, value: string, principal: Principal | undefined, permission: string): string {
    const project = parseProject(field, value);
    this.allow(principal, project, permission, value);
    return project;
  }

  private secret(field: string, value: string, principal: Principal | undefined, permission: string): StoredSecret {
    const { project, id } = parseSecretName(field, value);
    this.allow(principal, project, permission, value);
    return this.store.get(project, id);
  }

  private version(value: string, principal: Principal | undefined, permission: string): { secret: StoredSecret; version: StoredVersion } {
    const { project, id, version } = parseVersionName('name', value);
    this.allow(principal, project, permission, value);
    return this.store.version(project, id, version);
  }

  /** A service account reaches only its own project, as if granted a role there and nowhere else. */
  private allow(principal: Principal | undefined, project: string, permission: string, resource: string): void {
    if (principal?.project !== undefined && principal.project !== project) {
      throw new SmError(status.PERMISSION_DENIED, `Permission 'secretmanager.${permission}' denied for resource '${resource}' (or it may not exist).`);
    }
  }

  private secretMessage(s: StoredSecret): unknown {
    return {
      name: secretName(s),
      replication: s.replication,
      createTime: timestamp(s.createTime),
      labels: { ...s.labels },
      annotations: { ...s.annotations },
      etag: s.etag,
    };
  }

  private versionMessage(s: StoredSecret, v: StoredVersion, clientChecksum = false): unknown {
    return {
      name: versionName(s, v),
      createTime: timestamp(v.createTime),
      ...(v.destroyTime === undefined ? {} : { destroyTime: timestamp(v.destroyTime) }),
      state: v.state,
      replicationStatus: { automatic: {} },
      etag: v.etag,
      clientSpecifiedPayloadChecksum: clientChecksum,
    };
  }

  private async adminRequest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const bad = (message: string): HttpError => new HttpError(400, { error: { code: 400, message } });
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams((await readBody(req, ADMIN_BODY_LIMIT, () => bad('body too large'))).toString('utf8'));
      const answer = this.auth.exchange(form);
      return sendJson(res, answer.status, answer.body);
    }
    const route = url.pathname.startsWith('/_admin/') ? url.pathname.slice('/_admin/'.length) : undefined;
    const body = req.method === 'POST' ? await readJson(req, ADMIN_BODY_LIMIT, bad) : undefined;
    const input = isRecord(body) ? body : {};
    if (req.method === 'GET' && route === 'secrets') return sendJson(res, 200, { secrets: this.secrets() });
    if (req.method === 'GET' && route === 'endpoints') return sendJson(res, 200, { endpoint: this.endpoint, admin: this.adminUrl });
    if (req.method === 'POST' && route === 'tokens') {
      return sendJson(res, 200, { token: this.issueToken(typeof input.token === 'string' ? input.token : undefined) });
    }
    if (req.method === 'POST' && route === 'service-accounts') {
      if (typeof input.project !== 'string') throw bad('project is required');
      try {
        return sendJson(res, 200, this.createServiceAccount(input.project, typeof input.name === 'string' ? input.name : undefined));
      } catch (error) {
        throw error instanceof SmError ? bad(error.message) : error;
      }
    }
    if (req.method === 'POST' && route === 'faults') {
      const code = input.code === undefined ? status.UNAVAILABLE : typeof input.code === 'string' ? status[input.code as keyof typeof status] : Number(input.code);
      if (typeof code !== 'number' || !(code in status)) throw bad('code must be a gRPC status name or number');
      this.failNextRequests(Number(input.count ?? 1), code);
      return sendJson(res, 200, { pending: this.faults.pending });
    }
    if (req.method === 'POST' && route === 'reset') {
      this.reset();
      return sendJson(res, 200, {});
    }
    throw new HttpError(404, { error: { code: 404, message: 'No such admin route' } });
  }
}

/** A page from a `page_token` (an offset this server handed out) and `page_size` (0: the default). */
function paginate<T>(items: T[], pageSize: number | undefined, pageToken: string | undefined): { items: T[]; next: string } {
  const size = pageSize || DEFAULT_PAGE_SIZE;
  if (size < 0 || size > DEFAULT_PAGE_SIZE) throw new SmError(status.INVALID_ARGUMENT, `page_size must be between 0 and ${DEFAULT_PAGE_SIZE}.`);
  const start = pageToken ? Number(pageToken) : 0;
  if (!Number.isInteger(start) || start < 0) throw new SmError(status.INVALID_ARGUMENT, 'page_token is not valid.');
  const next = start + size < items.length ? String(start + size) : '';
  return { items: items.slice(start, start + size), next };
}

/** The list filter's simplest terms, joined by spaces or AND: `labels.k=v`, `labels.k:*`, `name:text`. */
function secretFilter(filter: string): (s: StoredSecret) => boolean {
  const tests = terms(filter).map((term) => {
    let m = /^labels\.([^=:]+)=(.*)$/.exec(term);
    if (m) return (s: StoredSecret) => s.labels[m![1]!] === unquote(m![2]!);
    m = /^labels\.([^=:]+):\*$/.exec(term);
    if (m) return (s: StoredSecret) => m![1]! in s.labels;
    m = /^name:(.+)$/.exec(term);
    if (m) return (s: StoredSecret) => s.id.includes(unquote(m![1]!));
    throw new SmError(status.INVALID_ARGUMENT, `filter term '${term}' is not supported by this emulator (labels.k=v, labels.k:*, name:text).`);
  });
  return (s) => tests.every((t) => t(s));
}

function versionFilter(filter: string): (v: StoredVersion) => boolean {
  const states = terms(filter).map((term) => {
    const m = /^state:(ENABLED|DISABLED|DESTROYED)$/.exec(term);
    if (!m) throw new SmError(status.INVALID_ARGUMENT, `filter term '${term}' is not supported by this emulator (state:STATE).`);
    return m[1];
  });
  return (v) => states.every((s) => v.state === s);
}

const terms = (filter: string): string[] => filter.split(/\s+(?:AND\s+)?/).filter(Boolean);
const unquote = (text: string): string => text.replace(/^"(.*)"$/, '$1');

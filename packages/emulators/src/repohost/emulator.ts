/**
 * The repohost emulator: the part of the repository host's REST API that manages Actions
 * secrets of repositories and of their deployment environments, as `@octokit/rest` calls it
 * with `baseUrl` pointed here.
 *
 * Requests carry `Authorization: token <t>` (or `Bearer <t>`) for a token added through
 * `addToken`. A token that does not reach a repository gets 404, as the service hides
 * repositories it cannot show; a read-only token gets 403 on writes. Test-only routes live
 * under `/_admin/` and are unauthenticated.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Faults, HttpError, listen, type Listening } from '../json-http';
import { badCredentials, badJson, notAccessible, notFound, RepohostError, requiresAuthentication } from './errors';
import {
  getSecret,
  newKeyPair,
  publicKeyOf,
  putSecret,
  RepohostStore,
  secretResource,
  sodiumReady,
  type Environment,
  type Repository,
  type RepositoryView,
  type SecretScope,
} from './store';

export interface RepohostStartOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

export interface RepohostTokenOptions {
  /** The token text; generated when absent. */
  token?: string;
  /** `owner/name` of the repositories it reaches; all of them when absent. */
  repositories?: string[];
  /** `read` tokens may list and read, not write. Default `write`. */
  permission?: 'read' | 'write';
}

interface TokenGrant {
  repositories: Set<string> | 'all';
  write: boolean;
}

type Json = Record<string, unknown>;

const MAX_BODY_BYTES = 1024 * 1024;
/** Groups: owner, repo, `secrets`, secret, `environments`, environment, `secrets`, secret. */
const API_ROUTE =
  /^\/repos\/([^/]+)\/([^/]+)(?:\/actions\/(secrets)(?:\/([^/]+))?|\/(environments)(?:\/([^/]+)(?:\/(secrets)(?:\/([^/]+))?)?)?)?\/?$/;

export class RepohostEmulator {
  private readonly store = new RepohostStore();
  private readonly tokens = new Map<string, TokenGrant>();
  private readonly faults = new Faults();
  private listening!: Listening;

  private constructor() {}

  static async start(options: RepohostStartOptions = {}): Promise<RepohostEmulator> {
    await sodiumReady();
    const emulator = new RepohostEmulator();
    const host = options.host ?? '127.0.0.1';
    // Each refusal goes out in the service's own shape, with the headers every answer carries.
    const shaped = (error: RepohostError) => new HttpError(error.status, JSON.parse(error.body()) as unknown, commonHeaders());
    emulator.listening = await listen({ host, ...(options.port === undefined ? {} : { port: options.port }) }, async (req, res, url) => {
      try {
        await emulator.handle(req, res, url);
      } catch (error) {
        if (error instanceof RepohostError) throw shaped(error);
        if (error instanceof URIError) throw shaped(new RepohostError(400, 'Malformed percent-encoding in the URL'));
        throw error;
      }
    }, () => shaped(new RepohostError(500, 'Server Error')));
    return emulator;
  }

  /** The `baseUrl` to give Octokit, e.g. `http://127.0.0.1:40123`. */
  get url(): string {
    return this.listening.url;
  }

  /** Stops listening and closes every connection, idle keep-alive ones included. */
  close(): Promise<void> {
    return this.listening.close();
  }

  /** Creates the repository (or returns the existing one) and answers its public key. */
  createRepository(fullName: string): { id: number; fullName: string; publicKey: { key_id: string; key: string } } {
    const repository = this.store.createRepository(fullName);
    return { id: repository.id, fullName: repository.fullName, publicKey: publicKeyOf(repository) };
  }

  addToken(options: RepohostTokenOptions = {}): string {
    const token = options.token ?? `rht_${randomBytes(18).toString('base64url')}`;
    this.tokens.set(token, {
      repositories: options.repositories ? new Set(options.repositories.map((r) => r.toLowerCase())) : 'all',
      write: (options.permission ?? 'write') === 'write',
    });
    return token;
  }

  /** Every repository, environment and secret, with the plaintext the emulator opened. */
  repositories(): RepositoryView[] {
    return this.store.view();
  }

  /** The plaintext of one secret, or undefined when there is none. */
  secretValue(fullName: string, name: string, environment?: string): string | undefined {
    const scope = this.scope(fullName, environment);
    return scope?.secrets.get(name.toUpperCase())?.value;
  }

  /** Replaces a public key, as the service may: writes sealed to the old key are then refused. */
  rotatePublicKey(fullName: string, environment?: string): { key_id: string; key: string } {
    const scope = this.scope(fullName, environment);
    if (!scope) throw notFound();
    scope.keys = newKeyPair();
    return publicKeyOf(scope);
  }

  /** Fault injection: the next `count` API requests (not admin ones) are answered with `status`. */
  failNextRequests(count: number, status = 503): void {
    if (!Number.isInteger(count) || count < 0) throw new RepohostError(400, 'count must be a non-negative integer');
    if (!Number.isInteger(status) || status < 400 || status > 599) throw new RepohostError(400, 'status must be 4xx or 5xx');
    this.faults.failNext(count, status);
  }

  /** Forgets repositories, tokens and pending faults. */
  reset(): void {
    this.store.repositories.clear();
    this.tokens.clear();
    this.faults.failNext(0);
  }

  private scope(fullName: string, environment: string | undefined): SecretScope | undefined {
    const repository = this.store.repositories.get(fullName.toLowerCase());
    if (!repository || environment === undefined) return repository;
    return repository.environments.get(environment.toLowerCase());
  }

  private async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const raw = await readBody(req);
    if (url.pathname.startsWith('/_admin/')) return this.handleAdmin(req.method ?? 'GET', url.pathname.slice('/_admin/'.length), raw, res);
    const injected = this.faults.take();
    if (injected !== undefined) throw new RepohostError(injected, 'Service Unavailable');
    const grant = this.authenticate(req);
    if (raw === undefined) throw new RepohostError(413, 'Request body too large');
    const route = API_ROUTE.exec(url.pathname);
    if (!route) throw notFound();
    const [, owner, repo, secrets, secretName, environments, environmentName, environmentSecrets, environmentSecretName] = route.map(
      (part) => (part === undefined ? undefined : decodeURIComponent(part)),
    );
    const repository = this.store.repository(owner ?? '', repo ?? '');
    if (!repository || (grant.repositories !== 'all' && !grant.repositories.has(repository.fullName.toLowerCase()))) throw notFound();
    const method = req.method ?? 'GET';
    if (method !== 'GET' && !grant.write) throw notAccessible();
    const body = method === 'PUT' ? parseJson(raw) : {};
    const query = url.searchParams;

    if (secrets !== undefined) return this.secretsRoute(method, repository, secretName, body, query, res);
    if (environments === undefined) {
      if (method !== 'GET') throw notFound();
      return sendJson(res, 200, repositoryResource(repository, this.listening.url));
    }
    if (environmentName === undefined) {
      if (method !== 'GET') throw notFound();
      const all = [...repository.environments.values()];
      return sendJson(res, 200, { total_count: all.length, environments: page(all, query).map((e) => this.environmentResource(repository, e)) });
    }
    if (environmentSecrets === undefined) {
      if (method === 'PUT') return sendJson(res, 200, this.environmentResource(repository, this.store.putEnvironment(repository, environmentName)));
      const environment = this.store.environment(repository, environmentName);
      if (method === 'GET') return sendJson(res, 200, this.environmentResource(repository, environment));
      if (method === 'DELETE') {
        repository.environments.delete(environment.name.toLowerCase());
        return sendEmpty(res, 204);
      }
      throw notFound();
    }
    return this.secretsRoute(method, this.store.environment(repository, environmentName), environmentSecretName, body, query, res);
  }

  /** The same five calls for a repository's secrets and for an environment's. */
  private secretsRoute(
    method: string,
    scope: SecretScope,
    name: string | undefined,
    body: Json,
    query: URLSearchParams,
    res: ServerResponse,
  ): void {
    if (name === undefined) {
      if (method !== 'GET') throw notFound();
      const all = [...scope.secrets.values()].sort((a, b) => a.name.localeCompare(b.name));
      return sendJson(res, 200, { total_count: all.length, secrets: page(all, query).map(secretResource) });
    }
    if (name === 'public-key') {
      if (method !== 'GET') throw notFound();
      return sendJson(res, 200, publicKeyOf(scope));
    }
    if (method === 'GET') return sendJson(res, 200, secretResource(getSecret(scope, name)));
    if (method === 'PUT') {
      const created = putSecret(scope, name, body);
      return created ? sendJson(res, 201, {}) : sendEmpty(res, 204);
    }
    if (method === 'DELETE') {
      const secret = getSecret(scope, name);
      scope.secrets.delete(secret.name);
      return sendEmpty(res, 204);
    }
    throw notFound();
  }

  private authenticate(req: IncomingMessage): TokenGrant {
    if (!req.headers['user-agent']) {
      throw new RepohostError(403, 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header.');
    }
    const header = req.headers.authorization;
    if (header === undefined) throw requiresAuthentication();
    const match = /^(?:token|bearer)\s+(\S+)$/i.exec(header);
    const grant = match ? this.tokens.get(match[1] ?? '') : undefined;
    if (!grant) throw badCredentials();
    return grant;
  }

  private environmentResource(repository: Repository, environment: Environment): Json {
    const path = `repos/${repository.fullName}/environments/${encodeURIComponent(environment.name)}`;
    return {
      id: environment.id,
      node_id: Buffer.from(`Environment:${environment.id}`).toString('base64'),
      name: environment.name,
      url: `${this.listening.url}/${path}`,
      html_url: `${this.listening.url}/${repository.fullName}/deployments/activity_log?environments_filter=${encodeURIComponent(environment.name)}`,
      created_at: environment.createdAt,
      updated_at: environment.updatedAt,
      protection_rules: [],
      deployment_branch_policy: null,
    };
  }

  private handleAdmin(method: string, path: string, raw: Buffer | undefined, res: ServerResponse): void {
    const body = raw === undefined || raw.length === 0 ? {} : parseJson(raw);
    const text = (name: string): string | undefined => (typeof body[name] === 'string' ? body[name] : undefined);
    if (method === 'GET' && path === 'repos') return sendJson(res, 200, { repositories: this.repositories() });
    if (method === 'POST' && path === 'repos') {
      const fullName = text('full_name') ?? '';
      if (!/^[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/.test(fullName)) throw new RepohostError(400, 'full_name must be owner/name');
      return sendJson(res, 200, this.createRepository(fullName));
    }
    if (method === 'POST' && path === 'tokens') {
      const repositories = Array.isArray(body.repositories) ? body.repositories.filter((r): r is string => typeof r === 'string') : undefined;
      const permission = text('permission');
      if (permission !== undefined && permission !== 'read' && permission !== 'write') {
        throw new RepohostError(400, "permission must be 'read' or 'write'");
      }
      return sendJson(res, 200, { token: this.addToken({ token: text('token'), repositories, permission }) });
    }
    if (method === 'POST' && path === 'rotate-key') {
      return sendJson(res, 200, this.rotatePublicKey(text('full_name') ?? '', text('environment')));
    }
    if (method === 'POST' && path === 'fail-next') {
      this.failNextRequests(typeof body.count === 'number' ? body.count : -1, typeof body.status === 'number' ? body.status : undefined);
      return sendJson(res, 200, {});
    }
    if (method === 'POST' && path === 'reset') {
      this.reset();
      return sendJson(res, 200, {});
    }
    throw notFound();
  }
}

function repositoryResource(repository: Repository, baseUrl: string): Json {
  const [owner = '', name = ''] = repository.fullName.split('/');
  return {
    id: repository.id,
    name,
    full_name: repository.fullName,
    owner: { login: owner },
    private: true,
    url: `${baseUrl}/repos/${repository.fullName}`,
  };
}

/** `per_page` (1 to 100, default 30) and `page` (from 1), clamped as the service clamps them. */
function page<T>(items: T[], query: URLSearchParams): T[] {
  const perPage = Math.min(100, Math.max(1, Number.parseInt(query.get('per_page') ?? '30', 10) || 30));
  const pageNumber = Math.max(1, Number.parseInt(query.get('page') ?? '1', 10) || 1);
  return items.slice((pageNumber - 1) * perPage, pageNumber * perPage);
}

function parseJson(raw: Buffer | undefined): Json {
  if (raw === undefined || raw.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw badJson();
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badJson();
  return value as Json;
}

/** The body, or undefined past the size limit (the rest is drained so the answer can be read). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const commonHeaders = (): Record<string, string> => ({
  'x-github-request-id': randomUUID(),
  'x-ratelimit-limit': '5000',
  'x-ratelimit-remaining': '4999',
});

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value));
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...commonHeaders(), 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, commonHeaders());
  res.end();
}

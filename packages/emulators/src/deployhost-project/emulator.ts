/**
 * The deployhost-project emulator: a deployment host's project environment-variable REST API
 * (create with upsert, list, read one, edit, delete), enough for the host's SDK or plain fetch
 * pointed at it with `serverURL`.
 *
 * Every API call needs `Authorization: Bearer <token>` of a token created here; a token reaches
 * the personal projects and the projects of the teams it was given, and a team's project is only
 * found with `?teamId=` naming that team. Admin routes under `/_admin/` are unauthenticated.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Faults, HttpError, isRecord, listen, readJson, sendJson, type Listening } from '../json-http';
import { checkEnvInput, DeployhostStore, type EnvInput, type EnvVar, type Project } from './store';

export interface DeployhostStartOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

export interface DeployhostToken {
  token: string;
  /** Teams whose projects the token reaches, besides personal ones. */
  teams: string[];
}

const BODY_LIMIT = 1024 * 1024;

const fail = (status: number, code: string, message: string, extra: Record<string, unknown> = {}): HttpError =>
  new HttpError(status, { error: { code, message, ...extra } });
const badRequest = (message: string): HttpError => fail(400, 'bad_request', message);
const projectNotFound = (): HttpError => fail(404, 'not_found', 'Project not found');
const envNotFound = (): HttpError => fail(404, 'env_not_found', 'Environment Variable not found');

const ENV_ROUTE = /^\/v(\d+)\/projects\/([^/]+)\/env(?:\/([^/]+))?\/?$/;

export class DeployhostProjectEmulator {
  private readonly store = new DeployhostStore();
  private readonly tokens = new Map<string, DeployhostToken>();
  private readonly faults = new Faults();
  private listening!: Listening;

  private constructor() {}

  static async start(options: DeployhostStartOptions = {}): Promise<DeployhostProjectEmulator> {
    const emulator = new DeployhostProjectEmulator();
    emulator.listening = await listen(
      options,
      (req, res, url) => emulator.handle(req, res, url),
      () => fail(500, 'internal_server_error', 'An unexpected internal error occurred'),
    );
    return emulator;
  }

  /** Base URL for the SDK's `serverURL`, e.g. `http://127.0.0.1:40123`. */
  get url(): string {
    return this.listening.url;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  /** A new API token (random unless given) reaching personal projects and those of `teams`. */
  createToken(options: { token?: string; teams?: string[] } = {}): DeployhostToken {
    const token = { token: options.token ?? randomBytes(12).toString('base64url'), teams: [...(options.teams ?? [])] };
    this.tokens.set(token.token, token);
    return { ...token, teams: [...token.teams] };
  }

  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  createProject(options: { name: string; id?: string; teamId?: string }): Project {
    return this.store.createProject(options);
  }

  /** Every project with its variables, values included. */
  projects(): Project[] {
    return this.store.projects();
  }

  /** The variables of one project (by id or name), values included. */
  envs(idOrName: string): EnvVar[] {
    return this.store.findProject(idOrName)?.envs.map((e) => ({ ...e, target: [...e.target] })) ?? [];
  }

  /** The next `count` API requests (admin routes excepted) are answered with `status`. */
  failNextRequests(count: number, status = 503): void {
    this.faults.failNext(count, status);
  }

  reset(): void {
    this.store.clear();
    this.tokens.clear();
    this.faults.failNext(0);
  }

  private async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (url.pathname.startsWith('/_admin/')) return this.admin(req, res, url);
    const injected = this.faults.take();
    if (injected !== undefined) {
      throw fail(injected, injected === 429 ? 'rate_limited' : 'service_unavailable', `Injected fault (${injected})`);
    }
    const token = this.authenticate(req);
    const route = ENV_ROUTE.exec(url.pathname);
    if (!route) throw fail(404, 'not_found', 'The requested path was not found');
    const [, version, rawProject, rawId] = route;
    const project = this.project(decodeURIComponent(rawProject!), url.searchParams.get('teamId'), token);
    const id = rawId === undefined ? undefined : decodeURIComponent(rawId);

    if (id === undefined && req.method === 'POST' && Number(version) >= 10) return this.create(req, res, url, project);
    if (id === undefined && req.method === 'GET') {
      const branch = url.searchParams.get('gitBranch');
      const envs = project.envs.filter((e) => branch === null || e.gitBranch === branch);
      return sendJson(res, 200, { envs: envs.map((e) => present(e, url.searchParams.get('decrypt') === 'true')) });
    }
    if (id === undefined) throw fail(405, 'method_not_allowed', 'Method not allowed');
    const env = project.envs.find((e) => e.id === id);
    if (!env) throw envNotFound();
    if (req.method === 'GET') return sendJson(res, 200, present(env, true));
    if (req.method === 'PATCH') {
      const body = await readJson(req, BODY_LIMIT, badRequest);
      if (!isRecord(body)) throw badRequest('The request body must be a JSON object');
      const changed = checkEnvInput({ ...env, ...body }, 'body');
      this.store.conflictCheck(project, changed, env.id);
      return sendJson(res, 200, present(this.store.update(env, changed), true));
    }
    if (req.method === 'DELETE') {
      this.store.remove(project, env);
      return sendJson(res, 200, present(env, false));
    }
    throw fail(405, 'method_not_allowed', 'Method not allowed');
  }

  /** `POST /v10/projects/:p/env`: one variable or an array; `upsert=true` overwrites a clash. */
  private async create(req: IncomingMessage, res: ServerResponse, url: URL, project: Project): Promise<void> {
    const body = await readJson(req, BODY_LIMIT, badRequest);
    const items = Array.isArray(body) ? body : [body];
    if (items.length === 0) throw badRequest('The request body must name at least one variable');
    const inputs: EnvInput[] = items.map((item, i) => checkEnvInput(item, Array.isArray(body) ? `body[${i}]` : 'body'));
    const upsert = url.searchParams.get('upsert') === 'true';
    const created: EnvVar[] = [];
    const failed: unknown[] = [];
    for (const input of inputs) {
      try {
        created.push(this.store.put(project, input, upsert));
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        failed.push(error.body);
      }
    }
    if (created.length === 0) throw new HttpError(400, failed[0]);
    const shown = created.map((e) => present(e, false));
    sendJson(res, 201, { created: Array.isArray(body) ? shown : shown[0], failed });
  }

  private authenticate(req: IncomingMessage): DeployhostToken {
    const header = req.headers.authorization;
    if (!header) throw fail(403, 'forbidden', 'The request is missing an authentication token', { missingToken: true });
    const match = /^Bearer (\S+)$/i.exec(header);
    const token = match ? this.tokens.get(match[1]!) : undefined;
    if (!token) throw fail(403, 'forbidden', 'Not authorized', { invalidToken: true });
    return token;
  }

  /** A project the token may reach: personal without teamId, a team's one with its teamId. */
  private project(idOrName: string, teamId: string | null, token: DeployhostToken): Project {
    if (teamId !== null && !token.teams.includes(teamId)) {
      throw fail(403, 'forbidden', 'You do not have permission to access this team');
    }
    const project = this.store.findProject(idOrName, teamId ?? undefined);
    if (!project) throw projectNotFound();
    return project;
  }

  private async admin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const route = url.pathname.slice('/_admin/'.length);
    const body = req.method === 'POST' ? await readJson(req, BODY_LIMIT, badRequest) : undefined;
    const input = isRecord(body) ? body : {};
    if (req.method === 'GET' && route === 'projects') return sendJson(res, 200, { projects: this.projects() });
    if (req.method === 'POST' && route === 'projects') {
      if (typeof input.name !== 'string') throw badRequest('name is required');
      return sendJson(res, 200, this.createProject(input as { name: string; id?: string; teamId?: string }));
    }
    if (req.method === 'POST' && route === 'tokens') {
      return sendJson(res, 200, this.createToken(input as { token?: string; teams?: string[] }));
    }
    if (req.method === 'POST' && route === 'faults') {
      this.failNextRequests(Number(input.count ?? 1), Number(input.status ?? 503));
      return sendJson(res, 200, { pending: this.faults.pending });
    }
    if (req.method === 'POST' && route === 'reset') {
      this.reset();
      return sendJson(res, 200, {});
    }
    throw fail(404, 'not_found', 'No such admin route');
  }
}

/**
 * A variable as the API shows it: `encrypted` values come back as ciphertext unless decrypted,
 * and `sensitive` values never come back at all.
 */
function present(env: EnvVar, decrypt: boolean): Record<string, unknown> {
  const hidden = env.type === 'sensitive' || (env.type === 'encrypted' && !decrypt);
  const value =
    env.type === 'sensitive' ? ''
    : hidden ? Buffer.from(`sealed:${env.id}:${env.updatedAt}`).toString('base64')
    : env.value;
  return {
    id: env.id,
    key: env.key,
    value,
    type: env.type,
    target: [...env.target],
    ...(env.gitBranch === undefined ? {} : { gitBranch: env.gitBranch }),
    ...(env.comment === undefined ? {} : { comment: env.comment }),
    configurationId: null,
    createdAt: env.createdAt,
    updatedAt: env.updatedAt,
    decrypted: env.type === 'encrypted' && !hidden,
    customEnvironmentIds: [],
    securityIssues: [],
  };
}

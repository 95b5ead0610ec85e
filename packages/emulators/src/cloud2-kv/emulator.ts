/**
 * The cloud2-kv emulator: one key vault's secrets API plus the directory's token endpoint, on one
 * loopback listener, enough for the official Key Vault secrets client with a client-secret
 * credential whose authority host is this emulator.
 *
 * Like the service, every vault call without a token is answered 401 with a `WWW-Authenticate`
 * challenge naming the tenant's authority and the vault resource; the client then fetches a
 * token from `<url>/<tenant>/oauth2/v2.0/token` and retries. HTTPS by default (a certificate
 * generated at start, `caCertificatePem`), because the identity library refuses a plain-HTTP
 * authority. Admin routes under `/_admin/` need no token.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Faults, HttpError, isRecord, listen, readBody, readJson, sendJson, type Listening } from '../json-http';
import { loopbackCertificate } from '../loopback-tls';
import { Cloud2Directory, VAULT_RESOURCE, type Cloud2Client, type SecretPermission } from './identity';
import { badParameter, Vault, vaultError, type StoredSecret } from './vault';

export interface Cloud2KvStartOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Default a random GUID. */
  tenantId?: string;
  /** Default true. Plain HTTP serves the vault (clients need `allowInsecureConnection`) but not the identity library. */
  tls?: boolean;
}

/** What the admin view shows of one secret: every version, values included. */
export interface Cloud2SecretView {
  name: string;
  deleted: boolean;
  versions: Array<{ version: string; value: string; enabled: boolean; contentType?: string; tags: Record<string, string> }>;
}

const BODY_LIMIT = 1024 * 1024;
const PAGE_SIZE = 25;
const TOKEN_ROUTE = /^\/([^/]+)\/oauth2\/v2\.0\/token\/?$/;
const OPENID_ROUTE = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration\/?$/;
const SECRETS_ROUTE = /^\/(secrets|deletedsecrets)(?:\/([^/]*)(?:\/([^/]*))?)?\/?$/;

export class Cloud2KeyVaultEmulator {
  private readonly faults = new Faults();
  private listening!: Listening;
  private directory!: Cloud2Directory;
  private vault!: Vault;
  private ca: string | undefined;

  private constructor() {}

  static async start(options: Cloud2KvStartOptions = {}): Promise<Cloud2KeyVaultEmulator> {
    const emulator = new Cloud2KeyVaultEmulator();
    emulator.directory = new Cloud2Directory(options.tenantId ?? randomUUID());
    const tls = options.tls === false ? undefined : await loopbackCertificate('Strongroom cloud2-kv emulator');
    emulator.ca = tls?.cert;
    emulator.listening = await listen(
      { host: options.host ?? '127.0.0.1', port: options.port ?? 0, ...(tls ? { tls } : {}) },
      (req, res, url) => emulator.handle(req, res, url),
      () => vaultError(500, 'InternalServerError', 'The service hit an unexpected error.'),
    );
    emulator.vault = new Vault(emulator.listening.url);
    return emulator;
  }

  /** The vault URI (`key_vault_uri`) and the authority host: both are this listener. */
  get url(): string {
    return this.listening.url;
  }

  get tenantId(): string {
    return this.directory.tenantId;
  }

  /** The PEM of the self-signed certificate clients must trust; undefined over plain HTTP. */
  get caCertificatePem(): string | undefined {
    return this.ca;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  /** Registers an application (random id and secret unless given) with the vault permissions it is granted (default all). */
  addClient(options: { clientId?: string; clientSecret?: string; permissions?: readonly SecretPermission[] } = {}): Cloud2Client {
    return this.directory.addClient(options);
  }

  /** Every secret, soft-deleted ones included, with all versions and values. */
  secrets(): Cloud2SecretView[] {
    return [...this.vault.list(false), ...this.vault.list(true)].map(view).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** The next `count` vault requests are answered with `status` (429 comes with `Retry-After: 1`). */
  failNextRequests(count: number, status = 503): void {
    this.faults.failNext(count, status);
  }

  /** Forgets secrets, clients, tokens and pending faults. */
  reset(): void {
    this.vault.clear();
    this.directory.clear();
    this.faults.failNext(0);
  }

  private async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (url.pathname.startsWith('/_admin/')) return this.admin(req, res, url);
    const openid = OPENID_ROUTE.exec(url.pathname);
    if (openid && req.method === 'GET') {
      return sendJson(res, 200, this.directory.openIdConfiguration(this.url, decodeURIComponent(openid[1]!)));
    }
    const token = TOKEN_ROUTE.exec(url.pathname);
    if (token && req.method === 'POST') {
      const form = new URLSearchParams((await readBody(req, BODY_LIMIT, () => badParameter('The request body is too large.'))).toString('utf8'));
      const basic = /^Basic (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      return sendJson(res, 200, this.directory.issueToken(decodeURIComponent(token[1]!), form, basic), { 'cache-control': 'no-store' });
    }
    const route = SECRETS_ROUTE.exec(url.pathname);
    if (!route) throw vaultError(404, 'NotFound', 'The requested path was not found.');
    return this.secretsApi(req, res, url, route);
  }

  private async secretsApi(req: IncomingMessage, res: ServerResponse, url: URL, route: RegExpExecArray): Promise<void> {
    const injected = this.faults.take();
    if (injected !== undefined) {
      req.resume();
      const code = injected === 429 ? 'Throttled' : 'ServiceUnavailable';
      throw new HttpError(injected, { error: { code, message: `Injected fault (${injected}).` } }, injected === 429 ? { 'retry-after': '1' } : {});
    }
    const client = this.authorize(req);
    if (!url.searchParams.get('api-version')) throw badParameter('The api-version query parameter is required.');
    const [, collection, rawName, rawSub] = route;
    const name = rawName === undefined || rawName === '' ? undefined : decodeURIComponent(rawName);
    const sub = rawSub === undefined || rawSub === '' ? undefined : decodeURIComponent(rawSub);
    const method = req.method ?? 'GET';
    const need = (permission: SecretPermission): void => {
      if (!client.permissions.includes(permission)) {
        throw vaultError(
          403,
          'Forbidden',
          `The application '${client.clientId}' does not have secrets ${permission} permission on this key vault.`,
          'AccessDenied',
        );
      }
    };
    const v = this.vault;

    if (collection === 'secrets' && name === undefined && method === 'GET') {
      need('list');
      return this.page(res, url, v.list(false).map((s) => v.item(s, s.versions.at(-1)!, false)));
    }
    if (collection === 'deletedsecrets' && name === undefined && method === 'GET') {
      need('list');
      return this.page(res, url, v.list(true).map((s) => v.item(s, s.versions.at(-1)!, false)));
    }
    if (name === undefined) throw vaultError(405, 'MethodNotAllowed', `${method} is not allowed here.`);

    if (collection === 'deletedsecrets') {
      if (sub === 'recover' && method === 'POST') {
        need('recover');
        const secret = v.recover(name);
        return sendJson(res, 200, v.bundle(secret, secret.versions.at(-1)!, false));
      }
      if (sub) throw vaultError(404, 'NotFound', 'The requested path was not found.');
      if (method === 'GET') {
        need('get');
        const secret = v.deleted(name);
        return sendJson(res, 200, v.bundle(secret, secret.versions.at(-1)!, false));
      }
      if (method === 'DELETE') {
        need('purge');
        v.purge(name);
        return sendJson(res, 204, undefined);
      }
      throw vaultError(405, 'MethodNotAllowed', `${method} is not allowed here.`);
    }

    if (sub === 'versions' && method === 'GET') {
      need('list');
      const { secret } = v.get(name);
      return this.page(res, url, secret.versions.map((version) => v.item(secret, version, true)));
    }
    if (method === 'PUT' && sub === undefined) {
      need('set');
      const { secret, version } = v.set(name, await readJson(req, BODY_LIMIT, badParameter));
      return sendJson(res, 200, v.bundle(secret, version, true));
    }
    if (method === 'GET') {
      need('get');
      const { secret, version } = v.get(name, sub ?? '');
      const now = Date.now() / 1000;
      if (!version.attributes.enabled) {
        throw vaultError(403, 'Forbidden', 'Operation get is not allowed on a disabled secret.', 'SecretDisabled');
      }
      if ((version.attributes.nbf ?? 0) > now || (version.attributes.exp ?? Infinity) < now) {
        throw vaultError(403, 'Forbidden', 'Operation get is not allowed on a secret outside its activation period.', 'ForbiddenByPolicy');
      }
      return sendJson(res, 200, v.bundle(secret, version, true));
    }
    if (method === 'PATCH') {
      need('set');
      const { secret, version } = v.update(name, sub ?? '', await readJson(req, BODY_LIMIT, badParameter));
      return sendJson(res, 200, v.bundle(secret, version, false));
    }
    if (method === 'DELETE' && sub === undefined) {
      need('delete');
      const secret = v.delete(name);
      return sendJson(res, 200, v.bundle(secret, secret.versions.at(-1)!, false));
    }
    throw vaultError(405, 'MethodNotAllowed', `${method} is not allowed here.`);
  }

  /** The caller's application; without a valid vault token, 401 with the challenge to get one. */
  private authorize(req: IncomingMessage): Cloud2Client {
    const challenge = {
      'www-authenticate': `Bearer authorization="${this.url}/${this.tenantId}", resource="${VAULT_RESOURCE}"`,
    };
    const header = req.headers.authorization;
    if (!header) {
      req.resume();
      throw new HttpError(401, { error: { code: 'Unauthorized', message: 'Request is missing a Bearer token.' } }, challenge);
    }
    const bearer = /^Bearer (\S+)$/i.exec(header)?.[1];
    const token = bearer === undefined ? undefined : this.directory.token(bearer, VAULT_RESOURCE);
    const client = token && this.directory.client(token.clientId);
    if (!client) {
      req.resume();
      throw new HttpError(
        401,
        { error: { code: 'Unauthorized', message: 'The access token is unknown, expired, or not issued for this vault.' } },
        challenge,
      );
    }
    return client;
  }

  /** One page of a list, `maxresults` (1-25) long, with a `nextLink` back to this server. */
  private page(res: ServerResponse, url: URL, items: unknown[]): void {
    const raw = url.searchParams.get('maxresults');
    const size = raw === null ? PAGE_SIZE : Number(raw);
    if (!Number.isInteger(size) || size < 1 || size > PAGE_SIZE) throw badParameter(`maxresults must be between 1 and ${PAGE_SIZE}.`);
    const skip = Number(url.searchParams.get('$skiptoken') ?? '0');
    if (!Number.isInteger(skip) || skip < 0) throw badParameter('The $skiptoken is not valid.');
    const next = skip + size < items.length ? skip + size : undefined;
    const nextLink =
      next === undefined ? null
      : `${this.url}${url.pathname}?${new URLSearchParams({ 'api-version': url.searchParams.get('api-version')!, maxresults: String(size), $skiptoken: String(next) })}`;
    sendJson(res, 200, { value: items.slice(skip, skip + size), nextLink });
  }

  private async admin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const route = url.pathname.slice('/_admin/'.length);
    const body = req.method === 'POST' ? await readJson(req, BODY_LIMIT, badParameter) : undefined;
    const input = isRecord(body) ? body : {};
    if (req.method === 'GET' && route === 'secrets') return sendJson(res, 200, { secrets: this.secrets() });
    if (req.method === 'GET' && route === 'endpoints') {
      return sendJson(res, 200, { vaultUri: this.url, authorityHost: this.url, tenantId: this.tenantId, caCertificatePem: this.ca ?? null });
    }
    if (req.method === 'POST' && route === 'clients') {
      return sendJson(res, 200, this.addClient(input as { clientId?: string; clientSecret?: string; permissions?: SecretPermission[] }));
    }
    if (req.method === 'POST' && route === 'faults') {
      this.failNextRequests(Number(input.count ?? 1), Number(input.status ?? 503));
      return sendJson(res, 200, { pending: this.faults.pending });
    }
    if (req.method === 'POST' && route === 'reset') {
      this.reset();
      return sendJson(res, 200, {});
    }
    throw vaultError(404, 'NotFound', 'No such admin route.');
  }
}

function view(secret: StoredSecret): Cloud2SecretView {
  return {
    name: secret.name,
    deleted: Boolean(secret.deleted),
    versions: secret.versions.map((v) => ({
      version: v.version,
      value: v.value,
      enabled: v.attributes.enabled,
      ...(v.contentType === undefined ? {} : { contentType: v.contentType }),
      tags: { ...v.tags },
    })),
  };
}

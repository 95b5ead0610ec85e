/**
 * The directory side of cloud2: one tenant, its app registrations (client id and secret, with
 * the secret permissions the vault's access policy grants each), and the OAuth 2.0 client
 * credentials flow that an identity library's client-secret credential runs against
 * `<authority>/<tenant>/oauth2/v2.0/token` after reading `<authority>/<tenant>/v2.0/.well-known/openid-configuration`.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../json-http';

/** The resource (token audience) of the vault service; tokens are asked for `<resource>/.default`. */
export const VAULT_RESOURCE = 'https://vault.azure.net';
export const SECRET_PERMISSIONS = ['get', 'list', 'set', 'delete', 'recover', 'purge'] as const;
export type SecretPermission = (typeof SECRET_PERMISSIONS)[number];

export interface Cloud2Client {
  clientId: string;
  clientSecret: string;
  permissions: SecretPermission[];
}

export interface AccessToken {
  clientId: string;
  audience: string;
  expiresAt: number;
}

const TOKEN_LIFETIME_SECONDS = 3599;

/** An OAuth error body as the directory sends it, with a trace id like the real one. */
const oauthError = (status: number, error: string, description: string): HttpError =>
  new HttpError(status, {
    error,
    error_description: description,
    error_codes: [],
    timestamp: new Date().toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
    trace_id: randomUUID(),
    correlation_id: randomUUID(),
  });

export class Cloud2Directory {
  private readonly clients = new Map<string, Cloud2Client>();
  private readonly tokens = new Map<string, AccessToken>();

  constructor(readonly tenantId: string) {}

  addClient(options: { clientId?: string; clientSecret?: string; permissions?: readonly SecretPermission[] } = {}): Cloud2Client {
    const permissions = [...(options.permissions ?? SECRET_PERMISSIONS)];
    for (const p of permissions) {
      if (!(SECRET_PERMISSIONS as readonly string[]).includes(p)) throw new RangeError(`unknown secret permission ${p}`);
    }
    const client = {
      clientId: options.clientId ?? randomUUID(),
      clientSecret: options.clientSecret ?? randomBytes(30).toString('base64url'),
      permissions,
    };
    this.clients.set(client.clientId, client);
    return { ...client, permissions: [...permissions] };
  }

  client(clientId: string): Cloud2Client | undefined {
    return this.clients.get(clientId);
  }

  clear(): void {
    this.clients.clear();
    this.tokens.clear();
  }

  /** The discovery document the identity library reads before asking for a token. */
  openIdConfiguration(authority: string, tenant: string): Record<string, unknown> {
    this.checkTenant(tenant);
    const base = `${authority}/${this.tenantId}`;
    return {
      token_endpoint: `${base}/oauth2/v2.0/token`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
      jwks_uri: `${authority}/${this.tenantId}/discovery/v2.0/keys`,
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      issuer: `${base}/v2.0`,
      request_uri_parameter_supported: false,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      tenant_region_scope: 'NA',
    };
  }

  /** The client credentials grant; the client secret may come in the form or as HTTP Basic. */
  issueToken(tenant: string, form: URLSearchParams, basic: string | undefined): Record<string, unknown> {
    this.checkTenant(tenant);
    const grant = form.get('grant_type');
    if (grant !== 'client_credentials') {
      throw oauthError(400, 'unsupported_grant_type', `The grant type '${grant ?? ''}' is not supported by this emulator; use client_credentials.`);
    }
    let clientId = form.get('client_id');
    let secret = form.get('client_secret');
    if (basic) {
      const [id, ...rest] = Buffer.from(basic, 'base64').toString('utf8').split(':');
      clientId = decodeURIComponent(id ?? '');
      secret = decodeURIComponent(rest.join(':'));
    }
    if (!clientId) throw oauthError(400, 'invalid_request', "The request body must contain the parameter 'client_id'.");
    const client = this.clients.get(clientId);
    if (!client) {
      throw oauthError(400, 'unauthorized_client', `Application with identifier '${clientId}' was not found in the directory '${this.tenantId}'.`);
    }
    if (!secret || !sameText(secret, client.clientSecret)) {
      throw oauthError(401, 'invalid_client', `Invalid client secret provided for app '${clientId}'.`);
    }
    const scopes = (form.get('scope') ?? '').split(' ').filter((s) => s.endsWith('/.default'));
    if (scopes.length !== 1) {
      throw oauthError(400, 'invalid_scope', 'The client credentials flow needs exactly one scope of the form <resource>/.default.');
    }
    const audience = scopes[0]!.slice(0, -'/.default'.length);
    const accessToken = randomBytes(32).toString('base64url');
    this.tokens.set(accessToken, { clientId, audience, expiresAt: Date.now() + TOKEN_LIFETIME_SECONDS * 1000 });
    return { token_type: 'Bearer', expires_in: TOKEN_LIFETIME_SECONDS, ext_expires_in: TOKEN_LIFETIME_SECONDS, access_token: accessToken };
  }

  /** The live token for `value`, or undefined when unknown, expired or for another audience. */
  token(value: string, audience: string): AccessToken | undefined {
    const token = this.tokens.get(value);
    if (!token || token.audience !== audience || token.expiresAt <= Date.now()) return undefined;
    return this.clients.has(token.clientId) ? token : undefined;
  }

  private checkTenant(tenant: string): void {
    if (tenant !== this.tenantId) {
      throw oauthError(400, 'invalid_request', `Tenant '${tenant}' not found. Check that the tenant ID is right and that you sign in to the right cloud.`);
    }
  }
}

function sameText(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

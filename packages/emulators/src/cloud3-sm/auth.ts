/**
 * Who may call: bearer tokens handed out by the emulator, and service accounts whose key the
 * emulator generated. A service account's credentials file (the `credentials` a client is given)
 * signs its own short-lived JWT as the access token, as the client library does for gRPC; its
 * `token_uri` points at the emulator's admin listener, which also trades a signed JWT assertion
 * for an access token, so a client never reaches a real token service.
 */
import { generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { SmError } from './store';

export interface ServiceAccountCredentials {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  auth_uri: string;
  token_uri: string;
}

/** The caller: a plain token reaches every project, a service account only its own. */
export interface Principal {
  project?: string;
  email?: string;
}

interface Account {
  email: string;
  project: string;
  publicKey: KeyObject;
}

const CLOCK_SKEW_SECONDS = 300;
const TOKEN_LIFETIME_SECONDS = 3600;

const unauthenticated = (why: string): SmError =>
  new SmError(status.UNAUTHENTICATED, `Request had invalid authentication credentials: ${why}`);

export class Cloud3Auth {
  private readonly tokens = new Map<string, { principal: Principal; expiresAt: number }>();
  private readonly accounts = new Map<string, Account>();

  /** A bearer token that reaches every project (random unless given). */
  issueToken(token = randomBytes(24).toString('base64url')): string {
    this.tokens.set(token, { principal: {}, expiresAt: Infinity });
    return token;
  }

  /** A new service account of `project`, with a fresh RSA key; `tokenUri` goes into its file. */
  createServiceAccount(project: string, name: string, tokenUri: string): ServiceAccountCredentials {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keyId = randomBytes(20).toString('hex');
    const email = `${name}@${project}.iam.gserviceaccount.com`;
    this.accounts.set(keyId, { email, project, publicKey });
    return {
      type: 'service_account',
      project_id: project,
      private_key_id: keyId,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: tokenUri,
    };
  }

  /** Deletes the key: JWTs it signed are refused from now on. */
  deleteServiceAccountKey(keyId: string): void {
    this.accounts.delete(keyId);
  }

  clear(): void {
    this.tokens.clear();
    this.accounts.clear();
  }

  /** The caller behind an `authorization` metadata value; undefined when none was sent. */
  authenticate(header: string | undefined): Principal | undefined {
    if (header === undefined) return undefined;
    const token = /^Bearer (\S+)$/i.exec(header)?.[1];
    if (!token) throw unauthenticated('expected "Bearer <token>".');
    const issued = this.tokens.get(token);
    if (issued && issued.expiresAt > Date.now()) return issued.principal;
    const account = this.verifyJwt(token);
    if (!account) throw unauthenticated('the access token is unknown, expired or not signed by a known key.');
    return { project: account.project, email: account.email };
  }

  /** The JWT-bearer grant: a service account's signed assertion for an opaque access token. */
  exchange(form: URLSearchParams): { status: number; body: Record<string, unknown> } {
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Only the jwt-bearer grant is served here.' } };
    }
    const account = this.verifyJwt(form.get('assertion') ?? '');
    if (!account) return { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } };
    const accessToken = randomBytes(32).toString('base64url');
    this.tokens.set(accessToken, {
      principal: { project: account.project, email: account.email },
      expiresAt: Date.now() + TOKEN_LIFETIME_SECONDS * 1000,
    });
    return { status: 200, body: { access_token: accessToken, expires_in: TOKEN_LIFETIME_SECONDS, token_type: 'Bearer' } };
  }

  /** The account whose key signed `jwt` (RS256, `iss` its email, inside its validity), if any. */
  private verifyJwt(jwt: string): Account | undefined {
    const parts = jwt.split('.');
    if (parts.length !== 3) return undefined;
    try {
      const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as { alg?: string; kid?: string };
      const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { iss?: string; exp?: number; iat?: number };
      const account = header.kid === undefined ? undefined : this.accounts.get(header.kid);
      if (!account || header.alg !== 'RS256' || claims.iss !== account.email) return undefined;
      const now = Date.now() / 1000;
      if (typeof claims.exp !== 'number' || claims.exp + CLOCK_SKEW_SECONDS < now) return undefined;
      if (typeof claims.iat === 'number' && claims.iat - CLOCK_SKEW_SECONDS > now) return undefined;
      const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
      return verify('sha256', signed, account.publicKey, Buffer.from(parts[2]!, 'base64url')) ? account : undefined;
    } catch {
      return undefined;
    }
  }
}

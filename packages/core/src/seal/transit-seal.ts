import * as http from 'node:http';
import * as https from 'node:https';
import type { Clock, TimerHandle } from '../clock';
import type { Logger } from '../logger';
import { AutoSealError, type AutoSeal } from './auto-seal';

export interface TransitSealOptions {
  /** The unsealer's API origin, e.g. `https://unsealer:8200`. */
  address: string;
  token: string;
  keyName: string;
  /** Without slashes at either end, e.g. `transit`. */
  mountPath: string;
  namespace?: string;
  /** PEM text, read by the caller. */
  tlsCaCert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  tlsServerName?: string;
  tlsSkipVerify?: boolean;
  disableRenewal?: boolean;
  clock: Clock;
  logger: Logger;
  /** Per request. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** Renewal never runs more often than this, whatever TTL the token has. */
const MIN_RENEW_MS = 5_000;
const MAX_REPLY_BYTES = 1024 * 1024;

/**
 * Wraps the root key with a transit key of another server (a Strongroom or a Vault) through
 * its HTTP API. The token is sent to that server only, and appears in no message or log.
 */
export class TransitSeal implements AutoSeal {
  readonly type = 'transit';
  private renewTimer: TimerHandle | null = null;
  private closed = false;
  private renewalStarted = false;

  constructor(private readonly options: TransitSealOptions) {}

  async wrap(plaintext: Buffer): Promise<string> {
    const data = await this.call('POST', `${this.options.mountPath}/encrypt/${encodeURIComponent(this.options.keyName)}`, { plaintext: plaintext.toString('base64') });
    const ciphertext = data?.['ciphertext'];
    if (typeof ciphertext !== 'string' || ciphertext === '') throw new AutoSealError(`the transit seal at ${this.options.address} answered the encrypt with no ciphertext`);
    this.startRenewal();
    return ciphertext;
  }

  async unwrap(wrapped: string): Promise<Buffer> {
    const data = await this.call('POST', `${this.options.mountPath}/decrypt/${encodeURIComponent(this.options.keyName)}`, { ciphertext: wrapped });
    const plaintext = data?.['plaintext'];
    if (typeof plaintext !== 'string') throw new AutoSealError(`the transit seal at ${this.options.address} answered the decrypt with no plaintext`);
    this.startRenewal();
    return Buffer.from(plaintext, 'base64');
  }

  close(): void {
    this.closed = true;
    this.renewTimer?.cancel();
    this.renewTimer = null;
  }

  /** Once the token has proved it works; then it is renewed at half its TTL, as long as it is renewable. */
  private startRenewal(): void {
    if (this.renewalStarted || this.options.disableRenewal || this.closed) return;
    this.renewalStarted = true;
    void this.renewAndSchedule(true);
  }

  private async renewAndSchedule(lookupOnly: boolean): Promise<void> {
    if (this.closed) return;
    let nextMs: number | null;
    try {
      const reply = lookupOnly
        ? { data: await this.call('GET', 'auth/token/lookup-self'), auth: undefined }
        : await this.callRaw('POST', 'auth/token/renew-self', {});
      const ttl = lookupOnly ? Number(reply.data?.['ttl'] ?? 0) : Number((reply.auth as Record<string, unknown> | undefined)?.['lease_duration'] ?? 0);
      const renewable = lookupOnly ? reply.data?.['renewable'] === true : (reply.auth as Record<string, unknown> | undefined)?.['renewable'] === true;
      // A token without a TTL (a root token) never needs renewing; one that cannot be renewed cannot be helped.
      nextMs = renewable && ttl > 0 ? Math.max(MIN_RENEW_MS, (ttl * 1000) / 2) : null;
      if (!lookupOnly) this.options.logger.info('transit seal: token renewed', { ttl_seconds: ttl });
    } catch (err) {
      this.options.logger.warn('transit seal: could not renew the token; trying again', { err: (err as Error).message });
      nextMs = 30_000;
    }
    if (nextMs === null || this.closed) return;
    this.renewTimer = this.options.clock.setTimer(nextMs, () => void this.renewAndSchedule(false));
  }

  private async call(method: string, path: string, body?: unknown): Promise<Record<string, unknown> | undefined> {
    return (await this.callRaw(method, path, body)).data;
  }

  private callRaw(method: string, path: string, body?: unknown): Promise<{ data?: Record<string, unknown>; auth?: unknown }> {
    const o = this.options;
    const where = `the transit seal at ${o.address}`;
    const url = new URL(`/v1/${path}`, o.address);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { 'X-Vault-Token': o.token, 'X-Vault-Request': 'true' };
    if (o.namespace) headers['X-Vault-Namespace'] = o.namespace;
    if (payload) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const isHttps = url.protocol === 'https:';
    const requestOptions: https.RequestOptions = { method, headers, timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS, agent: false };
    if (isHttps) {
      if (o.tlsCaCert) requestOptions.ca = o.tlsCaCert;
      if (o.tlsClientCert) requestOptions.cert = o.tlsClientCert;
      if (o.tlsClientKey) requestOptions.key = o.tlsClientKey;
      if (o.tlsServerName) requestOptions.servername = o.tlsServerName;
      if (o.tlsSkipVerify) requestOptions.rejectUnauthorized = false;
    }
    return new Promise((resolve, reject) => {
      const req = (isHttps ? https : http).request(url, requestOptions, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_REPLY_BYTES) req.destroy(new Error('reply too large'));
          else chunks.push(chunk);
        });
        res.on('error', (err) => reject(new AutoSealError(`${where}: ${err.message}`)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: { data?: Record<string, unknown>; auth?: unknown; errors?: unknown } = {};
          try {
            parsed = text === '' ? {} : (JSON.parse(text) as typeof parsed);
          } catch {
            // Reported below by status, or as an unexpected reply.
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(parsed);
          const errors = Array.isArray(parsed.errors) ? parsed.errors.filter((e): e is string => typeof e === 'string').join('; ') : '';
          reject(new AutoSealError(`${where} refused ${method} ${url.pathname} with ${status}${errors ? `: ${errors}` : ''}`));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${(o.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) => reject(new AutoSealError(`${where} cannot be reached: ${describeNetError(err)}`)));
      req.end(payload);
    });
  }
}

function describeNetError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED': return 'connection refused';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'host not found';
    case 'ECONNRESET': return 'connection reset';
    case 'DEPTH_ZERO_SELF_SIGNED_CERT': case 'SELF_SIGNED_CERT_IN_CHAIN': case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE': case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return `certificate not trusted (${err.code}); set tls_ca_cert`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID': return 'the certificate does not name this host; set tls_server_name';
    default: return err.code ? `${err.code}: ${err.message}` : err.message;
  }
}

import { readdirSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { join } from 'node:path';
import { BadRequestError } from '@strongroom/core';
import type { PrimaryLink } from './role-state';

/** What an activation token carries for its secondary. */
export interface ActivationMaterial {
  /** Absent in tokens that predate performance replication: DR. */
  kind?: 'dr' | 'performance';
  secondary_id: string;
  /** A performance secondary's own cluster ID, made with its token. */
  secondary_cluster_id?: string;
  primary: PrimaryLink;
  /**
   * The primary's root key (base64), when the primary is auto-sealed: the secondary's own seal
   * wraps it, as no key share can rebuild it there. Absent under Shamir.
   */
  root_key?: string;
}

/** How long the primary's API has to answer the unwrap. */
const UNWRAP_TIMEOUT_MS = 10_000;
/** An unwrap answer is small: anything bigger is not our primary. */
const MAX_ANSWER_BYTES = 1024 * 1024;

function trustedCas(caFile: string, caPath: string): string[] | undefined {
  const pems: string[] = [];
  try {
    if (caFile !== '') pems.push(readFileSync(caFile, 'utf8'));
  } catch (err) {
    throw new BadRequestError(`invalid value for "ca_file": cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (caPath !== '') {
    try {
      for (const name of readdirSync(caPath).sort()) {
        if (/\.(pem|crt)$/i.test(name)) pems.push(readFileSync(join(caPath, name), 'utf8'));
      }
    } catch (err) {
      throw new BadRequestError(`invalid value for "ca_path": cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return pems.length > 0 ? pems : undefined;
}

/**
 * Unwraps a wrapped activation token at the primary's API (`sys/wrapping/unwrap`), which spends
 * it: a used, expired or revoked token is refused there. With neither CA setting, the system's
 * roots verify the primary's certificate.
 */
export async function fetchActivation(options: { addr: string; wrappingToken: string; caFile: string; caPath: string }): Promise<ActivationMaterial> {
  let url: URL;
  try {
    url = new URL('/v1/sys/wrapping/unwrap', options.addr);
  } catch {
    throw new BadRequestError('invalid value for "primary_api_addr": expected an address such as https://primary:8200');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new BadRequestError('invalid value for "primary_api_addr": expected an http(s) address');
  const ca = trustedCas(options.caFile, options.caPath);
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    const req = lib.request(url, {
      method: 'POST', headers: { 'x-vault-token': options.wrappingToken, 'content-type': 'application/json' },
      timeout: UNWRAP_TIMEOUT_MS, ...(ca ? { ca } : {}),
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error('answer too large'));
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${UNWRAP_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end('{}');
  }).catch((err: unknown) => {
    throw new BadRequestError(`could not reach the primary at ${url.origin} to open the activation token: ${(err as Error).message}`);
  });
  if (status === 400 || status === 403 || status === 404) {
    throw new BadRequestError('invalid value for "token": the primary refused the activation token (already used, expired or revoked)');
  }
  if (status !== 200) throw new BadRequestError(`the primary at ${url.origin} answered ${status} when opening the activation token`);
  let data: unknown;
  try {
    data = (JSON.parse(body) as { data?: unknown }).data;
  } catch {
    throw new BadRequestError(`the primary at ${url.origin} did not answer with JSON`);
  }
  const m = data as ActivationMaterial | undefined;
  if (!m || typeof m.secondary_id !== 'string' || !m.primary || typeof m.primary.cluster_id !== 'string') {
    throw new BadRequestError('invalid value for "token": it does not carry a replication activation');
  }
  return m;
}

import { readFileSync } from 'node:fs';
import type { DrillCredentials } from './target';

/**
 * The files a drill target is read from, and the credentials file every deployment shares: what
 * each cluster's init returned, as bootstrap wrote it (`scripts/topology` keeps it in
 * DIR/operator; a compose deployment's operator copies it out of the bootstrap container).
 */

/** What an init returned, as the CLI's JSON (`*_b64`) or the API's (`*_base64`) names it. */
interface InitResult {
  recovery_keys_b64?: string[];
  recovery_keys_base64?: string[];
  unseal_keys_b64?: string[];
  keys_base64?: string[];
  root_token?: string;
}

/** A target that cannot be read: a usage problem of the drill's command line, not a failed drill. */
export class TargetError extends Error {
  override readonly name = 'TargetError';
}

export function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new TargetError(`cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new TargetError(`the ${what} ${file} is not JSON`);
  }
}

function keySharesOf(init: InitResult | undefined): string[] {
  return init?.recovery_keys_b64 ?? init?.recovery_keys_base64 ?? init?.unseal_keys_b64 ?? init?.keys_base64 ?? [];
}

/** The original primary's root token and key shares, which the whole drill runs on. */
export function readOperatorCredentials(file: string): DrillCredentials {
  const credentials = readJson(file, 'operator credentials') as Record<string, InitResult | undefined> | null;
  const primaryInit = credentials?.['primary'];
  const keyShares = keySharesOf(primaryInit);
  if (typeof primaryInit?.root_token !== 'string' || primaryInit.root_token === '' || keyShares.length === 0) {
    throw new TargetError(`${file}: "primary" needs "root_token" and its key shares ("recovery_keys_b64" or "unseal_keys_b64")`);
  }
  return { rootToken: primaryInit.root_token, keyShares };
}

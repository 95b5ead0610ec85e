import { promises as fsp } from 'node:fs';

/** A `seal "transit"` block, with Vault's environment variables applied. */
export interface TransitSealConfig {
  type: 'transit';
  /** `disabled = "true"`: kept only to migrate away from it. */
  disabled: boolean;
  address: string;
  token: string;
  keyName: string;
  /** Without slashes at either end. */
  mountPath: string;
  namespace?: string;
  /** Files, checked readable at load and read when the server starts. */
  tlsCaCert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  tlsServerName?: string;
  tlsSkipVerify: boolean;
  disableRenewal: boolean;
}

export interface SealBlock {
  type: string;
  body: Record<string, unknown>;
  /** e.g. `seal.transit[0]`. */
  path: string;
}

export interface SealIssues {
  fail(field: string, rule: string): never;
  warn(field: string): void;
}

const TRANSIT_KEYS = new Set([
  'address', 'token', 'key_name', 'mount_path', 'namespace', 'disable_renewal', 'disabled',
  'tls_ca_cert', 'tls_client_cert', 'tls_client_key', 'tls_server_name', 'tls_skip_verify',
]);
/** Vault's, accepted with a warning: they tune multi-seal setups and key ids, which a single transit seal does without. */
const VAULT_TRANSIT_KEYS = new Set(['key_id_prefix', 'priority', 'name']);
const TRUE_WORDS = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

/**
 * Vault's environment variables for the transit seal. As in Vault's transit wrapper, the
 * VAULT_TRANSIT_SEAL_* ones win over the file; the general client ones (VAULT_ADDR,
 * VAULT_TOKEN, VAULT_NAMESPACE, VAULT_CACERT...) only fill in what the file leaves out, so a
 * shell set up to talk to this server does not silently redirect its seal.
 */
const OVERRIDING_ENV: Array<[string, string]> = [
  ['key_name', 'VAULT_TRANSIT_SEAL_KEY_NAME'],
  ['mount_path', 'VAULT_TRANSIT_SEAL_MOUNT_PATH'],
  ['disable_renewal', 'VAULT_TRANSIT_SEAL_DISABLE_RENEWAL'],
];
const FALLBACK_ENV: Array<[string, string]> = [
  ['address', 'VAULT_ADDR'],
  ['token', 'VAULT_TOKEN'],
  ['namespace', 'VAULT_NAMESPACE'],
  ['tls_ca_cert', 'VAULT_CACERT'],
  ['tls_client_cert', 'VAULT_CLIENT_CERT'],
  ['tls_client_key', 'VAULT_CLIENT_KEY'],
  ['tls_server_name', 'VAULT_TLS_SERVER_NAME'],
  ['tls_skip_verify', 'VAULT_SKIP_VERIFY'],
];

/**
 * The seal blocks of a config: at most one in use and at most one marked disabled (the seal a
 * migration leaves). `VAULT_SEAL_TYPE=transit` stands for a block written with no settings,
 * all of them then coming from the environment.
 */
export async function parseSeals(blocks: SealBlock[], env: NodeJS.ProcessEnv, issues: SealIssues): Promise<TransitSealConfig[]> {
  const envType = env['VAULT_SEAL_TYPE'];
  if (blocks.length === 0 && envType !== undefined && envType !== '' && envType !== 'shamir') {
    if (envType !== 'transit') issues.fail('VAULT_SEAL_TYPE', `unsupported seal type "${envType}", only "transit" (or "shamir") is supported`);
    blocks = [{ type: 'transit', body: {}, path: 'seal.transit[0]' }];
  }
  const seals: TransitSealConfig[] = [];
  for (const block of blocks) {
    if (block.type === 'shamir') {
      // Vault's way to write a Shamir seal explicitly, mostly as the disabled side of a migration.
      for (const key of Object.keys(block.body)) if (key !== 'disabled') issues.fail(`${block.path}.${key}`, 'unknown setting');
      continue;
    }
    if (block.type !== 'transit') issues.fail(`seal "${block.type}"`, 'unsupported seal type, only "transit" (and "shamir") are supported');
    seals.push(await transitSeal(block, env, issues));
  }
  if (seals.filter((s) => !s.disabled).length > 1) issues.fail('seal', 'only one seal may be in use; mark the one being migrated from disabled = "true"');
  if (seals.filter((s) => s.disabled).length > 1) issues.fail('seal', 'only one disabled seal is allowed');
  if (seals.length === 2) issues.fail('seal', 'a migration from one transit seal to another is not supported; migrate to Shamir first');
  return seals;
}

async function transitSeal(block: SealBlock, env: NodeJS.ProcessEnv, issues: SealIssues): Promise<TransitSealConfig> {
  const at = block.path;
  for (const key of Object.keys(block.body)) {
    if (TRANSIT_KEYS.has(key)) continue;
    if (VAULT_TRANSIT_KEYS.has(key)) issues.warn(`${at}.${key}`);
    else issues.fail(`${at}.${key}`, 'unknown setting');
  }
  const raw: Record<string, { value: unknown; field: string }> = {};
  for (const [key, value] of Object.entries(block.body)) if (value !== undefined && value !== null) raw[key] = { value, field: `${at}.${key}` };
  for (const [key, name] of OVERRIDING_ENV) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[key] = { value, field: name };
  }
  for (const [key, name] of FALLBACK_ENV) {
    const value = env[name];
    if (raw[key] === undefined && value !== undefined && value !== '') raw[key] = { value, field: name };
  }
  const str = (key: string, required: boolean): string | undefined => {
    const entry = raw[key];
    if (entry === undefined) {
      if (required) issues.fail(`${at}.${key}`, 'is required');
      return undefined;
    }
    if (typeof entry.value !== 'string') issues.fail(entry.field, 'must be a string');
    if (entry.value.trim() === '') issues.fail(entry.field, 'must not be empty');
    return entry.value;
  };
  const bool = (key: string): boolean => {
    const entry = raw[key];
    if (entry === undefined) return false;
    const v = entry.value;
    if (typeof v === 'boolean') return v;
    if (v === 1 || (typeof v === 'string' && TRUE_WORDS.has(v))) return true;
    if (v === 0 || (typeof v === 'string' && FALSE_WORDS.has(v))) return false;
    issues.fail(entry.field, 'must be a boolean (true/false, or "true"/"false"/"1"/"0")');
  };
  const address = str('address', true) as string;
  let url: URL | undefined;
  try {
    url = new URL(address);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    issues.fail(raw['address']?.field ?? `${at}.address`, 'must be an http:// or https:// URL of the server holding the transit key');
  }
  const token = str('token', true) as string;
  if (/[\r\n]/.test(token)) issues.fail(raw['token']?.field ?? `${at}.token`, 'must be a single line');
  const keyName = str('key_name', true) as string;
  if (keyName.includes('/')) issues.fail(raw['key_name']?.field ?? `${at}.key_name`, 'must be a transit key name, without "/"');
  const mountPath = (str('mount_path', true) as string).replace(/^\/+|\/+$/g, '');
  if (mountPath === '') issues.fail(raw['mount_path']?.field ?? `${at}.mount_path`, 'must name the transit mount, e.g. "transit/"');
  const seal: TransitSealConfig = {
    type: 'transit', disabled: bool('disabled'), address: url.origin + url.pathname.replace(/\/+$/, ''), token, keyName, mountPath,
    tlsSkipVerify: bool('tls_skip_verify'), disableRenewal: bool('disable_renewal'),
  };
  const namespace = str('namespace', false);
  if (namespace !== undefined) seal.namespace = namespace;
  const serverName = str('tls_server_name', false);
  if (serverName !== undefined) seal.tlsServerName = serverName;
  for (const [key, field] of [['tls_ca_cert', 'tlsCaCert'], ['tls_client_cert', 'tlsClientCert'], ['tls_client_key', 'tlsClientKey']] as const) {
    const file = str(key, false);
    if (file === undefined) continue;
    const problem = await unreadable(file);
    if (problem) issues.fail(raw[key]?.field ?? `${at}.${key}`, problem);
    seal[field] = file;
  }
  if ((seal.tlsClientCert === undefined) !== (seal.tlsClientKey === undefined)) {
    issues.fail(`${at}.${seal.tlsClientCert === undefined ? 'tls_client_cert' : 'tls_client_key'}`, 'is required with the other half of the client certificate');
  }
  return seal;
}

async function unreadable(file: string): Promise<string | undefined> {
  try {
    const stat = await fsp.stat(file);
    if (!stat.isFile()) return `"${file}" is not a regular file`;
    await fsp.access(file, fsp.constants.R_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `file "${file}" does not exist`;
    if (code === 'EACCES' || code === 'EPERM') return `file "${file}" is not readable (permission denied)`;
    return `file "${file}" cannot be read: ${code ?? (err as Error).message}`;
  }
}

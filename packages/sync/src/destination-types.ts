import { readFileSync } from 'node:fs';
import { BadRequestError, parseDurationSeconds, type FieldSchemas } from '@strongroom/core';

export const DESTINATION_TYPES = ['cloud1-sm', 'cloud2-kv', 'cloud3-sm', 'repohost', 'deployhost-project'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export const GRANULARITIES = ['secret-path', 'secret-key'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const DEPLOYMENT_ENVIRONMENTS = ['development', 'preview', 'production'] as const;

/** The key vault host suffix of each `cloud` a cloud2-kv destination may name. */
export const CLOUD2_KEY_VAULT_SUFFIXES: Record<string, string> = {
  cloud: '.vault.azure.net',
  china: '.vault.azure.cn',
  usgovernment: '.vault.usgovcloudapi.net',
};

export interface TypeSpec {
  fields: FieldSchemas;
  required: readonly string[];
  /** Shown as `*****` by every read; never quoted by an error. */
  credentials: readonly string[];
  defaults: Record<string, unknown>;
  granularity: Granularity;
  customTags: boolean;
  /** Per granularity: names the destination accepts for any mount accessor and secret path. */
  template: Record<Granularity, string>;
}

/** Operator settings, read once at start: nothing in the API can aim the server at another address. */
export interface SyncSettings {
  /**
   * Key vault origins (`https://host[:port]`) a cloud2-kv destination may use besides the
   * cloud's own `*.vault.azure.net`-style hosts: a private endpoint, or an emulator.
   */
  cloud2KeyVaultOrigins: readonly string[];
  /** Where cloud1-sm destinations are reached; unset: the SDK's endpoint for the region. */
  cloud1SmEndpoint?: string;
  /** The region of a cloud1-sm destination that names none. */
  cloud1Region?: string;
  /** The deployment host's API. */
  deployhostApiUrl: string;
  /** The token endpoint's host for cloud2-kv credentials; unset: the identity library's default for the public cloud. */
  cloud2AuthorityHost?: string;
  /** Where cloud3-sm destinations are reached (`host:port`); unset: the service's own endpoint. */
  cloud3SmEndpoint?: { host: string; port: number };
  /** The repository host's API. */
  repohostApiUrl: string;
  /**
   * PEM certificates trusted, besides the system's, for the destinations' HTTPS: a private
   * endpoint's or an emulator's authority.
   */
  extraCaCertificates?: string;
  /** How often the destinations are read for out-of-band changes; 0: never; unset: the default (10 minutes). */
  reconcileIntervalMs?: number;
}

export const DEFAULT_DEPLOYHOST_API_URL = 'https://api.vercel.com';
export const DEFAULT_REPOHOST_API_URL = 'https://api.github.com';

/**
 * `STRONGROOM_CLOUD2_KV_ORIGINS` (a comma-separated list of extra key vault origins), the cloud1
 * SDK's own endpoint variables (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL`) and
 * region (`AWS_REGION`), the identity library's `AZURE_AUTHORITY_HOST`,
 * `STRONGROOM_CLOUD3_SM_ENDPOINT` (`host:port`), `STRONGROOM_DEPLOYHOST_API_URL`,
 * `STRONGROOM_REPOHOST_API_URL` and `STRONGROOM_SYNC_CA_FILE` (a PEM file read here, once).
 */
export function syncSettingsFromEnv(env: Record<string, string | undefined>, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): SyncSettings {
  const origins = (env['STRONGROOM_CLOUD2_KV_ORIGINS'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const cloud1 = env['AWS_ENDPOINT_URL_SECRETS_MANAGER'] || env['AWS_ENDPOINT_URL'];
  const region = env['AWS_REGION'] || env['AWS_DEFAULT_REGION'];
  const authority = env['AZURE_AUTHORITY_HOST'];
  const cloud3 = env['STRONGROOM_CLOUD3_SM_ENDPOINT'];
  const caFile = env['STRONGROOM_SYNC_CA_FILE'];
  const reconcile = env['STRONGROOM_SYNC_RECONCILE_INTERVAL'];
  return {
    cloud2KeyVaultOrigins: origins.map(originOf),
    ...(cloud1 ? { cloud1SmEndpoint: apiUrl('AWS_ENDPOINT_URL_SECRETS_MANAGER', cloud1) } : {}),
    ...(region ? { cloud1Region: region } : {}),
    deployhostApiUrl: apiUrl('STRONGROOM_DEPLOYHOST_API_URL', env['STRONGROOM_DEPLOYHOST_API_URL'] || DEFAULT_DEPLOYHOST_API_URL),
    ...(authority ? { cloud2AuthorityHost: apiUrl('AZURE_AUTHORITY_HOST', authority) } : {}),
    ...(cloud3 ? { cloud3SmEndpoint: hostPort('STRONGROOM_CLOUD3_SM_ENDPOINT', cloud3) } : {}),
    repohostApiUrl: apiUrl('STRONGROOM_REPOHOST_API_URL', env['STRONGROOM_REPOHOST_API_URL'] || DEFAULT_REPOHOST_API_URL),
    ...(caFile ? { extraCaCertificates: caCertificates(caFile, readFile) } : {}),
    ...(reconcile !== undefined && reconcile.trim() !== '' ? { reconcileIntervalMs: interval('STRONGROOM_SYNC_RECONCILE_INTERVAL', reconcile) } : {}),
  };
}

function interval(variable: string, text: string): number {
  const seconds = parseDurationSeconds(text);
  if (seconds === null) throw new Error(`${variable}: must be a duration such as 10m or 30s (0: never), not ${JSON.stringify(text)}`);
  return seconds * 1000;
}

function hostPort(variable: string, text: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) throw new Error(`${variable}: must be host:port, such as 127.0.0.1:9090, not ${JSON.stringify(text)}`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

function caCertificates(path: string, readFile: (path: string) => string): string {
  let pem: string;
  try {
    pem = readFile(path);
  } catch (err) {
    throw new Error(`STRONGROOM_SYNC_CA_FILE: cannot read ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`STRONGROOM_SYNC_CA_FILE: ${JSON.stringify(path)} holds no PEM certificate`);
  return pem;
}

function apiUrl(variable: string, text: string): string {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // Said below, with the rule.
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash) {
    throw new Error(`${variable}: must be an http(s) URL without user info, query or fragment, not ${JSON.stringify(text)}`);
  }
  return url.href.replace(/\/+$/, '');
}

function originOf(text: string): string {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // Said below, with the rule.
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash || url.pathname.length > 1) {
    throw new Error(`STRONGROOM_CLOUD2_KV_ORIGINS: each entry must be an origin such as https://vault.internal:8443, not ${JSON.stringify(text)}`);
  }
  return url.origin;
}

const str = { type: 'string' } as const;

export const TYPE_SPECS: Record<DestinationType, TypeSpec> = {
  'cloud1-sm': {
    fields: { access_key_id: str, secret_access_key: str, region: str },
    required: [],
    credentials: ['access_key_id', 'secret_access_key'],
    defaults: { access_key_id: '', secret_access_key: '', region: '' },
    granularity: 'secret-path',
    customTags: true,
    template: {
      'secret-path': 'vault/{{ .MountAccessor }}/{{ .SecretPath }}',
      'secret-key': 'vault/{{ .MountAccessor }}/{{ .SecretPath }}/{{ .SecretKey }}',
    },
  },
  'cloud2-kv': {
    fields: { key_vault_uri: str, client_id: str, client_secret: str, tenant_id: str, cloud: str },
    required: ['key_vault_uri', 'client_id', 'client_secret', 'tenant_id'],
    credentials: ['client_secret'],
    defaults: { cloud: 'cloud' },
    granularity: 'secret-path',
    customTags: true,
    // Key vault names hold only letters, digits and dashes.
    template: {
      'secret-path': 'vault-{{ .MountAccessor | replace "_" "-" }}-{{ .SecretPath | replace "/" "-" | replace "_" "-" | replace "." "-" }}',
      'secret-key': 'vault-{{ .MountAccessor | replace "_" "-" }}-{{ .SecretPath | replace "/" "-" | replace "_" "-" | replace "." "-" }}-{{ .SecretKey | replace "_" "-" | replace "." "-" }}',
    },
  },
  'cloud3-sm': {
    fields: { credentials: str },
    required: ['credentials'],
    credentials: ['credentials'],
    defaults: {},
    granularity: 'secret-path',
    customTags: true,
    // Secret IDs hold letters, digits, "_" and "-".
    template: {
      'secret-path': 'vault_{{ .MountAccessor }}_{{ .SecretPath | replace "/" "_" | replace "." "_" }}',
      'secret-key': 'vault_{{ .MountAccessor }}_{{ .SecretPath | replace "/" "_" | replace "." "_" }}_{{ .SecretKey | replace "." "_" }}',
    },
  },
  repohost: {
    // `environment_name` (as Vault's): the secrets of one deployment environment instead of the repository's.
    fields: { access_token: str, repository_owner: str, repository_name: str, environment_name: str },
    required: ['access_token', 'repository_owner', 'repository_name'],
    credentials: ['access_token'],
    defaults: { environment_name: '' },
    granularity: 'secret-key',
    customTags: false,
    // Letters, digits and "_", upper case by convention; "VAULT_" keeps clear of the reserved "GITHUB_" and a leading digit.
    template: {
      'secret-path': 'VAULT_{{ .MountAccessor | uppercase }}_{{ .SecretPath | replace "/" "_" | replace "-" "_" | replace "." "_" | uppercase }}',
      'secret-key': '{{ .SecretKey | replace "-" "_" | replace "." "_" | uppercase }}',
    },
  },
  'deployhost-project': {
    fields: { access_token: str, project_id: str, team_id: str, deployment_environments: { type: 'string-list' } },
    required: ['access_token', 'project_id', 'deployment_environments'],
    credentials: ['access_token'],
    defaults: { team_id: '' },
    granularity: 'secret-key',
    customTags: false,
    template: {
      'secret-path': 'VAULT_{{ .MountAccessor | uppercase }}_{{ .SecretPath | replace "/" "_" | replace "-" "_" | replace "." "_" | uppercase }}',
      'secret-key': '{{ .SecretKey | replace "-" "_" | replace "." "_" | uppercase }}',
    },
  },
};

export function isDestinationType(type: string): type is DestinationType {
  return (DESTINATION_TYPES as readonly string[]).includes(type);
}

/** The type named in a path, or a 400 naming `type` and the types there are. */
export function requireType(type: string): DestinationType {
  if (!isDestinationType(type)) throw new BadRequestError(`invalid value for "type": must be one of ${DESTINATION_TYPES.join(', ')}`);
  return type;
}

/** Which type owns a connection field, for telling a caller they sent another type's field. */
export function ownerOf(field: string): DestinationType | undefined {
  return DESTINATION_TYPES.find((t) => Object.hasOwn(TYPE_SPECS[t].fields, field));
}

function invalid(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

// A token or key with whitespace, quotes or controls in it was pasted wrong; the message never quotes it.
const TOKEN = /^[\x21-\x7e]{1,4096}$/;

function checkCredential(field: string, value: string): void {
  if (!TOKEN.test(value)) invalid(field, 'must be 1-4096 printable characters without spaces');
}

/**
 * Checks the connection details of one destination as they will be stored: required fields
 * present, and every value of a shape that can be valid. Messages name the field, never a value.
 */
export function checkConnection(type: DestinationType, c: Record<string, unknown>, settings: SyncSettings): void {
  const spec = TYPE_SPECS[type];
  for (const field of spec.required) {
    const v = c[field];
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) {
      throw new BadRequestError(`missing required field "${field}" for destination type ${type}`);
    }
  }
  const s = (field: string) => (typeof c[field] === 'string' ? (c[field] as string) : '');
  switch (type) {
    case 'cloud1-sm': {
      const id = s('access_key_id');
      const secret = s('secret_access_key');
      if ((id === '') !== (secret === '')) {
        throw new BadRequestError('"access_key_id" and "secret_access_key" must be given together, or both left empty to use the SDK\'s credential chain');
      }
      if (id !== '' && !/^[A-Z0-9]{16,128}$/.test(id)) invalid('access_key_id', 'must be 16-128 upper-case letters and digits');
      if (secret !== '') checkCredential('secret_access_key', secret);
      if (s('region') !== '' && !/^[a-z]{2}(-[a-z0-9]+)+-\d{1,2}$/.test(s('region'))) invalid('region', 'must be a region name such as us-east-1');
      return;
    }
    case 'cloud2-kv': {
      const cloud = s('cloud');
      // Own keys only: `constructor` or `toString` is no cloud.
      const suffix = Object.hasOwn(CLOUD2_KEY_VAULT_SUFFIXES, cloud) ? CLOUD2_KEY_VAULT_SUFFIXES[cloud] : undefined;
      if (suffix === undefined) invalid('cloud', `must be one of ${Object.keys(CLOUD2_KEY_VAULT_SUFFIXES).join(', ')}`);
      checkKeyVaultUri(s('key_vault_uri'), suffix, settings);
      if (!/^[A-Za-z0-9-]{1,128}$/.test(s('client_id'))) invalid('client_id', 'must be the application (client) ID: letters, digits and "-"');
      if (!/^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$/.test(s('tenant_id'))) invalid('tenant_id', 'must be the directory (tenant) ID or its domain name');
      checkCredential('client_secret', s('client_secret'));
      return;
    }
    case 'cloud3-sm':
      checkServiceAccount(s('credentials'));
      return;
    case 'repohost':
      checkCredential('access_token', s('access_token'));
      if (!/^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}$/.test(s('repository_owner'))) {
        invalid('repository_owner', 'must be 1-39 letters, digits and single "-", not starting or ending with "-"');
      }
      if (!/^[A-Za-z0-9._-]{1,100}$/.test(s('repository_name')) || /^\.{1,2}$/.test(s('repository_name'))) {
        invalid('repository_name', 'must be 1-100 letters, digits, ".", "_" or "-", and not "." or ".."');
      }
      if (s('environment_name').length > 255 || /[\u0000-\u001f\u007f]/.test(s('environment_name'))) {
        invalid('environment_name', 'must be at most 255 characters without control characters');
      }
      return;
    case 'deployhost-project': {
      checkCredential('access_token', s('access_token'));
      if (!/^[A-Za-z0-9_.-]{1,128}$/.test(s('project_id'))) invalid('project_id', 'must be the project\'s ID or name: 1-128 letters, digits, "_", "." or "-"');
      if (s('team_id') !== '' && !/^[A-Za-z0-9_-]{1,128}$/.test(s('team_id'))) invalid('team_id', 'must be 1-128 letters, digits, "_" or "-"');
      const envs = c['deployment_environments'] as string[];
      for (const e of envs) {
        if (!(DEPLOYMENT_ENVIRONMENTS as readonly string[]).includes(e)) invalid('deployment_environments', `each must be one of ${DEPLOYMENT_ENVIRONMENTS.join(', ')}`);
      }
      if (new Set(envs).size !== envs.length) invalid('deployment_environments', 'must not repeat an environment');
      return;
    }
  }
}

/**
 * A key vault URI is an https origin under the chosen cloud's key vault domain, or one the
 * operator allowed at start: the server sends the client secret's token there.
 */
function checkKeyVaultUri(uri: string, suffix: string, settings: SyncSettings): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return invalid('key_vault_uri', 'must be a URL such as https://my-vault.vault.azure.net/');
  }
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    invalid('key_vault_uri', 'must be the vault\'s origin, without user info, a path, a query or a fragment');
  }
  if (settings.cloud2KeyVaultOrigins.includes(url.origin)) return;
  if (url.protocol !== 'https:') invalid('key_vault_uri', 'must use https');
  const host = url.hostname.toLowerCase();
  const vault = host.endsWith(suffix) ? host.slice(0, -suffix.length) : '';
  if (url.port !== '' || !/^[a-z](?:-?[a-z0-9]){2,23}$/.test(vault)) {
    invalid('key_vault_uri', `must be https://<vault name>${suffix}/ for the chosen cloud (or an origin the operator allowed)`);
  }
}

function checkServiceAccount(text: string): void {
  if (text.startsWith('@')) {
    invalid('credentials', 'must be the service account key\'s JSON contents (a client reads "@file" and sends what it holds)');
  }
  let key: unknown;
  try {
    key = JSON.parse(text);
  } catch {
    return invalid('credentials', 'must be the service account key file\'s JSON');
  }
  const k = key as Record<string, unknown> | null;
  if (!k || typeof k !== 'object' || Array.isArray(k)) invalid('credentials', 'must be a JSON object');
  if (typeof k['client_email'] !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(k['client_email'])) {
    invalid('credentials', 'the JSON must hold "client_email", the service account\'s email address');
  }
  if (typeof k['private_key'] !== 'string' || !k['private_key'].includes('PRIVATE KEY-----')) {
    invalid('credentials', 'the JSON must hold "private_key", a PEM private key');
  }
}

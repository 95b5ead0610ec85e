import { isAbsolute } from 'node:path';
import { BadRequestError, parseDurationSeconds, type FieldData, type FieldSchemas } from '@strongroom/core';

export const STORAGE_TYPES = ['local', 'cloud1-objstore', 'cloud2-blob', 'cloud3-objstore'] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];

export interface LocalSettings {
  local_max_space: number;
}

export interface Cloud1Settings {
  cloud1_objstore_bucket: string;
  cloud1_objstore_region: string;
  cloud1_access_key_id?: string;
  cloud1_secret_access_key?: string;
  cloud1_session_token?: string;
  cloud1_objstore_endpoint?: string;
  cloud1_objstore_disable_tls: boolean;
  cloud1_objstore_force_path_style: boolean;
  cloud1_objstore_enable_kms: boolean;
  cloud1_objstore_server_side_encryption: boolean;
  cloud1_objstore_kms_key?: string;
}

export interface Cloud2Settings {
  cloud2_container_name: string;
  cloud2_account_name: string;
  cloud2_account_key: string;
  cloud2_blob_environment?: string;
  cloud2_endpoint?: string;
}

export interface Cloud3Settings {
  cloud3_bucket: string;
  cloud3_service_account_key?: string;
  cloud3_endpoint?: string;
  cloud3_disable_tls: boolean;
}

interface Common {
  name: string;
  /** Seconds. */
  interval: number;
  retain: number;
  path_prefix: string;
  file_prefix: string;
}

export type SnapshotConfig =
  | (Common & { storage_type: 'local' } & LocalSettings)
  | (Common & { storage_type: 'cloud1-objstore' } & Cloud1Settings)
  | (Common & { storage_type: 'cloud2-blob' } & Cloud2Settings)
  | (Common & { storage_type: 'cloud3-objstore' } & Cloud3Settings);

export const DEFAULT_FILE_PREFIX = 'service-snapshot';

/** The fields each storage type owns; giving one to another type is an error, not a silent no-op. */
const TYPE_FIELDS: Record<StorageType, FieldSchemas> = {
  local: {
    local_max_space: { type: 'int', description: 'bytes all snapshots with the file prefix may take in the directory' },
  },
  'cloud1-objstore': {
    cloud1_objstore_bucket: { type: 'string' },
    cloud1_objstore_region: { type: 'string' },
    cloud1_access_key_id: { type: 'string' },
    cloud1_secret_access_key: { type: 'string' },
    cloud1_session_token: { type: 'string' },
    cloud1_objstore_endpoint: { type: 'string' },
    cloud1_objstore_disable_tls: { type: 'bool' },
    cloud1_objstore_force_path_style: { type: 'bool' },
    cloud1_objstore_enable_kms: { type: 'bool' },
    cloud1_objstore_server_side_encryption: { type: 'bool' },
    cloud1_objstore_kms_key: { type: 'string' },
  },
  'cloud2-blob': {
    cloud2_container_name: { type: 'string' },
    cloud2_account_name: { type: 'string' },
    cloud2_account_key: { type: 'string' },
    cloud2_blob_environment: { type: 'string' },
    cloud2_endpoint: { type: 'string' },
  },
  'cloud3-objstore': {
    cloud3_bucket: { type: 'string' },
    cloud3_service_account_key: { type: 'string' },
    cloud3_endpoint: { type: 'string' },
    cloud3_disable_tls: { type: 'bool' },
  },
};

/** Credentials: kept in storage (behind the barrier), never shown by a read. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'cloud1_secret_access_key', 'cloud1_session_token', 'cloud2_account_key', 'cloud3_service_account_key',
]);

export const CONFIG_FIELDS: FieldSchemas = {
  name: { type: 'string', required: true },
  interval: { type: 'any', description: 'seconds, or a duration such as "24h"' },
  retain: { type: 'int' },
  path_prefix: { type: 'string' },
  file_prefix: { type: 'string' },
  storage_type: { type: 'string' },
  ...TYPE_FIELDS.local,
  ...TYPE_FIELDS['cloud1-objstore'],
  ...TYPE_FIELDS['cloud2-blob'],
  ...TYPE_FIELDS['cloud3-objstore'],
};

/** Azure clouds by the names Azure's own tools use, and their blob endpoint suffixes. */
export const CLOUD2_ENVIRONMENTS: Record<string, string> = {
  AzurePublicCloud: 'blob.core.windows.net',
  AzureUSGovernmentCloud: 'blob.core.usgovcloudapi.net',
  AzureChinaCloud: 'blob.core.chinacloudapi.cn',
};

function invalid(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

function missing(field: string, why: string): never {
  throw new BadRequestError(`missing required field "${field}"${why}`);
}

/** Configuration names appear in paths and logs. */
export function requireName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name)) {
    invalid('name', 'use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  return name;
}

/** Ten years: far beyond any backup schedule, and well inside what a date can hold. */
export const MAX_INTERVAL_SECONDS = 10 * 365 * 86400;

function parseInterval(value: unknown): number {
  const seconds = typeof value === 'number' && !Number.isInteger(value) ? null : parseDurationSeconds(value);
  // A whole number too large to be a duration at all is still plainly an interval: say the bound.
  const wholeNumber = typeof value === 'number' ? Number.isInteger(value) && value > 0 : typeof value === 'string' && /^\s*\d+\s*$/.test(value);
  if (seconds === null && wholeNumber) invalid('interval', `must be at most ${MAX_INTERVAL_SECONDS} seconds (ten years)`);
  if (seconds === null || seconds < 1) {
    invalid('interval', 'expected a positive whole number of seconds or a duration such as "24h"');
  }
  if (seconds > MAX_INTERVAL_SECONDS) invalid('interval', `must be at most ${MAX_INTERVAL_SECONDS} seconds (ten years)`);
  return seconds;
}

/**
 * Builds a configuration from a create or update request. An update starts from the stored
 * configuration and changes only what the request names; a change of storage type drops the
 * old type's fields. Every rule is checked on the result, so nothing invalid is ever stored.
 */
export function buildConfig(name: string, f: FieldData, existing: SnapshotConfig | null): SnapshotConfig {
  const storageType = f.has('storage_type') ? f.string('storage_type') : existing?.storage_type;
  if (!storageType) missing('storage_type', `: one of ${STORAGE_TYPES.join(', ')}`);
  if (!(STORAGE_TYPES as readonly string[]).includes(storageType)) {
    invalid('storage_type', `must be one of ${STORAGE_TYPES.join(', ')}`);
  }
  const type = storageType as StorageType;
  for (const [other, fields] of Object.entries(TYPE_FIELDS)) {
    if (other === type) continue;
    for (const field of Object.keys(fields)) {
      if (f.has(field)) throw new BadRequestError(`"${field}" belongs to storage_type ${other} and cannot be set with storage_type ${type}`);
    }
  }
  const base: Record<string, unknown> = existing && existing.storage_type === type ? { ...existing } : {};
  if (existing) {
    for (const key of ['interval', 'retain', 'path_prefix', 'file_prefix'] as const) base[key] = existing[key];
  }
  for (const field of Object.keys(TYPE_FIELDS[type])) {
    if (f.has(field)) base[field] = f.get(field);
  }

  if (f.has('interval')) base['interval'] = parseInterval(f.get('interval'));
  if (base['interval'] === undefined) missing('interval', ': seconds, or a duration such as "24h"');
  if (f.has('retain')) base['retain'] = f.int('retain');
  const retain = (base['retain'] as number | undefined) ?? 1;
  if (!Number.isInteger(retain) || retain < 1) invalid('retain', 'must be an integer of at least 1');
  if (f.has('path_prefix')) base['path_prefix'] = f.string('path_prefix');
  if (f.has('file_prefix')) base['file_prefix'] = f.string('file_prefix');
  const filePrefix = (base['file_prefix'] as string | undefined) ?? DEFAULT_FILE_PREFIX;
  if (filePrefix === '' || filePrefix.length > 100 || /[/\\\u0000-\u001f\u007f]/.test(filePrefix) || filePrefix.startsWith('.')) {
    invalid('file_prefix', 'must be 1-100 characters, must not start with "." and must not contain "/", "\\" or control characters');
  }
  const pathPrefix = base['path_prefix'] as string | undefined;
  if (pathPrefix === undefined || pathPrefix === '') missing('path_prefix', '');
  checkPathPrefix(type, pathPrefix);

  const config = {
    ...base, name, storage_type: type, interval: base['interval'] as number, retain, path_prefix: pathPrefix, file_prefix: filePrefix,
  } as SnapshotConfig;
  checkTypeFields(config);
  return config;
}

function checkPathPrefix(type: StorageType, prefix: string): void {
  if (prefix.length > 512 || /[\u0000-\u001f\u007f]/.test(prefix)) invalid('path_prefix', 'must be at most 512 characters, without control characters');
  if (type === 'local' && !isAbsolute(prefix)) {
    invalid('path_prefix', 'for storage_type local, must be an absolute directory path');
  }
  if ((type === 'cloud2-blob' || type === 'cloud3-objstore') && !prefix.endsWith('/')) {
    invalid('path_prefix', `for storage_type ${type}, must end with "/"`);
  }
}

function checkTypeFields(c: SnapshotConfig): void {
  switch (c.storage_type) {
    case 'local':
      if (c.local_max_space === undefined) missing('local_max_space', ' for storage_type local: the bytes all snapshots may take');
      if (!Number.isInteger(c.local_max_space) || c.local_max_space < 1) invalid('local_max_space', 'must be a positive number of bytes');
      return;
    case 'cloud1-objstore':
      requireText(c.cloud1_objstore_bucket, 'cloud1_objstore_bucket', c.storage_type);
      requireText(c.cloud1_objstore_region, 'cloud1_objstore_region', c.storage_type);
      c.cloud1_objstore_disable_tls = c.cloud1_objstore_disable_tls === true;
      c.cloud1_objstore_force_path_style = c.cloud1_objstore_force_path_style === true;
      c.cloud1_objstore_enable_kms = c.cloud1_objstore_enable_kms === true;
      c.cloud1_objstore_server_side_encryption = c.cloud1_objstore_server_side_encryption === true;
      if (Boolean(c.cloud1_access_key_id) !== Boolean(c.cloud1_secret_access_key)) {
        throw new BadRequestError('"cloud1_access_key_id" and "cloud1_secret_access_key" must be given together, or both left out to use the SDK\'s credential chain');
      }
      if (c.cloud1_session_token && !c.cloud1_access_key_id) {
        invalid('cloud1_session_token', 'needs cloud1_access_key_id and cloud1_secret_access_key');
      }
      if (c.cloud1_objstore_enable_kms && c.cloud1_objstore_server_side_encryption) {
        throw new BadRequestError('"cloud1_objstore_server_side_encryption" (AES256) cannot be used with "cloud1_objstore_enable_kms"');
      }
      if (c.cloud1_objstore_kms_key && !c.cloud1_objstore_enable_kms) {
        invalid('cloud1_objstore_kms_key', 'is used only with cloud1_objstore_enable_kms set to true');
      }
      if (c.cloud1_objstore_endpoint) checkEndpoint('cloud1_objstore_endpoint', c.cloud1_objstore_endpoint, c.cloud1_objstore_disable_tls, 'cloud1_objstore_disable_tls');
      return;
    case 'cloud2-blob':
      requireText(c.cloud2_container_name, 'cloud2_container_name', c.storage_type);
      if (!/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/.test(c.cloud2_container_name)) {
        invalid('cloud2_container_name', 'must be 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit');
      }
      requireText(c.cloud2_account_name, 'cloud2_account_name', c.storage_type);
      if (!/^[a-z0-9]{3,24}$/.test(c.cloud2_account_name)) invalid('cloud2_account_name', 'must be 3-24 lowercase letters and digits');
      requireText(c.cloud2_account_key, 'cloud2_account_key', c.storage_type);
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(c.cloud2_account_key)) invalid('cloud2_account_key', 'must be the base64 account key');
      if (c.cloud2_blob_environment && !Object.hasOwn(CLOUD2_ENVIRONMENTS, c.cloud2_blob_environment)) {
        invalid('cloud2_blob_environment', `must be one of ${Object.keys(CLOUD2_ENVIRONMENTS).join(', ')}`);
      }
      if (c.cloud2_endpoint && c.cloud2_blob_environment) {
        throw new BadRequestError('"cloud2_endpoint" and "cloud2_blob_environment" both say where the blob service is; give one');
      }
      // No flag turns TLS off for this type: plain http is for an emulator on this machine.
      if (c.cloud2_endpoint) checkEndpoint('cloud2_endpoint', c.cloud2_endpoint, 'loopback', '');
      return;
    case 'cloud3-objstore':
      requireText(c.cloud3_bucket, 'cloud3_bucket', c.storage_type);
      c.cloud3_disable_tls = c.cloud3_disable_tls === true;
      if (c.cloud3_service_account_key) checkServiceAccount(c.cloud3_service_account_key);
      if (c.cloud3_endpoint) checkEndpoint('cloud3_endpoint', c.cloud3_endpoint, c.cloud3_disable_tls, 'cloud3_disable_tls');
      return;
  }
}

function requireText(value: string | undefined, field: string, type: StorageType): void {
  if (!value) missing(field, ` for storage_type ${type}`);
}

/**
 * An endpoint is a URL or a bare host[:port], with nothing that could carry a credential (user
 * info, query, fragment): it is shown in reads and status. Plain http must be asked for with
 * the type's disable-TLS flag, so a typo cannot send credentials in the clear.
 */
function checkEndpoint(field: string, endpoint: string, plain: boolean | 'loopback', tlsFlag: string): void {
  let url: URL;
  try {
    url = new URL(endpointUrl(endpoint, false));
  } catch {
    invalid(field, 'must be a URL such as https://storage.example.com or a host[:port]');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') invalid(field, 'the scheme must be http or https');
  if (url.username || url.password || url.search || url.hash) invalid(field, 'must not hold user info, a query or a fragment');
  if (url.protocol === 'http:') {
    if (plain === 'loopback' && !isLoopback(url.hostname)) invalid(field, 'may use http only for a loopback address (an emulator); use https');
    if (plain === false) invalid(field, `uses http; set ${tlsFlag} to true to allow that (testing only)`);
  }
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';
}

function checkServiceAccount(text: string): void {
  let key: unknown;
  try {
    key = JSON.parse(text);
  } catch {
    invalid('cloud3_service_account_key', 'must be the service account key file\'s JSON');
  }
  const k = key as Record<string, unknown> | null;
  if (!k || typeof k !== 'object' || typeof k['client_email'] !== 'string' || typeof k['private_key'] !== 'string') {
    invalid('cloud3_service_account_key', 'the JSON must hold "client_email" and "private_key"');
  }
}

/** Every credential a configuration holds, as text that could turn up in an error message. */
export function secretsOf(config: SnapshotConfig): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (SECRET_FIELDS.has(k) && typeof v === 'string' && v.length >= 4) out.push(v);
  }
  if (config.storage_type === 'cloud3-objstore' && config.cloud3_service_account_key) {
    const key = JSON.parse(config.cloud3_service_account_key) as Record<string, unknown>;
    if (typeof key['private_key'] === 'string') out.push(key['private_key'], ...key['private_key'].split('\n').filter((l) => l.length >= 16));
  }
  return out;
}

/** The read view: interval in seconds, every field of the type, credentials left out. */
export function publicView(config: SnapshotConfig): Record<string, unknown> {
  const { interval, retain, path_prefix, file_prefix, storage_type } = config;
  const out: Record<string, unknown> = { interval, retain, path_prefix, file_prefix, storage_type };
  for (const [k, v] of Object.entries(config)) {
    if (k in out) continue;
    if (k === 'name' || SECRET_FIELDS.has(k)) continue;
    out[k] = v;
  }
  return out;
}

/** Where a configuration's scheduled copies go: the endpoint with a scheme the SDKs accept. */
export function endpointUrl(endpoint: string, disableTls: boolean): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)) return endpoint;
  return `${disableTls ? 'http' : 'https'}://${endpoint}`;
}

import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { isIPv6 } from 'node:net';
import { extname } from 'node:path';
import { parseDurationSeconds } from '@strongroom/core';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../http/json-body';
import { parseSeals, type TransitSealConfig } from './seal-config';

export interface ListenerConfig {
  type: 'tcp';
  /** As written in the file (or the default), e.g. `[::1]:8200`. */
  address: string;
  /** Without IPv6 brackets, ready to hand to `server.listen`. */
  host: string;
  port: number;
  tlsDisable: boolean;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** In bytes; always positive (0 in the file means the default). */
  maxRequestSize: number;
  /** `max_json_*`: bounds on a JSON body's shape; Vault's defaults when absent (0 in the file means the default). */
  jsonLimits?: JsonLimits;
  /** Where the cluster (Raft) port listens; by default the API port plus one on the same host. */
  clusterAddress: { host: string; port: number };
  /** `telemetry { unauthenticated_metrics_access = true }`: `sys/metrics` answers without a token here. */
  unauthenticatedMetricsAccess?: boolean;
}

export interface RaftStorageConfig {
  type: 'raft';
  path: string;
  nodeId: string;
  /** `snapshot_threshold`: entries applied since the newest snapshot before one is taken. */
  snapshotThreshold?: number;
  /** `snapshot_interval`: how often that threshold is checked. */
  snapshotIntervalMs?: number;
  /** `trailing_logs`: entries kept in the log below a snapshot for followers that lag a little. */
  trailingLogs?: number;
  /** `retry_join`: leaders a new node keeps trying to join through, in order. */
  retryJoin?: RetryJoinConfig[];
}

/** One `retry_join` block; the files are checked readable at load and read at each attempt. */
export interface RetryJoinConfig {
  leaderApiAddr: string;
  leaderCaCertFile?: string;
  leaderClientCertFile?: string;
  leaderClientKeyFile?: string;
  leaderTlsServername?: string;
}

export interface ServerConfig {
  storage: RaftStorageConfig;
  listeners: ListenerConfig[];
  apiAddr?: string;
  clusterAddr?: string;
  ui: boolean;
  /** `seal` blocks: at most one in use and one disabled (a migration's old seal); none means Shamir. */
  seals?: TransitSealConfig[];
  /** `replication { ... }`: the WAL window a primary keeps for its secondaries. */
  replication?: ReplicationConfig;
  sourceFile: string;
  /** Vault settings that were present but are ignored by Strongroom; one message each. */
  warnings: string[];
}

/** Vault's `replication` stanza: the WAL (the commit feed's retained window) is bounded by both. */
export interface ReplicationConfig {
  /** `logshipper_buffer_length`: WAL entries kept (Vault's default 16384). */
  logshipperBufferLength?: number;
  /** `logshipper_buffer_size`: bytes of WAL kept (Vault's default: a tenth of the memory). */
  logshipperBufferSize?: number;
}

export type ConfigFormat = 'hcl' | 'json';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  /**
   * @param field dotted path of the offending setting, e.g. `listener.tcp[0].address`;
   *   empty when the problem is with the file as a whole (unreadable, unparseable).
   */
  constructor(
    readonly file: string,
    readonly field: string,
    readonly rule: string,
  ) {
    super(field ? `${file}: ${field}: ${rule}` : `${file}: ${rule}`);
  }
}

export const DEFAULT_LISTENER_ADDRESS = '127.0.0.1:8200';
export const DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024;

// Settings we implement, per section.
const TOP_LEVEL_KEYS = new Set(['storage', 'listener', 'api_addr', 'cluster_addr', 'ui', 'seal', 'replication']);
const REPLICATION_KEYS = new Set(['logshipper_buffer_length', 'logshipper_buffer_size']);
// Vault's other replication settings: accepted with a warning (nothing here uses them yet).
const VAULT_REPLICATION_KEYS = new Set(['resolver_discover_servers', 'best_effort_wal_wait_duration', 'allow_forwarding_via_header', 'allow_forwarding_via_token']);
const RAFT_KEYS = new Set(['path', 'node_id', 'snapshot_threshold', 'snapshot_interval', 'trailing_logs', 'retry_join']);
const RETRY_JOIN_FILE_KEYS: Array<[string, keyof RetryJoinConfig]> = [
  ['leader_ca_cert_file', 'leaderCaCertFile'],
  ['leader_client_cert_file', 'leaderClientCertFile'],
  ['leader_client_key_file', 'leaderClientKeyFile'],
];
const RETRY_JOIN_KEYS = new Set(['leader_api_addr', 'leader_tls_servername', ...RETRY_JOIN_FILE_KEYS.map(([key]) => key)]);
// Vault's inline PEM forms and cloud discovery: refused with a pointer, since ignoring a CA or
// the only way to find the leader would leave a node that silently never joins.
const VAULT_RETRY_JOIN_KEYS: Record<string, string> = {
  leader_ca_cert: 'not supported by Strongroom, use leader_ca_cert_file',
  leader_client_cert: 'not supported by Strongroom, use leader_client_cert_file',
  leader_client_key: 'not supported by Strongroom, use leader_client_key_file',
  auto_join: 'cloud auto-join is not supported by Strongroom, list each leader with leader_api_addr',
  auto_join_scheme: 'cloud auto-join is not supported by Strongroom, list each leader with leader_api_addr',
  auto_join_port: 'cloud auto-join is not supported by Strongroom, list each leader with leader_api_addr',
};
const TCP_KEYS = new Set([
  'address', 'cluster_address', 'tls_cert_file', 'tls_key_file', 'tls_disable', 'max_request_size',
  'max_json_depth', 'max_json_string_value_length', 'max_json_object_entry_count', 'max_json_array_element_count',
  'telemetry',
]);
const LISTENER_TELEMETRY_KEYS = new Set(['unauthenticated_metrics_access']);
const JSON_LIMIT_SETTINGS: Array<[string, keyof JsonLimits]> = [
  ['max_json_depth', 'maxDepth'],
  ['max_json_string_value_length', 'maxStringLength'],
  ['max_json_object_entry_count', 'maxObjectEntries'],
  ['max_json_array_element_count', 'maxArrayElements'],
];

// Accepted without a word: they tune the process rather than the server's behaviour, and
// nearly every Vault config file sets them, so warning about them would only be noise.
// A top-level `telemetry` block configures Vault's metric sinks; Strongroom always serves its
// metrics at `sys/metrics`, so the block's settings have nothing left to change.
const SILENT_TOP_LEVEL_KEYS = new Set(['disable_mlock', 'log_level', 'telemetry']);

// Settings Vault understands but Strongroom does not. A config written for Vault should
// still start (with a warning) rather than force the operator to strip it first; anything
// outside these lists is most likely a typo and is rejected.
const VAULT_TOP_LEVEL_KEYS = new Set([
  'administrative_namespace_path', 'cache_size', 'cluster_cipher_suites', 'cluster_name',
  'default_lease_ttl', 'default_max_request_duration', 'detect_deadlocks', 'disable_cache',
  'disable_clustering', 'disable_indexing', 'disable_performance_standby', 'disable_printable_check',
  'disable_sealwrap', 'disable_sentinel_trace', 'enable_post_unseal_trace',
  'enable_response_header_hostname', 'enable_response_header_raft_node_id', 'entropy',
  'experiments', 'ha_storage', 'imprecise_lease_role_tracking', 'introspection_endpoint',
  'license_path', 'log_file', 'log_format', 'log_requests_level', 'log_rotate_bytes',
  'log_rotate_duration', 'log_rotate_max_files', 'max_lease_ttl', 'pid_file',
  'plugin_directory', 'plugin_file_permissions', 'plugin_file_uid', 'plugin_tmpdir',
  'post_unseal_trace_directory', 'raw_storage_endpoint', 'reporting',
  'service_registration', 'user_lockout',
]);
const VAULT_RAFT_KEYS = new Set([
  'autopilot_reconcile_interval', 'autopilot_redundancy_zone', 'autopilot_update_interval',
  'autopilot_upgrade_version', 'max_batch_entries', 'max_batch_size', 'max_entry_size',
  'max_mount_and_namespace_table_entry_size', 'performance_multiplier', 'raft_log_verification_interval',
  'raft_log_verifier_enabled', 'raft_wal',
]);
const VAULT_TCP_KEYS = new Set([
  'chroot_namespace', 'custom_response_headers', 'disable_replication_status_endpoints',
  'disable_request_limiter', 'http_idle_timeout', 'http_read_header_timeout', 'http_read_timeout',
  'http_write_timeout', 'inflight_requests_logging', 'max_request_duration', 'profiling',
  'proxy_protocol_authorized_addrs', 'proxy_protocol_behavior', 'redact_addresses',
  'redact_cluster_name', 'redact_version', 'replication_status_endpoints', 'require_request_header',
  'tls_cipher_suites', 'tls_client_ca_file', 'tls_disable_client_certs',
  'tls_max_version', 'tls_min_version', 'tls_prefer_server_cipher_suites',
  'tls_require_and_verify_client_cert', 'x_forwarded_for_authorized_addrs',
  'x_forwarded_for_client_cert_header', 'x_forwarded_for_client_cert_header_decoder',
  'x_forwarded_for_hop_skips', 'x_forwarded_for_reject_not_authorized',
  'x_forwarded_for_reject_not_present',
]);

// Vault parses these flags with Go's strconv.ParseBool, and its docs habitually write
// `tls_disable = 1`, so the same spellings (and the numbers 0/1) have to work here.
const TRUE_WORDS = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads and validates a server config file; TLS files it names are checked too. */
export async function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): Promise<ServerConfig> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ConfigError(file, '', 'file not found');
    if (code === 'EISDIR') throw new ConfigError(file, '', 'is a directory, not a config file');
    throw new ConfigError(file, '', `could not read file: ${code ?? (err as Error).message}`);
  }
  return parseConfig(text, file, undefined, env);
}

/**
 * Validates config text. `sourceName` labels errors and decides the format by extension
 * when `format` is not given. Async because HCL parsing and the TLS file checks are.
 */
export async function parseConfig(text: string, sourceName: string, format?: ConfigFormat, env: NodeJS.ProcessEnv = process.env): Promise<ServerConfig> {
  // A BOM would make JSON.parse fail and the content sniffing below miss the `{`.
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const fmt = format ?? detectFormat(sourceName, body);
  const raw = fmt === 'json' ? parseJson(body, sourceName) : await parseHcl(body, sourceName);
  return new Validator(sourceName, env).run(raw);
}

function detectFormat(sourceName: string, text: string): ConfigFormat {
  const ext = extname(sourceName).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.hcl') return 'hcl';
  return text.trimStart().startsWith('{') ? 'json' : 'hcl';
}

function parseJson(text: string, file: string): Obj {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(file, '', `could not parse as JSON: ${firstLine((err as Error).message)}`);
  }
  if (!isObj(value)) throw new ConfigError(file, '', 'could not parse as JSON: the top level must be an object');
  return value;
}

type HclParse = (filename: string, contents: string) => Promise<Record<string, unknown>>;
let hclParser: HclParse | undefined;

// The parser boots a Go WASM runtime as soon as it is required, so it is loaded only when
// an HCL file actually turns up. Typed by hand because its own declarations drag the DOM
// lib into the program.
function getHclParser(): HclParse {
  hclParser ??= (require('@cdktf/hcl2json') as { parse: HclParse }).parse;
  return hclParser;
}

// The name the parser sees, so its diagnostics can be found and trimmed reliably whatever
// the real path looks like.
const HCL_PARSE_NAME = 'strongroom-config.hcl';

async function parseHcl(text: string, file: string): Promise<Obj> {
  let value: unknown;
  try {
    value = await getHclParser()(HCL_PARSE_NAME, text);
  } catch (err) {
    throw new ConfigError(file, '', `could not parse as HCL: ${describeHclError(err)}`);
  }
  if (!isObj(value)) throw new ConfigError(file, '', 'could not parse as HCL: unexpected parser output');
  return value;
}

/**
 * The parser reports `parse config: [name:L,C-L,C: Summary; Detail. name:L,C-...: ...]`;
 * keep just the first diagnostic, in words.
 */
function describeHclError(err: unknown): string {
  let msg = firstLine(err instanceof Error ? err.message : String(err));
  msg = msg.replace(/^parse config: \[/, '').replace(/\]$/, '');
  const marker = `${HCL_PARSE_NAME}:`;
  const next = msg.indexOf(` ${marker}`, 1);
  if (next > 0) msg = msg.slice(0, next);
  if (msg.startsWith(marker)) {
    msg = msg.slice(marker.length).replace(/^(\d+),(\d+)(?:-[\d,]+)?: /, 'line $1, column $2: ');
  }
  return msg.trim();
}

function firstLine(s: string): string {
  return s.split('\n', 1)[0] ?? '';
}

/** One labeled block (`listener "tcp" { ... }`) however the input shaped it. */
interface Block {
  type: string;
  body: Obj;
  /** Field path prefix of the block, e.g. `listener.tcp[0]`. */
  path: string;
}

class Validator {
  private readonly warnings: string[] = [];

  constructor(private readonly file: string, private readonly env: NodeJS.ProcessEnv) {}

  private fail(field: string, rule: string): never {
    throw new ConfigError(this.file, field, rule);
  }

  private warn(field: string): void {
    this.warnings.push(`${this.file}: ${field}: not supported by Strongroom, ignored`);
  }

  async run(raw: Obj): Promise<ServerConfig> {
    for (const key of Object.keys(raw)) {
      if (TOP_LEVEL_KEYS.has(key) || SILENT_TOP_LEVEL_KEYS.has(key)) continue;
      if (VAULT_TOP_LEVEL_KEYS.has(key)) this.warn(key);
      else if (key === 'backend') this.fail(key, 'deprecated name not supported, use "storage"');
      else this.fail(key, 'unknown setting');
    }
    this.optionalBool(raw, 'disable_mlock', 'disable_mlock');
    this.unlabeledBlock(raw['telemetry'], 'telemetry');
    this.optionalString(raw, 'log_level', 'log_level');

    const storage = await this.storage(raw['storage']);
    const listeners = await this.listeners(raw['listener']);
    const apiAddr = this.envUrl('VAULT_API_ADDR') ?? this.optionalUrl(raw, 'api_addr', 'api_addr');
    const clusterAddr = this.envUrl('VAULT_CLUSTER_ADDR') ?? this.optionalUrl(raw, 'cluster_addr', 'cluster_addr');
    const ui = this.optionalBool(raw, 'ui', 'ui') ?? false;
    const seals = await parseSeals(this.blocks('seal', raw['seal']), this.env, {
      fail: (field, rule) => this.fail(field, rule),
      warn: (field) => this.warn(field),
    });

    const replication = this.replication(raw['replication']);
    const config: ServerConfig = { storage, listeners, ui, sourceFile: this.file, warnings: this.warnings };
    if (seals.length > 0) config.seals = seals;
    if (replication) config.replication = replication;
    if (apiAddr !== undefined) config.apiAddr = apiAddr;
    if (clusterAddr !== undefined) config.clusterAddr = clusterAddr;
    return config;
  }

  private async storage(value: unknown): Promise<ServerConfig['storage']> {
    const blocks = this.blocks('storage', value);
    if (blocks.length === 0) this.fail('storage', 'is required');
    if (blocks.length > 1) this.fail('storage', 'only one storage block is allowed');
    const block = blocks[0]!;
    if (block.type !== 'raft') {
      this.fail(`storage "${block.type}"`, 'unsupported storage type, only "raft" is supported');
    }
    // Storage is a singleton, so its fields read `storage.raft.path`, without an index.
    const prefix = 'storage.raft';
    this.checkKeys(block.body, prefix, RAFT_KEYS, VAULT_RAFT_KEYS);
    const path = this.envString('VAULT_RAFT_PATH') ?? this.optionalString(block.body, 'path', `${prefix}.path`, true);
    if (path === undefined) this.fail(`${prefix}.path`, 'is required');
    // Vault invents a random node id when none is given; a random one would change on every
    // restart here, so derive it from the data path, which identifies the node just as well.
    const nodeId =
      this.envString('VAULT_RAFT_NODE_ID') ??
      this.optionalString(block.body, 'node_id', `${prefix}.node_id`, true) ??
      `node-${createHash('sha256').update(path).digest('hex').slice(0, 8)}`;
    const storage: RaftStorageConfig = { type: 'raft', path, nodeId };
    const threshold = this.optionalNonNegativeInt(block.body, 'snapshot_threshold', `${prefix}.snapshot_threshold`);
    if (threshold === 0) this.fail(`${prefix}.snapshot_threshold`, 'must be a positive integer (entries between snapshots)');
    if (threshold !== undefined) storage.snapshotThreshold = threshold;
    const interval = this.optionalDurationSeconds(block.body, 'snapshot_interval', `${prefix}.snapshot_interval`);
    if (interval === 0) this.fail(`${prefix}.snapshot_interval`, 'must be a positive duration, e.g. "120s"');
    if (interval !== undefined) storage.snapshotIntervalMs = interval * 1000;
    const trailing = this.optionalNonNegativeInt(block.body, 'trailing_logs', `${prefix}.trailing_logs`);
    if (trailing !== undefined) storage.trailingLogs = trailing;
    const retryJoin = await this.retryJoin(block.body['retry_join'], `${prefix}.retry_join`);
    if (retryJoin.length > 0) storage.retryJoin = retryJoin;
    return storage;
  }

  /** `replication { ... }`: one unlabeled block (HCL gives a list of one, JSON an object). */
  private replication(value: unknown): ReplicationConfig | undefined {
    if (value === undefined || value === null) return undefined;
    const list = Array.isArray(value) ? value : [value];
    if (list.length !== 1 || !isObj(list[0])) this.fail('replication', 'must be one block, e.g. replication { logshipper_buffer_length = 16384 }');
    const body = list[0] as Obj;
    for (const key of Object.keys(body)) {
      if (REPLICATION_KEYS.has(key)) continue;
      if (VAULT_REPLICATION_KEYS.has(key)) this.warn(`replication.${key}`);
      else this.fail(`replication.${key}`, 'unknown setting');
    }
    const out: ReplicationConfig = {};
    const length = this.optionalNonNegativeInt(body, 'logshipper_buffer_length', 'replication.logshipper_buffer_length');
    if (length === 0) this.fail('replication.logshipper_buffer_length', 'must be a positive integer (WAL entries kept)');
    if (length !== undefined) out.logshipperBufferLength = length;
    const size = body['logshipper_buffer_size'];
    if (size !== undefined && size !== null) {
      const bytes = parseByteSize(size);
      if (bytes === null || bytes <= 0) this.fail('replication.logshipper_buffer_size', 'must be a positive size such as "512mb", "1gb" or a number of bytes');
      out.logshipperBufferSize = bytes;
    }
    return out;
  }

  /** Several blocks in HCL (a list), a list or a single object in JSON. */
  private async retryJoin(value: unknown, prefix: string): Promise<RetryJoinConfig[]> {
    if (value === undefined || value === null) return [];
    const list = Array.isArray(value) ? value : [value];
    const out: RetryJoinConfig[] = [];
    for (const [index, body] of list.entries()) {
      const at = `${prefix}[${index}]`;
      if (!isObj(body)) this.fail(at, 'must be a block with leader_api_addr, e.g. retry_join { leader_api_addr = "https://10.0.0.1:8200" }');
      for (const key of Object.keys(body)) {
        if (RETRY_JOIN_KEYS.has(key)) continue;
        this.fail(`${at}.${key}`, VAULT_RETRY_JOIN_KEYS[key] ?? 'unknown setting');
      }
      const addr = this.optionalUrl(body, 'leader_api_addr', `${at}.leader_api_addr`);
      if (addr === undefined) this.fail(`${at}.leader_api_addr`, 'is required');
      const entry: RetryJoinConfig = { leaderApiAddr: new URL(addr).origin };
      for (const [key, field] of RETRY_JOIN_FILE_KEYS) {
        const file = this.optionalString(body, key, `${at}.${key}`, true);
        if (file === undefined) continue;
        const problem = await unreadableFileProblem(file);
        if (problem) this.fail(`${at}.${key}`, problem);
        entry[field] = file;
      }
      if ((entry.leaderClientCertFile === undefined) !== (entry.leaderClientKeyFile === undefined)) {
        const missing = entry.leaderClientCertFile === undefined ? 'leader_client_cert_file' : 'leader_client_key_file';
        this.fail(`${at}.${missing}`, 'is required with the other half of the client certificate');
      }
      const servername = this.optionalString(body, 'leader_tls_servername', `${at}.leader_tls_servername`, true);
      if (servername !== undefined) entry.leaderTlsServername = servername;
      out.push(entry);
    }
    return out;
  }

  private async listeners(value: unknown): Promise<ListenerConfig[]> {
    const blocks = this.blocks('listener', value);
    if (blocks.length === 0) this.fail('listener', 'at least one listener block is required');
    const out: ListenerConfig[] = [];
    for (const block of blocks) {
      if (block.type !== 'tcp') {
        this.fail(`listener "${block.type}"`, 'unsupported listener type, only "tcp" is supported');
      }
      out.push(await this.tcpListener(block));
    }
    return out;
  }

  private async tcpListener({ body, path: prefix }: Block): Promise<ListenerConfig> {
    this.checkKeys(body, prefix, TCP_KEYS, VAULT_TCP_KEYS);
    const address = this.optionalString(body, 'address', `${prefix}.address`, true) ?? DEFAULT_LISTENER_ADDRESS;
    const { host, port } = this.hostPort(address, `${prefix}.address`);
    // Vault's default is TLS on, and so is ours.
    const tlsDisable = this.optionalBool(body, 'tls_disable', `${prefix}.tls_disable`) ?? false;
    const tlsCertFile = this.optionalString(body, 'tls_cert_file', `${prefix}.tls_cert_file`, true);
    const tlsKeyFile = this.optionalString(body, 'tls_key_file', `${prefix}.tls_key_file`, true);
    if (!tlsDisable) {
      if (tlsCertFile === undefined) this.fail(`${prefix}.tls_cert_file`, 'is required unless tls_disable is true');
      if (tlsKeyFile === undefined) this.fail(`${prefix}.tls_key_file`, 'is required unless tls_disable is true');
      // Checked now so a bad path is reported with the config, not as a crash at bind time.
      for (const [key, file] of [['tls_cert_file', tlsCertFile], ['tls_key_file', tlsKeyFile]] as const) {
        const problem = await unreadableFileProblem(file);
        if (problem) this.fail(`${prefix}.${key}`, problem);
      }
    }
    const size = this.optionalNonNegativeInt(body, 'max_request_size', `${prefix}.max_request_size`);
    const clusterAddress = this.optionalString(body, 'cluster_address', `${prefix}.cluster_address`, true);
    if (clusterAddress === undefined && port === 65535) this.fail(`${prefix}.cluster_address`, 'is required when the API port is 65535 (it defaults to the API port plus one)');
    const listener: ListenerConfig = {
      type: 'tcp',
      address,
      host,
      port,
      clusterAddress: clusterAddress === undefined ? { host, port: port + 1 } : this.hostPort(clusterAddress, `${prefix}.cluster_address`),
      tlsDisable,
      maxRequestSize: size === undefined || size === 0 ? DEFAULT_MAX_REQUEST_SIZE : size,
    };
    if (tlsCertFile !== undefined) listener.tlsCertFile = tlsCertFile;
    if (tlsKeyFile !== undefined) listener.tlsKeyFile = tlsKeyFile;
    listener.jsonLimits = this.jsonLimits(body, prefix);
    if (this.listenerTelemetry(body['telemetry'], `${prefix}.telemetry`)) listener.unauthenticatedMetricsAccess = true;
    return listener;
  }

  /** A listener's `telemetry` block; true when it opens `sys/metrics` to callers without a token. */
  private listenerTelemetry(value: unknown, field: string): boolean {
    const body = this.unlabeledBlock(value, field);
    if (!body) return false;
    for (const key of Object.keys(body)) {
      if (!LISTENER_TELEMETRY_KEYS.has(key)) this.fail(`${field}.${key}`, 'unknown setting (a listener\'s telemetry block takes only unauthenticated_metrics_access)');
    }
    return this.optionalBool(body, 'unauthenticated_metrics_access', `${field}.unauthenticated_metrics_access`) ?? false;
  }

  /**
   * A block without a label (`telemetry { ... }`): HCL hands it over as a one-element list,
   * JSON as an object. Given twice, it is refused rather than merged.
   */
  private unlabeledBlock(value: unknown, field: string): Obj | undefined {
    if (value === undefined || value === null) return undefined;
    const list = Array.isArray(value) ? value : [value];
    if (list.length === 0) return undefined;
    if (list.length > 1) this.fail(field, 'may be given only once');
    const body = list[0];
    if (!isObj(body)) this.fail(field, 'must be a block');
    return body;
  }

  private jsonLimits(body: Obj, prefix: string): JsonLimits {
    const limits = { ...DEFAULT_JSON_LIMITS };
    for (const [key, field] of JSON_LIMIT_SETTINGS) {
      const value = this.optionalNonNegativeInt(body, key, `${prefix}.${key}`);
      if (value !== undefined && value > 0) limits[field] = value;
    }
    return limits;
  }

  private hostPort(address: string, field: string): { host: string; port: number } {
    const rule = 'must be host:port with a port from 1 to 65535 (IPv6 hosts in brackets, e.g. [::1]:8200)';
    const m = /^(?:\[([^\]]*)\]|([^:[\]]+)):(\d{1,5})$/.exec(address);
    if (!m) this.fail(field, rule);
    const port = Number(m[3]);
    if (port < 1 || port > 65535) this.fail(field, rule);
    const v6 = m[1];
    if (v6 !== undefined) {
      if (!isIPv6(v6)) this.fail(field, `"${v6}" is not an IPv6 address`);
      return { host: v6, port };
    }
    const host = m[2]!;
    if (!/^[A-Za-z0-9._-]+$/.test(host)) this.fail(field, rule);
    return { host, port };
  }

  /**
   * Flattens every shape a labeled block arrives in: hcl2json's `{type: [body, ...]}`,
   * JSON's `{type: body}`, and JSON's `[{type: body}, ...]`. Index counts per type, in order.
   */
  private blocks(name: string, value: unknown): Block[] {
    if (value === undefined || value === null) return [];
    const unlabeled = (): never =>
      this.fail(name, `block must have a type label, e.g. ${name} "${({ storage: 'raft', seal: 'transit' } as Record<string, string>)[name] ?? 'tcp'}" { ... }`);
    const groups: Obj[] = [];
    if (Array.isArray(value)) {
      for (const item of value) {
        if (!isObj(item)) this.fail(name, 'must be a block');
        groups.push(item);
      }
    } else if (isObj(value)) {
      groups.push(value);
    } else {
      this.fail(name, 'must be a block');
    }
    const counts = new Map<string, number>();
    const out: Block[] = [];
    for (const group of groups) {
      for (const [type, bodies] of Object.entries(group)) {
        // Without a label, the keys we see are the block's own settings and the values
        // are scalars; with one, every value is a body or a list of bodies.
        const list = Array.isArray(bodies) ? bodies : [bodies];
        if (!list.every(isObj)) unlabeled();
        for (const body of list) {
          const index = counts.get(type) ?? 0;
          counts.set(type, index + 1);
          out.push({ type, body: body as Obj, path: `${name}.${type}[${index}]` });
        }
      }
    }
    return out;
  }

  private checkKeys(body: Obj, prefix: string, ours: Set<string>, vaults: Set<string>): void {
    for (const key of Object.keys(body)) {
      if (ours.has(key)) continue;
      if (vaults.has(key)) this.warn(`${prefix}.${key}`);
      else this.fail(`${prefix}.${key}`, 'unknown setting');
    }
  }

  // JSON null counts as "not set" throughout, which is what a generator emitting every key expects.

  private optionalString(obj: Obj, key: string, field: string, nonEmpty = false): string | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') this.fail(field, 'must be a string');
    if (nonEmpty && v.trim() === '') this.fail(field, 'must not be empty');
    return v;
  }

  private optionalBool(obj: Obj, key: string, field: string): boolean | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'boolean') return v;
    if (v === 1 || (typeof v === 'string' && TRUE_WORDS.has(v))) return true;
    if (v === 0 || (typeof v === 'string' && FALSE_WORDS.has(v))) return false;
    this.fail(field, 'must be a boolean (true/false, or "true"/"false"/"1"/"0")');
  }

  private optionalNonNegativeInt(obj: Obj, key: string, field: string): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < 0) this.fail(field, 'must be a non-negative integer');
    return n;
  }

  /** A duration as Vault writes one ("120s", "2m", or a number of seconds). */
  private optionalDurationSeconds(obj: Obj, key: string, field: string): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    const seconds = parseDurationSeconds(v);
    if (seconds === null) this.fail(field, 'must be a duration such as "120s" or "2m", or a number of seconds');
    return seconds;
  }

  /**
   * Vault lets these environment variables win over the file, which is what lets one config
   * file per role serve every node of that role (containers set the per-node values).
   */
  private envString(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v === '' ? undefined : v;
  }

  private envUrl(name: string): string | undefined {
    return this.envString(name) === undefined ? undefined : this.optionalUrl(this.env, name, name);
  }

  private optionalUrl(obj: Obj, key: string, field: string): string | undefined {
    const v = this.optionalString(obj, key, field, true);
    if (v === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      this.fail(field, 'must be an http:// or https:// URL');
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
      this.fail(field, 'must be an http:// or https:// URL');
    }
    return v;
  }
}

/** Returns why `file` cannot be read, or undefined when it can. */
async function unreadableFileProblem(file: string): Promise<string | undefined> {
  try {
    const handle = await fsp.open(file, 'r');
    try {
      if (!(await handle.stat()).isFile()) return `"${file}" is not a regular file`;
    } finally {
      await handle.close();
    }
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `file "${file}" does not exist`;
    if (code === 'EACCES' || code === 'EPERM') return `file "${file}" is not readable (permission denied)`;
    if (code === 'EISDIR') return `"${file}" is not a regular file`;
    return `file "${file}" cannot be read: ${code ?? (err as Error).message}`;
  }
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, kib: 1024, mb: 1024 ** 2, mib: 1024 ** 2, gb: 1024 ** 3, gib: 1024 ** 3, tb: 1024 ** 4, tib: 1024 ** 4 };

/** A size as Vault writes one: a number of bytes, or a number with a unit ("512mb", "1GiB"). */
export function parseByteSize(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!m) return null;
  const unit = SIZE_UNITS[(m[2] as string).toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

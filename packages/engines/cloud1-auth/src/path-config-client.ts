import { checkEndpointUrl, checkMaxRetries } from '@strongroom/cloud1-client';
import {
  BadRequestError, definePath, getJson, putJson, type FieldData, type LogicalStorage, type PathDefinition,
} from '@strongroom/core';
import type { Cloud1Context } from './context';
import { KEYS } from './storage-keys';

/** How the mount reaches the provider. The secret key is stored, never shown. */
export interface ClientConfig {
  maxRetries: number;
  accessKey: string;
  secretKey: string;
  endpoint: string;
  iamEndpoint: string;
  stsEndpoint: string;
  stsRegion: string;
  useStsRegionFromClient: boolean;
  iamServerIdHeaderValue: string;
  /** Lower-cased header names allowed in a login's signed request on top of the default set. */
  allowedStsHeaderValues: string[];
}

export const DEFAULT_CLIENT_CONFIG: ClientConfig = {
  maxRetries: -1, accessKey: '', secretKey: '', endpoint: '', iamEndpoint: '', stsEndpoint: '', stsRegion: '',
  useStsRegionFromClient: false, iamServerIdHeaderValue: '', allowedStsHeaderValues: [],
};

export async function readClientConfig(storage: LogicalStorage): Promise<ClientConfig> {
  const stored = await getJson<Partial<ClientConfig>>(storage, KEYS.clientConfig);
  return { ...DEFAULT_CLIENT_CONFIG, ...(stored ?? {}) };
}

export function writeClientConfig(storage: LogicalStorage, config: ClientConfig): Promise<void> {
  return putJson(storage, KEYS.clientConfig, config);
}


const FIELDS = {
  max_retries: { type: 'int', default: -1, description: 'retries for recoverable errors; -1 uses the client library default' },
  access_key: { type: 'string', default: '' },
  secret_key: { type: 'string', default: '' },
  endpoint: { type: 'string', default: '' },
  iam_endpoint: { type: 'string', default: '' },
  sts_endpoint: { type: 'string', default: '' },
  sts_region: { type: 'string', default: '' },
  use_sts_region_from_client: { type: 'bool', default: false },
  iam_server_id_header_value: { type: 'string', default: '' },
  allowed_sts_header_values: { type: 'comma-list', default: [] },
} as const;

/** Applies the given fields over `current` (a write keeps what it does not name, as Vault does). */
function applyFields(current: ClientConfig, f: FieldData): ClientConfig {
  const next = { ...current };
  if (f.has('max_retries')) {
    next.maxRetries = checkMaxRetries(f.int('max_retries'));
  }
  if (f.has('access_key')) next.accessKey = f.string('access_key');
  if (f.has('secret_key')) next.secretKey = f.string('secret_key');
  if (f.has('endpoint')) next.endpoint = checkEndpointUrl('endpoint', f.string('endpoint'));
  if (f.has('iam_endpoint')) next.iamEndpoint = checkEndpointUrl('iam_endpoint', f.string('iam_endpoint'));
  if (f.has('sts_endpoint')) next.stsEndpoint = checkEndpointUrl('sts_endpoint', f.string('sts_endpoint'));
  if (f.has('sts_region')) next.stsRegion = f.string('sts_region');
  if (f.has('use_sts_region_from_client')) next.useStsRegionFromClient = f.bool('use_sts_region_from_client');
  if (f.has('iam_server_id_header_value')) next.iamServerIdHeaderValue = f.string('iam_server_id_header_value');
  if (f.has('allowed_sts_header_values')) next.allowedStsHeaderValues = f.list('allowed_sts_header_values').map((h) => h.toLowerCase());
  // A key without its secret (or the reverse) could never sign anything.
  if ((next.accessKey === '') !== (next.secretKey === '')) {
    throw new BadRequestError('invalid value for "secret_key": "access_key" and "secret_key" must be set together');
  }
  if (next.stsRegion !== '' && next.stsEndpoint === '') {
    throw new BadRequestError('invalid value for "sts_region": only to be set together with "sts_endpoint", naming that endpoint\'s region');
  }
  return next;
}

/** The client configuration as read answers it: everything but the secret key. */
export function clientConfigView(config: ClientConfig): Record<string, unknown> {
  return {
    max_retries: config.maxRetries,
    access_key: config.accessKey,
    endpoint: config.endpoint,
    iam_endpoint: config.iamEndpoint,
    sts_endpoint: config.stsEndpoint,
    sts_region: config.stsRegion,
    use_sts_region_from_client: config.useStsRegionFromClient,
    iam_server_id_header_value: config.iamServerIdHeaderValue,
    allowed_sts_header_values: config.allowedStsHeaderValues,
  };
}

export function configClientPaths(_ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/client',
      fields: FIELDS,
      existenceCheck: async (req) => (await req.storage.get(KEYS.clientConfig)) !== null,
      operations: {
        read: async (req) => {
          const stored = await getJson<Partial<ClientConfig>>(req.storage, KEYS.clientConfig);
          return stored ? { data: clientConfigView({ ...DEFAULT_CLIENT_CONFIG, ...stored }) } : null;
        },
        create: async (req, f) => {
          await writeClientConfig(req.storage, applyFields(await readClientConfig(req.storage), f));
          return null;
        },
        delete: async (req) => {
          await req.storage.delete(KEYS.clientConfig);
          return null;
        },
      },
      help: 'How the auth method reaches the provider: credentials, endpoints, and the IAM login server ID.',
    }),
  ];
}

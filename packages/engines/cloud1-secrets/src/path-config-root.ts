import { checkEndpointUrl, checkMaxRetries } from '@strongroom/cloud1-client';
import {
  BadRequestError, definePath, getJson, putJson, type FieldData, type LogicalStorage, type PathDefinition,
} from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { KEYS } from './storage-keys';
import { checkUsernameTemplate, DEFAULT_USERNAME_TEMPLATE } from './username-template';

/** How the mount reaches the provider. The secret key is stored, never shown. */
export interface RootConfig {
  maxRetries: number;
  accessKey: string;
  secretKey: string;
  /** '' means: from the environment (see `effectiveRegion`). */
  region: string;
  iamEndpoint: string;
  stsEndpoint: string;
  /** '' means the default template. */
  usernameTemplate: string;
}

export const DEFAULT_ROOT_CONFIG: RootConfig = {
  maxRetries: -1, accessKey: '', secretKey: '', region: '', iamEndpoint: '', stsEndpoint: '', usernameTemplate: '',
};

/**
 * The configuration provider calls use. Without config/root the engine still works, with
 * credentials and region from the environment and the provider's own endpoints.
 */
export async function readRootConfig(storage: LogicalStorage): Promise<RootConfig> {
  const stored = await getJson<Partial<RootConfig>>(storage, KEYS.rootConfig);
  return { ...DEFAULT_ROOT_CONFIG, ...(stored ?? {}) };
}

export function writeRootConfig(storage: LogicalStorage, config: RootConfig): Promise<void> {
  return putJson(storage, KEYS.rootConfig, config);
}


const FIELDS = {
  max_retries: { type: 'int', default: -1, description: 'retries of failed provider calls; -1 uses the client library default' },
  access_key: { type: 'string', default: '', description: 'access key ID' },
  secret_key: { type: 'string', default: '', description: 'secret access key; never shown' },
  region: { type: 'string', default: '', description: 'when unset: CLOUD1_REGION, then CLOUD1_DEFAULT_REGION, then us-east-1' },
  iam_endpoint: { type: 'string', default: '' },
  sts_endpoint: { type: 'string', default: '' },
  username_template: { type: 'string', default: '', description: 'template of generated user names; sees .Type, .DisplayName, .PolicyName' },
} as const;

/**
 * A write replaces the whole configuration (the spec: configuring overwrites existing
 * credentials); the credentials are not tried here.
 */
function configFrom(f: FieldData, ctx: Cloud1SecretsContext): RootConfig {
  const maxRetries = checkMaxRetries(f.int('max_retries'));
  const accessKey = f.string('access_key').trim();
  const secretKey = f.string('secret_key');
  // A key without its secret (or the reverse) could never sign anything.
  if (accessKey !== '' && secretKey === '') {
    throw new BadRequestError('invalid value for "secret_key": required when "access_key" is set');
  }
  if (accessKey === '' && secretKey !== '') {
    throw new BadRequestError('invalid value for "access_key": required when "secret_key" is set');
  }
  const usernameTemplate = f.string('username_template');
  if (usernameTemplate !== '') checkUsernameTemplate(usernameTemplate, ctx.clock);
  return {
    maxRetries, accessKey, secretKey, region: f.string('region').trim(),
    iamEndpoint: checkEndpointUrl('iam_endpoint', f.string('iam_endpoint').trim()),
    stsEndpoint: checkEndpointUrl('sts_endpoint', f.string('sts_endpoint').trim()),
    usernameTemplate,
  };
}

/** The root configuration as read answers it: everything but the secret key. */
export function rootConfigView(config: RootConfig): Record<string, unknown> {
  return {
    max_retries: config.maxRetries,
    access_key: config.accessKey,
    region: config.region,
    iam_endpoint: config.iamEndpoint,
    sts_endpoint: config.stsEndpoint,
    username_template: config.usernameTemplate || DEFAULT_USERNAME_TEMPLATE,
  };
}

export function configRootPaths(ctx: Cloud1SecretsContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/root',
      fields: FIELDS,
      existenceCheck: async (req) => (await req.storage.get(KEYS.rootConfig)) !== null,
      operations: {
        read: async (req) => {
          const stored = await getJson<Partial<RootConfig>>(req.storage, KEYS.rootConfig);
          return stored ? { data: rootConfigView({ ...DEFAULT_ROOT_CONFIG, ...stored }) } : null;
        },
        create: (req, f) => ctx.locks.run(KEYS.rootConfig, async () => {
          await writeRootConfig(req.storage, configFrom(f, ctx));
          return null;
        }),
      },
      help: 'The credentials, region, endpoints and username template the engine uses toward the provider.',
    }),
  ];
}

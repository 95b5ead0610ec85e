import type * as CredentialProviders from '@aws-sdk/credential-providers';
import { BadRequestError } from '@strongroom/core';

export interface Cloud1Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export type CredentialProvider = () => Promise<Cloud1Credentials>;

/**
 * Credentials for provider calls, first found wins: the static keys of the mount's config; the
 * CLOUD1_ACCESS_KEY/CLOUD1_SECRET_KEY (and CLOUD1_SESSION_TOKEN) environment variables; the
 * shared credentials files; then the container's or the instance's role credentials from their
 * metadata endpoints. `configPath` names where static keys go, for the error when none is found.
 */
export function credentialChain(keys: { accessKey: string; secretKey: string }, env: NodeJS.ProcessEnv, configPath: string): CredentialProvider {
  return async () => {
    if (keys.accessKey !== '' && keys.secretKey !== '') {
      return { accessKeyId: keys.accessKey, secretAccessKey: keys.secretKey };
    }
    const accessKeyId = env['CLOUD1_ACCESS_KEY'];
    const secretAccessKey = env['CLOUD1_SECRET_KEY'];
    if (accessKeyId && secretAccessKey) {
      const sessionToken = env['CLOUD1_SESSION_TOKEN'];
      return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
    }
    // fromInstanceMetadata itself ignores AWS_EC2_METADATA_DISABLED (only the SDK's default
    // chain reads it), so it is honoured here: a deployment or test that sets it never asks the
    // link-local metadata address.
    const metadataDisabled = [env, process.env].some((e) => e['AWS_EC2_METADATA_DISABLED']?.toLowerCase() === 'true');
    // Loaded only when it comes to these sources, not when a server starts.
    const { fromContainerMetadata, fromIni, fromInstanceMetadata } = require('@aws-sdk/credential-providers') as typeof CredentialProviders;
    const sources = [fromIni(), fromContainerMetadata(), ...(metadataDisabled ? [] : [fromInstanceMetadata()])];
    for (const provider of sources) {
      try {
        const found = await provider();
        return {
          accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey,
          ...(found.sessionToken ? { sessionToken: found.sessionToken } : {}),
        };
      } catch {
        // Not configured here: try the next source.
      }
    }
    throw new BadRequestError(
      `no credentials for provider calls: set "access_key" and "secret_key" on ${configPath}, or CLOUD1_ACCESS_KEY and CLOUD1_SECRET_KEY, `
      + 'or a shared credentials file, or run with an instance or container role',
    );
  };
}

/** An endpoint setting: empty (the provider's own endpoint) or an http(s) URL. */
export function checkEndpointUrl(field: string, value: string): string {
  if (value === '') return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BadRequestError(`invalid value for "${field}": "${value}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new BadRequestError(`invalid value for "${field}": the URL must use http or https`);
  }
  return value;
}

/**
 * The most retries a mount may ask of provider calls. Each retry waits longer (the SDKs back off
 * up to 20 s), so a large count would hold a request, and the caller, for hours.
 */
export const MAX_PROVIDER_RETRIES = 10;

/** A `max_retries` setting: -1 (the client library's default) up to MAX_PROVIDER_RETRIES. */
export function checkMaxRetries(value: number): number {
  if (value < -1 || value > MAX_PROVIDER_RETRIES) {
    throw new BadRequestError(`invalid value for "max_retries": must be -1 (the client default) up to ${MAX_PROVIDER_RETRIES}`);
  }
  return value;
}

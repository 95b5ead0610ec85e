import type * as SecretsManager from '@aws-sdk/client-secrets-manager';
import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { DestinationError, MISSING, statusOf, type DestinationClient } from './destination-client';

// The SDK is loaded when a destination of this type is first used, not when a server starts.
const sdk = (): typeof SecretsManager => require('@aws-sdk/client-secrets-manager') as typeof SecretsManager;

/** The tag that tells a reader of the cloud secret who writes it. */
export const MANAGED_TAG = 'strongroom-managed';

interface AwsError {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

function failure(err: unknown): DestinationError {
  const e = err as AwsError;
  return new DestinationError(statusOf(e.$metadata?.httpStatusCode), `cloud1-sm: ${e.name ?? 'Error'}: ${e.message ?? String(err)}`);
}

/**
 * Secrets Manager through the vendor's SDK. The endpoint is an operator setting (the SDK's own
 * endpoint variables, read at start); credentials are the destination's, or the SDK's chain.
 */
export function cloud1SmClient(d: Destination, settings: SyncSettings): DestinationClient {
  const c = d.connection as { access_key_id?: string; secret_access_key?: string; region?: string };
  const { CreateSecretCommand, DeleteSecretCommand, GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } = sdk();
  const config: SecretsManager.SecretsManagerClientConfig = {
    region: c.region || settings.cloud1Region || 'us-east-1',
    // The queue retries with its own backoff; the SDK's retries would multiply the attempts.
    maxAttempts: 1,
    ...(settings.cloud1SmEndpoint ? { endpoint: settings.cloud1SmEndpoint } : {}),
    ...(c.access_key_id && c.secret_access_key ? { credentials: { accessKeyId: c.access_key_id, secretAccessKey: c.secret_access_key } } : {}),
  };
  const sm = new SecretsManagerClient(config);
  const tags = [...Object.entries(d.custom_tags).map(([Key, Value]) => ({ Key, Value })), { Key: MANAGED_TAG, Value: 'true' }];
  const putValue = async (name: string, value: string, token: string) => {
    await sm.send(new PutSecretValueCommand({ SecretId: name, SecretString: value, ClientRequestToken: token }));
  };
  return {
    async put(name, value, token) {
      try {
        await putValue(name, value, token);
        return;
      } catch (err) {
        if ((err as AwsError).name !== 'ResourceNotFoundException') throw failure(err);
      }
      try {
        await sm.send(new CreateSecretCommand({ Name: name, SecretString: value, ClientRequestToken: token, Tags: tags }));
      } catch (err) {
        // Created meanwhile (an earlier attempt that timed out after landing): write the value to it.
        if ((err as AwsError).name !== 'ResourceExistsException') throw failure(err);
        try {
          await putValue(name, value, token);
        } catch (again) {
          throw failure(again);
        }
      }
    },
    async read(name) {
      try {
        const got = await sm.send(new GetSecretValueCommand({ SecretId: name }));
        return { exists: true, value: got.SecretString ?? null };
      } catch (err) {
        // Gone, or scheduled for deletion (a put is refused there too: the status will say so).
        const e = err as AwsError;
        if (e.name === 'ResourceNotFoundException' || (e.name === 'InvalidRequestException' && /deletion/i.test(e.message ?? ''))) return MISSING;
        throw failure(err);
      }
    },
    async remove(name) {
      try {
        await sm.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
      } catch (err) {
        if ((err as AwsError).name !== 'ResourceNotFoundException') throw failure(err);
      }
    },
  };
}

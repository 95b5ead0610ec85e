import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import type * as AzureIdentity from '@azure/identity';
import type * as KeyVault from '@azure/keyvault-secrets';
import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { MANAGED_TAG } from './cloud1-sm';
import { DestinationError, MISSING, statusOf, type DestinationClient } from './destination-client';

// The SDKs are loaded when a destination of this type is first used, not when a server starts.
const identity = (): typeof AzureIdentity => require('@azure/identity') as typeof AzureIdentity;
const keyVault = (): typeof KeyVault => require('@azure/keyvault-secrets') as typeof KeyVault;

/** The token endpoint of a `cloud` a destination names: the public cloud's for one it does not. */
function authority(cloud: string | undefined): string {
  const hosts = identity().AzureAuthorityHosts;
  if (cloud === 'china') return hosts.AzureChina;
  if (cloud === 'usgovernment') return hosts.AzureGovernment;
  return hosts.AzurePublicCloud;
}

/** How long a soft delete may take to be reported done before the attempt fails (the queue retries). */
const DELETE_WAIT_MS = 60_000;

interface AzureError {
  name?: string;
  code?: string;
  statusCode?: number;
  message?: string;
}

/** The identity library's refusals carry no status when they come through its token cache: the credential is the caller's. */
const CREDENTIAL_ERRORS = new Set(['AuthenticationError', 'AuthenticationRequiredError', 'CredentialUnavailableError']);

function failure(err: unknown): DestinationError {
  const e = err as AzureError;
  const status = e.statusCode === undefined && CREDENTIAL_ERRORS.has(e.name ?? '') ? 'CLIENT_SIDE_ERROR' : statusOf(e.statusCode);
  return new DestinationError(status, `cloud2-kv: ${e.code ?? e.name ?? 'Error'}: ${e.message ?? String(err)}`);
}

const isNotFound = (err: unknown) => (err as AzureError).statusCode === 404;

/** Makes the SDK's HTTPS requests trust the operator's extra certificate authorities as well as the system's. */
function trustPolicies(extra: string | undefined): NonNullable<KeyVault.SecretClientOptions['additionalPolicies']> {
  if (!extra) return [];
  const agent = new Agent({ ca: [...rootCertificates, extra] });
  return [{ policy: { name: 'strongroom-extra-ca', sendRequest: (req, next) => next(Object.assign(req, { agent })) }, position: 'perCall' }];
}

/**
 * A key vault's secrets through the vendor's SDK and its client-secret credential. Deleting in a
 * key vault is a soft delete that keeps the name taken, so a removal purges too: a secret synced
 * again later (a KV undelete, a new association) can be created under the same name.
 */
export function cloud2KvClient(d: Destination, settings: SyncSettings): DestinationClient {
  const c = d.connection as { key_vault_uri: string; client_id: string; client_secret: string; tenant_id: string; cloud?: string };
  const policies = trustPolicies(settings.extraCaCertificates);
  const vault = new URL(c.key_vault_uri).origin;
  // Only an origin the operator listed can be a vault outside the cloud's domain (an emulator, a private endpoint).
  const operatorVault = settings.cloud2KeyVaultOrigins.includes(vault);
  const credential = new (identity().ClientSecretCredential)(c.tenant_id, c.client_id, c.client_secret, {
    authorityHost: settings.cloud2AuthorityHost ?? authority(c.cloud),
    // Instance discovery asks the public cloud which authorities it knows; an operator's authority is not one of them.
    ...(settings.cloud2AuthorityHost ? { disableInstanceDiscovery: true } : {}),
    additionalPolicies: policies,
  });
  const client = new (keyVault().SecretClient)(vault, credential, {
    // The challenge names the vault resource of the public clouds, whose domain an operator's origin does not share.
    ...(operatorVault ? { disableChallengeResourceVerification: true } : {}),
    // The queue retries with its own backoff.
    retryOptions: { maxRetries: 0 },
    additionalPolicies: policies,
  });
  const tags = { ...d.custom_tags, [MANAGED_TAG]: 'true' };

  async function purge(name: string): Promise<void> {
    try {
      await client.purgeDeletedSecret(name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async function remove(name: string): Promise<void> {
    try {
      const poller = await client.beginDeleteSecret(name, { intervalInMs: 250, abortSignal: AbortSignal.timeout(DELETE_WAIT_MS) });
      await poller.pollUntilDone();
    } catch (err) {
      // Not there: gone already, or deleted by an attempt that stopped before purging it.
      if (!isNotFound(err)) throw err;
    }
    await purge(name);
  }

  return {
    async put(name, value) {
      try {
        // A key vault has no request token: an attempt repeated after one that landed writes nothing new.
        // An application that may not read (403) just writes.
        const current = await client.getSecret(name).catch((err: unknown) => (isNotFound(err) || (err as AzureError).statusCode === 403 ? null : Promise.reject(err)));
        if (current?.value === value) return;
        try {
          await client.setSecret(name, value, { tags });
        } catch (err) {
          if ((err as AzureError).statusCode !== 409) throw err;
          // Soft-deleted (an earlier removal that stopped before purging, or one out of band): free the name.
          await purge(name);
          await client.setSecret(name, value, { tags });
        }
      } catch (err) {
        throw failure(err);
      }
    },
    async read(name) {
      try {
        const current = await client.getSecret(name);
        return { exists: true, value: current.value ?? null };
      } catch (err) {
        if (isNotFound(err)) return MISSING;
        throw failure(err);
      }
    },
    async remove(name) {
      try {
        await remove(name);
      } catch (err) {
        throw failure(err);
      }
    },
  };
}

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cloud2KeyVaultEmulator, Cloud3SecretManagerEmulator, RepohostEmulator } from '@strongroom/emulators';

/** The cloud2-kv, cloud3-sm and repohost emulators that the sync tests over HTTP drive. */
export interface CloudEmulators {
  kv: Cloud2KeyVaultEmulator;
  sm: Cloud3SecretManagerEmulator;
  repohost: RepohostEmulator;
  close(): Promise<void>;
}

/**
 * Starts the emulators and points the sync clients at them through operator settings (`set`);
 * the settings are read when a server starts, so start the server afterwards.
 */
export async function startCloudEmulators(set: (name: string, value: string) => void): Promise<CloudEmulators> {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-sync-ca-'));
  const kv = await Cloud2KeyVaultEmulator.start();
  // Every call must carry a valid credential, so a wrong key is seen to fail.
  const sm = await Cloud3SecretManagerEmulator.start({ requireAuth: true });
  const repohost = await RepohostEmulator.start();
  // The key vault emulator speaks TLS with its own authority, which the client must trust.
  writeFileSync(join(dir, 'ca.pem'), kv.caCertificatePem as string);
  set('STRONGROOM_CLOUD2_KV_ORIGINS', kv.url);
  set('AZURE_AUTHORITY_HOST', kv.url);
  set('STRONGROOM_SYNC_CA_FILE', join(dir, 'ca.pem'));
  set('STRONGROOM_CLOUD3_SM_ENDPOINT', sm.endpoint);
  set('METADATA_SERVER_DETECTION', 'none');
  set('STRONGROOM_REPOHOST_API_URL', repohost.url);
  return {
    kv, sm, repohost,
    async close() {
      await kv.close();
      await sm.close();
      await repohost.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

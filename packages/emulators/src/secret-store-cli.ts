/**
 * The command-line start of the secret-store emulators (cloud2-kv, cloud3-sm,
 * deployhost-project): each gets a generated credential, printed with the endpoints to use.
 */
import { Cloud2KeyVaultEmulator } from './cloud2-kv/emulator';
import { Cloud3SecretManagerEmulator } from './cloud3-sm/emulator';
import { DeployhostProjectEmulator } from './deployhost-project/emulator';

export const SECRET_STORE_NAMES = ['cloud2-kv', 'cloud3-sm', 'deployhost-project'];

export const SECRET_STORE_USAGE =
  '       strongroom-emulator cloud2-kv --listen HOST:PORT\n' +
  '       strongroom-emulator cloud3-sm --listen HOST:PORT\n' +
  '       strongroom-emulator deployhost-project --listen HOST:PORT\n';

interface Started {
  lines: string[];
  stop(): Promise<void>;
}

const starters: Record<string, (host: string, port: number) => Promise<Started>> = {
  'cloud2-kv': async (host, port) => {
    const emulator = await Cloud2KeyVaultEmulator.start({ host, port });
    const app = emulator.addClient();
    return {
      lines: [
        `  CLOUD2_KEY_VAULT_URI=${emulator.url}`,
        `  AZURE_AUTHORITY_HOST=${emulator.url}`,
        `  CLOUD2_TENANT_ID=${emulator.tenantId}`,
        `  CLOUD2_CLIENT_ID=${app.clientId}`,
        `  CLOUD2_CLIENT_SECRET=${app.clientSecret}`,
        `  admin: ${emulator.url}/_admin/secrets`,
        'certificate to trust (HTTPS):',
        emulator.caCertificatePem!.trim(),
      ],
      stop: () => emulator.close(),
    };
  },
  'cloud3-sm': async (host, port) => {
    const emulator = await Cloud3SecretManagerEmulator.start({ host, port });
    const account = emulator.createServiceAccount('demo-project');
    return {
      lines: [
        `  STRONGROOM_CLOUD3_SM_ENDPOINT=${emulator.endpoint}`,
        `  admin: ${emulator.adminUrl}/_admin/secrets`,
        `  CLOUD3_SM_TOKEN=${emulator.issueToken()}`,
        'service account credentials (project demo-project):',
        JSON.stringify(account),
      ],
      stop: () => emulator.close(),
    };
  },
  'deployhost-project': async (host, port) => {
    const emulator = await DeployhostProjectEmulator.start({ host, port });
    const { token } = emulator.createToken();
    const project = emulator.createProject({ name: 'demo' });
    return {
      lines: [
        `  serverURL: ${emulator.url}`,
        `  admin:     ${emulator.url}/_admin/projects`,
        `  DEPLOYHOST_TOKEN=${token}`,
        `  DEPLOYHOST_PROJECT_ID=${project.id}`,
      ],
      stop: () => emulator.close(),
    };
  },
};

/** Starts the named emulator on host:port and prints how to reach it; returns how to stop it. */
export async function startSecretStore(
  name: string,
  host: string,
  port: number,
  out: { write(text: string): unknown },
): Promise<{ stop(): Promise<void> }> {
  const started = await starters[name]!(host, port);
  out.write([`${name} emulator ready`, ...started.lines, ''].join('\n'));
  return { stop: started.stop };
}

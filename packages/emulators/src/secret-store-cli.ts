/**
 * The command-line start of the secret-store emulators (cloud2-kv, cloud3-sm,
 * deployhost-project): each gets a generated credential, printed with the endpoints to use.
 */
import { DeployhostProjectEmulator } from './deployhost-project/emulator';

export const SECRET_STORE_NAMES = ['deployhost-project'];

export const SECRET_STORE_USAGE = '       strongroom-emulator deployhost-project --listen HOST:PORT\n';

/** Starts the named emulator on host:port and prints how to reach it; returns how to stop it. */
export async function startSecretStore(
  name: string,
  host: string,
  port: number,
  out: { write(text: string): unknown },
): Promise<{ stop(): Promise<void> }> {
  const emulator = await DeployhostProjectEmulator.start({ host, port });
  const { token } = emulator.createToken();
  const project = emulator.createProject({ name: 'demo' });
  out.write(
    [
      `${name} emulator ready`,
      `  serverURL: ${emulator.url}`,
      `  admin:     ${emulator.url}/_admin/projects`,
      `  DEPLOYHOST_TOKEN=${token}`,
      `  DEPLOYHOST_PROJECT_ID=${project.id}`,
      '',
    ].join('\n'),
  );
  return { stop: () => emulator.close() };
}

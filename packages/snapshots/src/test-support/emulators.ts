import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';

/** An emulator in a child process of the test, ended by its own PID when the test is done. */
export interface RunningEmulator {
  url: string;
  stop(): Promise<void>;
}

const ROOT = join(__dirname, '..', '..', '..', '..');

function launch(args: string[], urlPattern: RegExp, env: NodeJS.ProcessEnv = {}): Promise<RunningEmulator> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const stop = (): Promise<void> => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.stdin?.end();
    child.kill('SIGTERM');
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`emulator did not start in 20 s: ${output}`));
    }, 20_000);
    const failed = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`emulator exited (${code}): ${output}`));
    };
    child.once('exit', failed);
    child.stderr?.on('data', (d: Buffer) => { output += d.toString(); });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      output += `${line}\n`;
      const m = urlPattern.exec(line);
      if (!m) return;
      clearTimeout(timer);
      child.off('exit', failed);
      resolve({ url: m[1] as string, stop });
    });
  });
}

/** The S3 emulator (fauxqs), on a loopback port of its choosing. */
export function startFauxqs(): Promise<RunningEmulator> {
  return launch([join(__dirname, 'start-fauxqs.mjs')], /^(http:\/\/127\.0\.0\.1:\d+)$/);
}

/** Azurite's blob service, in memory, on a loopback port of its choosing. */
export function startAzurite(): Promise<RunningEmulator> {
  return launch(
    [join(ROOT, 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js'), '--blobHost', '127.0.0.1', '--blobPort', '0',
      '--inMemoryPersistence', '--skipApiVersionCheck', '--disableTelemetry'],
    /successfully listens on (http:\/\/127\.0\.0\.1:\d+)/,
  );
}

/** Azurite's well-known development account. */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

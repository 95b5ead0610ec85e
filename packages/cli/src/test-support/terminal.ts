import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { BIN } from './cli-runner';

export interface OnTerminal {
  /** script(1) itself: what is written to its stdin reaches the command as typed keys. */
  proc: ChildProcessByStdio<Writable, Readable, Readable>;
  /** All the screen has shown so far. */
  screen(): string;
  exited: Promise<number | null>;
}

/**
 * Starts the built command on a pseudo-terminal made by script(1) (in Debian's bsdutils, an
 * essential package: always there). It is killed after 60 s, so that a command left waiting for
 * input cannot outlive its test.
 */
export function startOnTerminal(args: string[], env: Record<string, string>): OnTerminal {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  const proc = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  proc.stdout.on('data', (d: Buffer) => { screen += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { screen += d.toString(); });
  proc.stdin.on('error', () => {});
  const killer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  const exited = new Promise<number | null>((ok) => proc.once('close', (code) => {
    clearTimeout(killer);
    ok(code);
  }));
  return { proc, screen: () => screen, exited };
}

/** The command run to its end on a pseudo-terminal: its exit code and what the screen showed. */
export async function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; screen: string }> {
  const terminal = startOnTerminal(args, env);
  const code = await terminal.exited;
  return { code, screen: terminal.screen() };
}

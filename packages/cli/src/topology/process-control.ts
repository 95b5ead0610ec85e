import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StartSpec } from './state-file';

/** Starts a process that outlives its starter: its own process group, output appended to its log. */
export function spawnDetached(spec: StartSpec): number {
  mkdirSync(dirname(spec.log), { recursive: true });
  const log = openSync(spec.log, 'a');
  try {
    const [cmd, ...args] = spec.argv;
    if (cmd === undefined) throw new Error('empty argv');
    const child = spawn(cmd, args, { cwd: spec.cwd, env: { ...process.env, ...spec.env }, detached: true, stdio: ['ignore', log, log] });
    // A start that fails (no such program) leaves no pid, reported below; its later 'error' event must not end this process.
    child.once('error', () => undefined);
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** Whether the process runs; a zombie (dead, not yet reaped by its parent) does not. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // The state follows the command in parentheses, which may itself hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // No /proc here: the signal check is all there is.
  }
}

/**
 * Whether `pid` runs `argv`: a pid in an old state file may belong to another program by now,
 * which must never be signalled. Where /proc is missing, the pid is trusted.
 */
export function runsCommand(pid: number, argv: string[]): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return true;
  }
  const args = cmdline.split('\0').filter((a, i, all) => i < all.length - 1 || a !== '');
  // The program itself may be named by another path to the same binary.
  return args.length === argv.length && args.slice(1).every((a, i) => a === argv[i + 1]);
}

/** Whether `pid` is still the process `spec` started. */
export function isRunning(pid: number, spec: StartSpec): boolean {
  return isAlive(pid) && runsCommand(pid, spec.argv);
}

/** SIGTERM, then SIGKILL for whatever is still running after `graceMs`. */
export async function terminate(procs: { pid: number; spec: StartSpec }[], graceMs = 15_000): Promise<void> {
  const running = procs.filter((p) => isRunning(p.pid, p.spec));
  for (const p of running) signal(p.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && running.some((p) => isRunning(p.pid, p.spec))) await sleep(100);
  for (const p of running) if (isRunning(p.pid, p.spec)) signal(p.pid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (Date.now() < killDeadline && running.some((p) => isRunning(p.pid, p.spec))) await sleep(50);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What a script printed and how it ended. */
export interface ScriptRun { code: number | null; out: string; err: string }

/**
 * Runs a Node script of the project as an operator would (spawned, its output captured), killed
 * after `timeoutMs`. `onStderr` sees the progress as it comes, for tests that act mid-run.
 */
export function runScript(
  script: string, args: string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv; cwd?: string; onStderr?: (soFar: string) => void },
): Promise<ScriptRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env, ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      options.onStderr?.(err);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

/** Every pid the topology state in `dir` names (a partial state file too). */
export function statePids(dir: string): number[] {
  const state = JSON.parse(readFileSync(join(dir, 'topology-state.json'), 'utf8'));
  return Object.values(state.clusters as Record<string, { nodes: { pid: number }[] }>).flatMap((c) => c.nodes.map((n) => n.pid)).filter((p) => p > 0);
}

/** SIGKILLs whatever the state still names: the processes a test's drill started are the test's to end. */
export function killStatePids(dir: string): void {
  let pids: number[];
  try {
    pids = statePids(dir);
  } catch {
    return; // No state file: nothing was started from one.
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

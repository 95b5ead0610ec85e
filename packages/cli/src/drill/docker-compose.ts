import { execFile } from 'node:child_process';

/**
 * `docker compose` on one project, run with an argv (never through a shell, so no service
 * name or path is ever parsed as shell). The binary is `$DOCKER`, else `docker` from PATH.
 */

export interface ComposeProject {
  /** Given as `-f`, so the project's directory and default name are the file's, as for `docker compose up` run beside it. */
  file: string;
  projectName?: string;
}

/** Generous: a loaded host may take a while to stop or start a container, but never forever. */
const COMMAND_TIMEOUT_MS = 180_000;

function composeArgv(project: ComposeProject, args: string[]): string[] {
  return ['compose', '-f', project.file, ...(project.projectName ? ['-p', project.projectName] : []), ...args];
}

/** Runs `docker compose ... args`; a failure rejects with the command and its stderr's first line. */
export function dockerCompose(project: ComposeProject, args: string[]): Promise<void> {
  const docker = process.env['DOCKER'] || 'docker';
  const argv = composeArgv(project, args);
  const what = `docker compose ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    execFile(docker, argv, { timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, _stdout, stderr) => {
      if (!err) {
        resolve();
        return;
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        reject(new Error(`${what}: cannot run "${docker}" (set DOCKER or put docker on PATH)`));
        return;
      }
      const first = String(stderr).split('\n').map((l) => l.trim()).find((l) => l !== '');
      const why = err.killed ? `no answer in ${COMMAND_TIMEOUT_MS / 1000} s` : first ?? `exit ${typeof code === 'number' ? code : err.message}`;
      reject(new Error(`${what} failed: ${why}`));
    });
  });
}

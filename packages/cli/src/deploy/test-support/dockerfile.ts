import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../../../../..');

/** deploy/Dockerfile's instructions, continuation lines joined, comments dropped. */
export function dockerfileInstructions(): string[] {
  const out: string[] = [];
  let pending = '';
  for (const raw of readFileSync(resolve(ROOT, 'deploy/Dockerfile'), 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    pending += (pending ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (!line.endsWith('\\')) {
      out.push(pending);
      pending = '';
    }
  }
  return out;
}

/** The instructions of each stage, by its `AS` name, the FROM line first. */
export function dockerfileStages(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const ins of dockerfileInstructions()) {
    const from = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(ins);
    if (from) {
      current = [ins];
      map.set(from[1] as string, current);
    } else current?.push(ins);
  }
  return map;
}

/** The build stage's shell step that lays out the runtime's tree in /out. */
export function runtimeTreeStep(): string {
  const step = dockerfileStages().get('build')?.find((i) => i.startsWith('RUN ') && i.includes('/out'));
  if (!step) throw new Error('deploy/Dockerfile: no build step writes /out');
  return step.slice('RUN '.length);
}

/**
 * deploy/Dockerfile, read as text since no Docker engine runs here: `npm ci` in its build stage
 * fails unless every workspace the lockfile names has its manifest copied first, so a new
 * workspace must be added there too; and the runtime stage keeps what the deployment relies on.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../../..');
const DOCKERFILE = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');

/** Instructions with their continuation lines joined, comments dropped. */
function instructions(text: string): string[] {
  const out: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') && pending === '') continue;
    if (line === '') continue;
    pending += (pending ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (!line.endsWith('\\')) {
      out.push(pending);
      pending = '';
    }
  }
  return out;
}

/** The instructions of each stage, by its `AS` name. */
function stages(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const ins of instructions(DOCKERFILE)) {
    const from = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(ins);
    if (from) {
      current = [ins];
      map.set(from[1] as string, current);
    } else current?.push(ins);
  }
  return map;
}

function workspaceDirs(): string[] {
  return ['packages', 'packages/engines'].flatMap((parent) =>
    readdirSync(join(ROOT, parent))
      .map((d) => `${parent}/${d}`)
      .filter((dir) => statSync(join(ROOT, dir, 'package.json'), { throwIfNoEntry: false })?.isFile()));
}

it('copies every workspace manifest before the build stage installs', () => {
  const build = stages().get('build') ?? [];
  const install = build.findIndex((i) => i.startsWith('RUN npm ci'));
  expect(install).toBeGreaterThan(0);
  const copied = build.slice(0, install).filter((i) => i.startsWith('COPY ')).map((i) => i.split(/\s+/)[1]);
  for (const dir of workspaceDirs()) expect(copied).toContain(`${dir}/package.json`);
  expect(copied).toEqual(expect.arrayContaining(['package.json']));
});

it('has the runtime stage last (the default target) on Node 24, installing production dependencies only', () => {
  const all = [...stages().keys()];
  expect(all.at(-1)).toBe('runtime');
  expect(all).toEqual(expect.arrayContaining(['build', 'emulators', 'runtime']));
  expect(instructions(DOCKERFILE).find((i) => i.startsWith('ARG NODE_IMAGE='))).toMatch(/^ARG NODE_IMAGE=node:24[\w.-]*-slim$/);
  const runtime = stages().get('runtime') ?? [];
  expect(runtime.some((i) => /^RUN npm ci --omit=dev\b/.test(i))).toBe(true);
  // The server loads the .proto files from beside the packages.
  expect(runtime).toContain('COPY --from=build /src/proto/ proto/');
});

it('runs as a non-root user, stops on SIGTERM, checks its health and starts through the entrypoint', () => {
  const runtime = stages().get('runtime') ?? [];
  const user = runtime.filter((i) => i.startsWith('USER ')).at(-1);
  expect(user).toBe('USER strongroom');
  expect(runtime).toContain('STOPSIGNAL SIGTERM');
  expect(runtime.find((i) => i.startsWith('HEALTHCHECK '))).toContain('CMD ["node", "/opt/strongroom/deploy/healthcheck.js"]');
  expect(runtime).toContain('ENTRYPOINT ["/opt/strongroom/deploy/entrypoint.sh"]');
  expect(stages().get('emulators')?.filter((i) => i.startsWith('USER ')).at(-1)).toBe('USER strongroom');
});

it('gives every container of the topology the same uid, so nodes can read the seal tokens bootstrap writes', () => {
  const uids = instructions(DOCKERFILE).flatMap((i) => [...i.matchAll(/useradd [^&]*--uid (\d+)/g)].map((m) => m[1]));
  expect(uids).toHaveLength(2);
  expect(new Set(uids).size).toBe(1);
});

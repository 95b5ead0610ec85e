/**
 * deploy/Dockerfile, read as text since no Docker engine runs here: `npm ci` in its build stage
 * fails unless every workspace the lockfile names has its manifest copied first, so a new
 * workspace must be added there too; and the runtime stage keeps what the deployment relies on.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dockerfileInstructions as instructions, dockerfileStages as stages, ROOT } from './test-support/dockerfile';

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
  expect(instructions().find((i) => i.startsWith('ARG NODE_IMAGE='))).toMatch(/^ARG NODE_IMAGE=node:24[\w.-]*-slim$/);
  const runtime = stages().get('runtime') ?? [];
  expect(runtime.some((i) => /^RUN npm ci --omit=dev\b/.test(i))).toBe(true);
  expect(runtime).toContain('COPY --from=build /out/ ./');
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
  const uids = instructions().flatMap((i) => [...i.matchAll(/useradd [^&]*--uid (\d+)/g)].map((m) => m[1]));
  expect(uids).toHaveLength(2);
  expect(new Set(uids).size).toBe(1);
});

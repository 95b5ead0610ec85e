/**
 * The layering of the packages, read from the sources (tests included, since a test that reaches
 * up a layer ties the lower package to the upper one just the same). A layered package (base,
 * raft, core, the engines and their cloud client, cluster, sync) may import node's builtins, the npm
 * packages its package.json names, and only the packages of ours its layer allows; its relative
 * imports never leave it. The packages at the top (api, cli, snapshots, the emulators) may use
 * any of ours.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const OURS = '@strongroom/';

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

interface Pkg {
  name: string;
  dir: string;
  manifest: Manifest;
}

/** Which of our packages a layered package may import, whatever its package.json says; null for the top. */
function allowedOurs(name: string): ((dep: string) => boolean) | null {
  const only = (...names: string[]) => (dep: string) => names.includes(dep);
  if (name === '@strongroom/base') return only();
  if (name === '@strongroom/raft' || name === '@strongroom/core') return only('@strongroom/base');
  if (name === '@strongroom/cloud1-client') return only('@strongroom/base', '@strongroom/core');
  if (name.startsWith('@strongroom/engine-')) {
    // The cloud client is the engines' own library; the emulators stand in for the provider in their tests.
    return only('@strongroom/base', '@strongroom/core', '@strongroom/cloud1-client', '@strongroom/emulators');
  }
  // Between the core and the Raft node, under the API: never the API, the CLI, an engine or a feature.
  if (name === '@strongroom/cluster') return only('@strongroom/base', '@strongroom/core', '@strongroom/raft');
  // A feature on the core: it learns of commits through the core's interfaces, never from the cluster or the API.
  if (name === '@strongroom/sync') return only('@strongroom/base', '@strongroom/core');
  return null;
}

function packages(): Pkg[] {
  const dirs = ['packages', join('packages', 'engines')].flatMap((parent) =>
    readdirSync(join(ROOT, parent)).map((d) => join(ROOT, parent, d)));
  return dirs
    .filter((dir) => statSync(join(dir, 'package.json'), { throwIfNoEntry: false })?.isFile())
    .map((dir) => {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
      return { name: manifest.name, dir, manifest };
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.isFile() && e.name.endsWith('.ts') ? [path] : [];
  });
}

const isTestFile = (file: string) => /\.test\.ts$/.test(file) || file.split(sep).includes('test-support');

/** The module specifiers a source imports, re-exports, loads with import() or require(). */
function importsOf(text: string): string[] {
  // Doc comments may quote an import; only code counts.
  const code = text.split('\n').filter((line) => !/^\s*(\/\/|\/?\*)/.test(line)).join('\n');
  const found: string[] = [];
  const quoted = `(['"])([^'"\\n]+)\\1`;
  const patterns = [
    // A static import or re-export starts a statement; its braces hold neither quotes nor semicolons.
    new RegExp(`(?:^|;)\\s*(?:import|export)\\b[^;'"]*?\\bfrom\\s+${quoted}`, 'gm'),
    new RegExp(`(?:^|;)\\s*import\\s+${quoted}`, 'gm'),
    new RegExp(`\\b(?:import|require)\\(\\s*${quoted}\\s*\\)`, 'g'),
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) found.push(m[2] as string);
  return found;
}

/** The package an import names: `@scope/name` or `name`, without any subpath. */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return (spec.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

const BUILTINS = new Set(builtinModules);
const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
// The repository's test tooling (jest, node-vault, the storage emulators), never a package of ours.
const TOOLING = Object.keys(rootManifest.devDependencies ?? {}).filter((d) => !d.startsWith(OURS));

/** What is wrong with one import of `file` in `pkg`, or null if it is allowed. */
function judge(pkg: Pkg, file: string, spec: string): string | null {
  const where = relative(ROOT, file);
  if (spec.startsWith('.')) {
    const target = resolve(dirname(file), spec);
    return target.startsWith(pkg.dir + sep) ? null : `${where} imports '${spec}', outside ${pkg.name}: import it by its package name`;
  }
  if (spec.startsWith('node:')) return BUILTINS.has(spec.slice(5)) ? null : `${where} imports '${spec}', not a node builtin`;
  const dep = packageOf(spec);
  if (dep === pkg.name) return `${where} imports its own package '${spec}': use a relative import`;
  const declared = [
    ...Object.keys(pkg.manifest.dependencies ?? {}),
    ...(isTestFile(file) ? Object.keys(pkg.manifest.devDependencies ?? {}) : []),
  ];
  if (dep.startsWith(OURS)) {
    const allowed = allowedOurs(pkg.name);
    if (allowed && !allowed(dep)) return `${where} imports '${spec}': ${pkg.name} may not depend on ${dep}`;
  }
  if (!declared.includes(dep)) {
    const kind = BUILTINS.has(dep) ? 'a node builtin without the node: prefix' : `not in ${pkg.name}'s package.json`;
    return `${where} imports '${spec}', ${kind}`;
  }
  return null;
}

describe('the layering of the packages', () => {
  const all = packages();

  it('finds every package and its sources', () => {
    const names = all.map((p) => p.name);
    for (const name of ['@strongroom/base', '@strongroom/raft', '@strongroom/core', '@strongroom/cluster', '@strongroom/engine-kv', '@strongroom/api']) {
      expect(names).toContain(name);
    }
    for (const pkg of all) expect(sourceFiles(join(pkg.dir, 'src')).length).toBeGreaterThan(0);
  });

  const layered = all.filter((p) => allowedOurs(p.name) !== null);
  it.each(layered.map((p) => [p.name, p] as const))('%s imports only what its layer allows', (_name, pkg) => {
    const problems: string[] = [];
    let read = 0;
    for (const file of sourceFiles(join(pkg.dir, 'src'))) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        read++;
        const problem = judge(pkg, file, spec);
        if (problem) problems.push(problem);
      }
    }
    // Every package imports something; none read would mean the reader went blind, not a clean package.
    expect(read).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('names in each package.json only the packages of ours its layer allows', () => {
    const problems: string[] = [];
    for (const pkg of all) {
      const allowed = allowedOurs(pkg.name);
      if (!allowed) continue;
      const deps = [...Object.keys(pkg.manifest.dependencies ?? {}), ...Object.keys(pkg.manifest.devDependencies ?? {})];
      for (const dep of deps) if (dep.startsWith(OURS) && !allowed(dep)) problems.push(`${pkg.name}'s package.json depends on ${dep}`);
    }
    expect(problems).toEqual([]);
  });

  it('reads every kind of import, and no prose', () => {
    const text = [
      "import { a } from 'one';", 'import type {', '  B,', "} from 'two/sub';", 'export * from "@s/three";', "import 'four';",
      "const d = await import('five'); const e = require(\"six\");", " * import { f } from 'in-a-comment';",
      'throw new Error(`the key unwrapped from "ciphertext"`);',
    ].join('\n');
    expect(importsOf(text).sort()).toEqual(['@s/three', 'five', 'four', 'one', 'six', 'two/sub']);
  });
});

import { join } from 'node:path';

// The script `npm test` runs first; plain JS at the repository's root, so required, not imported.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { DEBIAN_PACKAGES, ensureDebianPackages } = require(join(__dirname, '../../../scripts/test-deps.js')) as {
  DEBIAN_PACKAGES: DebianPackage[];
  ensureDebianPackages(packages: DebianPackage[], system: FakeSystem): number;
};

interface DebianPackage { name: string; check: [string, string[]]; neededBy: string }

interface FakeSystem {
  isInstalled(pkg: DebianPackage): boolean;
  aptGet(): string | undefined;
  isRoot(): boolean;
  run(file: string, args: string[]): boolean;
  log(line: string): void;
  fail(line: string): void;
}

const pkg = (name: string): DebianPackage => ({ name, check: ['/bin/true', []], neededBy: `${name}.test.ts` });

/** A machine where `installed` are present, and apt-get installs what it is asked to when `aptWorks`. */
function fakeSystem(installed: string[], opts: { root?: boolean; apt?: boolean; aptWorks?: boolean } = {}) {
  const have = new Set(installed);
  const runs: string[][] = [];
  const out: string[] = [];
  const err: string[] = [];
  const system: FakeSystem = {
    isInstalled: (p) => have.has(p.name),
    aptGet: () => (opts.apt === false ? undefined : '/usr/bin/apt-get'),
    isRoot: () => opts.root ?? true,
    run: (file, args) => {
      runs.push([file, ...args]);
      if (args[0] === 'install' && opts.aptWorks !== false) for (const a of args.slice(1)) if (!a.startsWith('-')) have.add(a);
      return true;
    },
    log: (line) => out.push(line),
    fail: (line) => err.push(line),
  };
  return { system, runs, out, err };
}

describe('the script npm test runs first, for the Debian packages tests need', () => {
  it('lists python3-hvac, checked with the system python', () => {
    const hvac = DEBIAN_PACKAGES.find((p) => p.name === 'python3-hvac');
    expect(hvac?.check).toEqual(['/usr/bin/python3', ['-c', 'import hvac']]);
  });

  it('lists chromium for the browser tests, checked by running the path they launch', () => {
    const browser = DEBIAN_PACKAGES.find((p) => p.name === 'chromium');
    expect(browser?.check).toEqual(['/usr/bin/chromium', ['--version']]);
  });

  it('calls no apt when everything is there', () => {
    const { system, runs, out, err } = fakeSystem(['a', 'b']);
    expect(ensureDebianPackages([pkg('a'), pkg('b')], system)).toBe(0);
    expect(runs).toEqual([]);
    expect([...out, ...err]).toEqual([]);
  });

  it('as root, updates once and installs only what is missing, saying so', () => {
    const { system, runs, out } = fakeSystem(['a']);
    expect(ensureDebianPackages([pkg('a'), pkg('b'), pkg('c')], system)).toBe(0);
    expect(runs).toEqual([
      ['/usr/bin/apt-get', 'update'],
      ['/usr/bin/apt-get', 'install', '-y', '--no-install-recommends', 'b', 'c'],
    ]);
    expect(out.join('\n')).toMatch(/missing Debian packages: b \(for b\.test\.ts\), c/);
    expect(out.join('\n')).toMatch(/apt-get install -y --no-install-recommends b c/);
  });

  it('fails naming the package when not root, without calling apt', () => {
    const { system, runs, err } = fakeSystem([], { root: false });
    expect(ensureDebianPackages([pkg('python3-x')], system)).toBe(1);
    expect(runs).toEqual([]);
    expect(err.join('\n')).toMatch(/not running as root/);
    expect(err.join('\n')).toMatch(/apt-get install -y --no-install-recommends python3-x/);
  });

  it('fails naming the package when there is no apt-get', () => {
    const { system, runs, err } = fakeSystem([], { apt: false });
    expect(ensureDebianPackages([pkg('python3-x')], system)).toBe(1);
    expect(runs).toEqual([]);
    expect(err.join('\n')).toMatch(/apt-get was not found[^]*python3-x/);
  });

  it('fails when the package is still unusable after installing it', () => {
    const { system, err } = fakeSystem([], { aptWorks: false });
    expect(ensureDebianPackages([pkg('python3-x')], system)).toBe(1);
    expect(err.join('\n')).toMatch(/still not usable: python3-x/);
  });
});

#!/usr/bin/env node
// Makes sure the Debian packages some tests drive are installed, before `npm test` runs them.
// A test that needs a missing program must fail, not pass by skipping: so when we cannot install
// what is missing (not root, no apt-get) this exits non-zero and names the packages.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/**
 * Every Debian package a test needs, with the command that proves it is usable. The check runs
 * first and alone, so a machine that has everything never waits for apt.
 */
const DEBIAN_PACKAGES = [
  {
    name: 'python3-hvac',
    // The system python, since Debian's package installs for it and not for any other on PATH.
    check: ['/usr/bin/python3', ['-c', 'import hvac']],
    neededBy: 'packages/api/src/hvac.test.ts',
  },
  {
    name: 'chromium',
    // Debian's build, driven through playwright-core: a browser download is not what CI can fetch.
    check: ['/usr/bin/chromium', ['--version']],
    neededBy: 'packages/ui/e2e',
  },
  {
    name: 'docker-compose',
    // Compose's own parser validates docker-compose.yml; `config` needs no Docker engine.
    check: ['/usr/bin/docker-compose', ['version']],
    neededBy: 'packages/cli/src/deploy',
  },
  {
    name: 'systemd',
    // systemd-analyze verify checks deploy/strongroom.service as systemd would load it.
    check: ['/usr/bin/systemd-analyze', ['--version']],
    neededBy: 'packages/cli/src/deploy',
  },
];

function commandSucceeds([file, args]) {
  const r = spawnSync(file, args, { stdio: 'ignore' });
  return r.status === 0;
}

function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch { /* not here */ }
  }
  return undefined;
}

function runInherit(file, args) {
  const r = spawnSync(file, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return r.status === 0;
}

const realSystem = {
  isInstalled: (pkg) => commandSucceeds(pkg.check),
  aptGet: () => findOnPath('apt-get'),
  isRoot: () => typeof process.getuid === 'function' && process.getuid() === 0,
  run: runInherit,
  log: (line) => process.stdout.write(`${line}\n`),
  fail: (line) => process.stderr.write(`${line}\n`),
};

/**
 * Installs what is missing of `packages` when it can; returns the exit code: 0 when all are
 * usable afterwards, 1 (with a message naming them) otherwise.
 */
function ensureDebianPackages(packages = DEBIAN_PACKAGES, system = realSystem) {
  const missing = packages.filter((pkg) => !system.isInstalled(pkg));
  if (missing.length === 0) return 0;
  const names = missing.map((pkg) => pkg.name);
  const install = ['install', '-y', '--no-install-recommends', ...names];
  const describe = missing.map((pkg) => `${pkg.name} (for ${pkg.neededBy})`).join(', ');
  system.log(`test-deps: missing Debian packages: ${describe}`);

  const aptGet = system.aptGet();
  if (!aptGet || !system.isRoot()) {
    const why = aptGet ? 'not running as root' : 'apt-get was not found';
    system.fail(`test-deps: cannot install them (${why}). Install them and run the tests again:`);
    system.fail(`  sudo apt-get install -y --no-install-recommends ${names.join(' ')}`);
    return 1;
  }

  system.log(`test-deps: ${aptGet} update`);
  if (!system.run(aptGet, ['update'])) {
    system.fail('test-deps: apt-get update failed');
    return 1;
  }
  system.log(`test-deps: ${aptGet} ${install.join(' ')}`);
  if (!system.run(aptGet, install)) {
    system.fail(`test-deps: apt-get install failed for ${names.join(' ')}`);
    return 1;
  }
  const stillMissing = missing.filter((pkg) => !system.isInstalled(pkg)).map((pkg) => pkg.name);
  if (stillMissing.length > 0) {
    system.fail(`test-deps: installed, but still not usable: ${stillMissing.join(' ')}`);
    return 1;
  }
  system.log(`test-deps: installed ${names.join(' ')}`);
  return 0;
}

module.exports = { DEBIAN_PACKAGES, ensureDebianPackages };

if (require.main === module) process.exitCode = ensureDebianPackages();

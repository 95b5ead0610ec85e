/**
 * deploy/strongroom.service: systemd itself finds nothing to say about it (systemd-analyze
 * verify prints even the settings it ignores), and it keeps the hardening the production
 * guide promises.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../../..');
const UNIT = resolve(ROOT, 'deploy/strongroom.service');
// Debian's systemd package (scripts/test-deps.js installs it where it is missing).
const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';

/** Section -> key -> every value, in order, as systemd reads an INI-style unit (no continuations here). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1] as string, current);
      continue;
    }
    const at = line.indexOf('=');
    if (!current || at < 0) throw new Error(`not a setting: ${line}`);
    const key = line.slice(0, at).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(at + 1).trim()]);
  }
  return sections;
}

it('passes systemd-analyze verify without a warning', () => {
  const r = spawnSync(SYSTEMD_ANALYZE, ['verify', UNIT], { encoding: 'utf8', timeout: 60_000 });
  expect(r.error).toBeUndefined();
  expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({ status: 0, stderr: '', stdout: '' });
});

it('runs the server as its own user with the hardening the production guide names', () => {
  const service = parseUnit(readFileSync(UNIT, 'utf8')).get('Service');
  expect(service).toBeDefined();
  const one = (key: string) => service!.get(key)?.join('\n');
  expect(one('User')).toBe('strongroom');
  expect(one('ExecStart')).toBe('/usr/bin/node /opt/strongroom/packages/cli/bin/strongroom.js server -config=/etc/strongroom/strongroom.hcl');
  expect(one('KillSignal')).toBe('SIGTERM');
  expect(one('Restart')).toBe('on-failure');
  expect(one('NoNewPrivileges')).toBe('yes');
  expect(one('ProtectSystem')).toBe('strict');
  expect(one('ReadWritePaths')).toBe('/var/lib/strongroom');
  expect(one('ProtectHome')).toBe('yes');
  expect(one('PrivateTmp')).toBe('yes');
  expect(one('PrivateDevices')).toBe('yes');
  expect(one('CapabilityBoundingSet')).toBe('');
  expect(one('LimitNOFILE')).toBe('65536');
  // No secret in the unit, which every user may read.
  expect(service!.has('Environment')).toBe(false);
});

it('has no reload command, because the server does not reload on SIGHUP', () => {
  const service = parseUnit(readFileSync(UNIT, 'utf8')).get('Service');
  expect(service!.has('ExecReload')).toBe(false);
  // If the server learns to reload, the unit should learn ExecReload with it.
  expect(readFileSync(resolve(ROOT, 'packages/cli/src/commands/server.ts'), 'utf8')).not.toContain('SIGHUP');
});

it('says why there is no LimitMEMLOCK and what to do about swap', () => {
  const text = readFileSync(UNIT, 'utf8');
  expect(text).toMatch(/# No LimitMEMLOCK: Node cannot lock its heap/);
  expect(text).toMatch(/Disable swap .* or encrypt it/s);
});

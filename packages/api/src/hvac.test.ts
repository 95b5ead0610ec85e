import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

// hvac is Vault's Python client, written by people who never saw this code. Debian packages it
// for the system python only; `npm test` installs it first (scripts/test-deps.js).
const PYTHON = '/usr/bin/python3';
const SCRIPT = join(__dirname, 'test-support', 'hvac-client.py');

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs the hvac script without blocking the event loop, which the server in this process needs. */
function runPython(args: string[], env: Record<string, string>, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    execFile(PYTHON, args, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('a Vault client (hvac, Python) drives the server end to end', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    const probe = await runPython(['-c', 'import hvac'], {}, 60_000);
    if (probe.code !== 0) {
      throw new Error(`hvac is not importable by ${PYTHON}; npm test installs python3-hvac (as root), or run: apt-get install python3-hvac\n${probe.stderr}`);
    }
    t = await startTestServer();
    token = await initAndUnseal(t);
  });

  afterAll(async () => {
    await t?.stop();
  });

  it('reads seal and health, uses KV v2, policies, tokens, transit, wrapping and a namespace', async () => {
    // A busy machine runs python slowly; the script's own steps are a few dozen requests.
    const run = await runPython([SCRIPT], { VAULT_ADDR: t.url, VAULT_TOKEN: token, PYTHONDONTWRITEBYTECODE: '1' }, 120_000);
    if (run.code !== 0) throw new Error(`hvac script exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
    expect(run.stdout).not.toContain(token);

    const steps = new Map<string, any>();
    for (const line of run.stdout.split('\n').filter(Boolean)) {
      const parsed = JSON.parse(line) as { step: string };
      steps.set(parsed.step, parsed);
    }
    expect([...steps.keys()]).toEqual(['seal-and-health', 'kv-mount', 'kv-write-read', 'kv-metadata', 'kv-delete', 'policy', 'token', 'transit', 'wrapping', 'namespace', 'done']);

    expect(steps.get('seal-and-health')).toMatchObject({ sealed: false, t: 1, n: 1, health: false, head_status: 200 });
    expect(steps.get('kv-mount')).toMatchObject({ type: 'kv', version: '2', description: 'from hvac' });
    expect(steps.get('kv-write-read')).toMatchObject({
      versions: [1, 2, 3], data: { user: 'app', password: 'pw-2', port: '5432' }, v1_password: 'pw-1', keys: ['cache', 'db'],
    });
    expect(steps.get('kv-write-read').cas_conflict).toMatch(/check-and-set/);
    expect(steps.get('kv-metadata')).toMatchObject({ max_versions: 5, current_version: 3, versions: ['1', '2', '3'] });
    expect(steps.get('kv-delete')).toMatchObject({ undeleted: 3, v1_destroyed: true, v2_deleted: true, keys_after: ['cache'] });
    expect(steps.get('policy')).toMatchObject({ listed: true });
    expect(steps.get('token')).toMatchObject({ policies: ['default', 'hvac-app'], accessor_listed: true, revoked: true });
    expect(steps.get('token').renewed_ttl).toBeGreaterThan(3600);
    expect(steps.get('transit')).toMatchObject({ key_type: 'aes256-gcm96', ciphertext_prefix: 'vault:v1:', plaintext: 'card 4111' });
    expect(steps.get('wrapping')).toMatchObject({
      wrap_ttl: 120, creation_path: 'auth/token/create', unwrapped_policies: ['default', 'hvac-app'], read_data: { url: 'redis://cache' },
    });
    expect(steps.get('namespace')).toMatchObject({ namespaces: ['hvac-team/'], data: { region: 'eu' }, via_prefix: { region: 'eu' } });
  }, 180_000);
});

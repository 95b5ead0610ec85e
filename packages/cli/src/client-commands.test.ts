import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BIN, run, type RunOptions } from './test-support/cli-runner';
import { useDevServer } from './test-support/dev-server-fixture';

/** The shell lines of the README's first block of `strongroom` client examples. */
function readmeClientExamples(): string[] {
  const readme = readFileSync(resolve(__dirname, '../../../README.md'), 'utf8');
  const start = readme.indexOf('The `strongroom` command works from the checkout');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))?.[1] ?? '';
  return block.split('\n').map((l) => l.replace(/\s{2,}#.*$/, '').trim()).filter((l) => l.includes('npx strongroom'));
}

function sh(line: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const proc = spawn('sh', ['-c', line.replaceAll('npx strongroom', `'${process.execPath}' '${BIN}'`)], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  return new Promise((ok) => proc.on('close', (code) => ok({ code, out })));
}

/** The client commands against a real dev server, through the built binary. */
describe('the strongroom client commands', () => {
  const server = useDevServer();
  const cli = (args: string[], options: RunOptions = {}) => run(args, { ...options, env: { ...server.env, ...options.env } });


  it('kv put takes key=value, key=@file, key=- and a JSON object, and kv get prints it as a table, JSON, YAML or one field', async () => {
    writeFileSync(join(server.dir, 'pw.txt'), 'from-a-file');
    const put = await cli(['kv', 'put', 'secret/app/db', 'user=app', `password=@${join(server.dir, 'pw.txt')}`, 'note=-', '{"port": 5432}'], { input: 'from-stdin' });
    expect(put).toMatchObject({ code: 0, err: '' });
    expect(put.out).toContain('== Secret Path ==\nsecret/data/app/db');
    expect(put.out).toMatch(/^version\s+1$/m);

    const table = await cli(['kv', 'get', 'secret/app/db']);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^user\s+app$/m);
    expect(table.out).toMatch(/^password\s+from-a-file$/m);
    expect(table.out).toMatch(/^note\s+from-stdin$/m);
    expect(table.out).toMatch(/^port\s+5432$/m);
    expect((await cli(['kv', 'get', '-field=password', 'secret/app/db'])).out).toBe('from-a-file\n');
    const json = JSON.parse((await cli(['kv', 'get', '-format=json', '-mount=secret', 'app/db'])).out);
    expect(json.data.data).toEqual({ user: 'app', password: 'from-a-file', note: 'from-stdin', port: 5432 });
    const yaml = (await cli(['kv', 'get', 'secret/app/db'], { env: { VAULT_FORMAT: 'yaml' } })).out;
    expect(yaml).toMatch(/^ {4}user: app$/m);
    expect(yaml).toMatch(/^ {4}port: 5432$/m);

    // `-` alone is the whole secret from stdin.
    expect((await cli(['kv', 'put', '-mount=secret', 'app/whole', '-'], { input: '{"a": "b"}' })).code).toBe(0);
    expect((await cli(['kv', 'get', '-field=a', 'secret/app/whole'])).out).toBe('b\n');
    expect(await cli(['kv', 'put', 'secret/app/bad', '-'], { input: '[1]' })).toMatchObject({ code: 1, err: expect.stringContaining('must be a JSON object') });
  });

  it('kv patch, list, delete, undelete, destroy and metadata get|put|delete on a KV v2 mount', async () => {
    await cli(['kv', 'put', 'secret/team/svc', 'a=1', 'b=2']);
    const patch = await cli(['kv', 'patch', 'secret/team/svc', 'b=3']);
    expect(patch).toMatchObject({ code: 0 });
    expect(patch.out).toMatch(/^version\s+2$/m);
    expect(JSON.parse((await cli(['kv', 'get', '-format=json', 'secret/team/svc'])).out).data.data).toEqual({ a: '1', b: '3' });
    expect((await cli(['kv', 'get', '-version=1', '-field=b', 'secret/team/svc'])).out).toBe('2\n');

    expect((await cli(['kv', 'list', 'secret/team'])).out).toBe('Keys\n----\nsvc\n');
    expect(JSON.parse((await cli(['kv', 'list', '-format=json', 'secret'])).out)).toContain('team/');

    expect((await cli(['kv', 'delete', 'secret/team/svc'])).out).toBe('Success! Data deleted (if it existed) at: secret/data/team/svc\n');
    expect(await cli(['kv', 'get', 'secret/team/svc'])).toMatchObject({ code: 2, err: 'No value found at secret/data/team/svc\n' });
    expect((await cli(['kv', 'undelete', '-versions=2', 'secret/team/svc'])).out).toBe('Success! Data written to: secret/undelete/team/svc\n');
    expect((await cli(['kv', 'get', '-field=b', 'secret/team/svc'])).out).toBe('3\n');
    expect((await cli(['kv', 'delete', '-versions=2', 'secret/team/svc'])).out).toBe('Success! Data deleted (if it existed) at: secret/delete/team/svc\n');
    expect((await cli(['kv', 'destroy', '-versions=1', 'secret/team/svc'])).out).toBe('Success! Data written to: secret/destroy/team/svc\n');
    expect(await cli(['kv', 'destroy', 'secret/team/svc'])).toMatchObject({ code: 1, err: expect.stringContaining('-versions is required') });

    expect((await cli(['kv', 'metadata', 'put', '-max-versions=4', '-custom-metadata=owner=ops', '-custom-metadata=tier=1', 'secret/team/svc'])).out)
      .toBe('Success! Data written to: secret/metadata/team/svc\n');
    const meta = await cli(['kv', 'metadata', 'get', 'secret/team/svc']);
    expect(meta.out).toMatch(/^max_versions\s+4$/m);
    expect(meta.out).toMatch(/^custom_metadata\s+map\[owner:ops tier:1\]$/m);
    expect(meta.out).toContain('== Version 1 ==');
    expect(meta.out).toMatch(/^destroyed\s+true$/m);
    expect((await cli(['kv', 'metadata', 'get', '-field=current_version', 'secret/team/svc'])).out).toBe('2\n');
    expect((await cli(['kv', 'metadata', 'delete', 'secret/team/svc'])).out).toBe('Success! Data deleted (if it existed) at: secret/metadata/team/svc\n');
    expect((await cli(['kv', 'metadata', 'get', 'secret/team/svc'])).code).toBe(2);
  });

  it('kv finds a KV v1 mount from the server and uses its paths', async () => {
    expect((await cli(['secrets', 'enable', '-path=old', 'kv'])).out).toBe('Success! Enabled the kv secrets engine at: old/\n');
    expect((await cli(['kv', 'put', 'old/app', 'k=v'])).out).toBe('Success! Data written to: old/app\n');
    expect((await cli(['kv', 'get', '-field=k', 'old/app'])).out).toBe('v\n');
    expect((await cli(['read', '-field=k', 'old/app'])).out).toBe('v\n');
    expect((await cli(['kv', 'list', 'old'])).out).toBe('Keys\n----\napp\n');
    expect(await cli(['kv', 'patch', 'old/app', 'k=w'])).toMatchObject({ code: 1, err: expect.stringContaining('version 2') });
    expect((await cli(['kv', 'delete', 'old/app'])).out).toBe('Success! Data deleted (if it existed) at: old/app\n');
    expect((await cli(['kv', 'get', 'old/app'])).code).toBe(2);
    expect(await cli(['kv', 'get', 'nowhere/app'])).toMatchObject({ code: 1, err: expect.stringContaining('no KV mount holds "nowhere/app"') });
  });

  it('read, write, list and delete take the same values, and write PATH - reads the whole body from stdin', async () => {
    // The README's KV v2 write: the body with its data object, from stdin.
    const whole = await cli(['write', 'secret/data/app/api', '-'], { input: '{"data": {"key": "k1"}}' });
    expect(whole.code).toBe(0);
    expect(whole.out).toMatch(/^version\s+1$/m);
    expect((await cli(['read', '-field=data', 'secret/data/app/api'])).out).toBe('map[key:k1]\n');
    expect(JSON.parse((await cli(['read', '-format=json', 'secret/data/app/api'])).out).data.data).toEqual({ key: 'k1' });
    expect((await cli(['write', 'secret/data/app/api', '{"data": {"key": "k2"}}'])).code).toBe(0);

    await cli(['secrets', 'enable', '-path=plain', 'kv']);
    writeFileSync(join(server.dir, 'cert.pem'), 'PEM TEXT\n');
    expect((await cli(['write', 'plain/x', 'a=1', `cert=@${join(server.dir, 'cert.pem')}`, 'b=-'], { input: 'stdin text' })).out).toBe('Success! Data written to: plain/x\n');
    expect(JSON.parse((await cli(['read', '-format=json', 'plain/x'])).out).data).toEqual({ a: '1', cert: 'PEM TEXT\n', b: 'stdin text' });
    expect((await cli(['list', 'plain'])).out).toBe('Keys\n----\nx\n');
    expect((await cli(['delete', 'plain/x'])).out).toBe('Success! Data deleted (if it existed) at: plain/x\n');
    expect(await cli(['read', 'plain/x'])).toMatchObject({ code: 2, err: 'No value found at plain/x\n' });
    expect(await cli(['write', 'plain/x'])).toMatchObject({ code: 1, err: expect.stringContaining('Must supply data or use -force') });
    // Vault's -f is the short -force: a write that needs no data, such as creating a transit key.
    await cli(['secrets', 'enable', 'transit']);
    expect(await cli(['write', '-f', 'transit/keys/cli-key'])).toMatchObject({ code: 0 });
    expect(JSON.parse((await cli(['read', '-format=json', 'transit/keys/cli-key'])).out).data.name).toBe('cli-key');
    // A value typed without its key may be a secret: the error gives its place, not its text.
    const typo = await cli(['write', 'plain/x', 'a=1', 's3cret-value']);
    expect(typo).toMatchObject({ code: 1, err: expect.stringContaining('data argument 2 is not key=value') });
    expect(typo.err).not.toContain('s3cret');
    const badJson = await cli(['write', 'plain/x', '-'], { input: '{"p": s3cret}' });
    expect(badJson).toMatchObject({ code: 1, err: expect.stringContaining('stdin is not JSON') });
    expect(badJson.err).not.toContain('s3cret');
    const bad = await cli(['write', 'secret/data/app/api', 'data=not-an-object']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(`URL: PUT ${server.dev.address}/v1/secret/data/app/api`);
    expect(bad.err).toContain('Code: 400');
  });

  it('secrets enable|disable|list|tune and auth enable|disable|list', async () => {
    expect((await cli(['secrets', 'enable', 'kv-v2'])).out).toBe('Success! Enabled the kv secrets engine at: kv/\n');
    expect((await cli(['secrets', 'enable', '-path=t', '-description=for apps', 'transit'])).out).toBe('Success! Enabled the transit secrets engine at: t/\n');
    const list = await cli(['secrets', 'list']);
    expect(list.out).toMatch(/^t\/\s+transit\s+\S+\s+for apps$/m);
    expect(JSON.parse((await cli(['secrets', 'list', '-format=json'])).out)['kv/'].options.version).toBe('2');
    expect((await cli(['secrets', 'tune', '-max-lease-ttl=2h', 't'])).out).toBe('Success! Tuned the secrets engine at: t/\n');
    expect((await cli(['read', '-field=max_lease_ttl', 'sys/mounts/t/tune'])).out).toBe('7200\n');
    // Once values work, transit works through write.
    const enc = await cli(['write', '-field=ciphertext', 't/encrypt/k', `plaintext=${Buffer.from('hi').toString('base64')}`]);
    expect(enc.out).toMatch(/^vault:v1:/);
    expect((await cli(['secrets', 'disable', 't'])).out).toBe('Success! Disabled the secrets engine (if it existed) at: t/\n');
    expect((await cli(['secrets', 'list'])).out).not.toMatch(/^t\//m);

    expect((await cli(['auth', 'enable', '-path=machines', 'cloud1'])).out).toBe('Success! Enabled cloud1 auth method at: machines/\n');
    expect((await cli(['auth', 'list'])).out).toMatch(/^machines\/\s+cloud1\s/m);
    expect((await cli(['auth', 'disable', 'machines'])).out).toBe('Success! Disabled the auth method (if it existed) at: machines/\n');
    expect((await cli(['auth', 'list', '-format=json'])).out).not.toContain('machines/');
  });

  it('policy write from a file or stdin, read, list and delete', async () => {
    const file = join(server.dir, 'app.hcl');
    writeFileSync(file, 'path "secret/data/app/*" {\n  capabilities = ["read"]\n}\n');
    expect((await cli(['policy', 'write', 'app', file])).out).toBe('Success! Uploaded policy: app\n');
    expect((await cli(['policy', 'write', 'other', '-'], { input: 'path "x/*" { capabilities = ["list"] }' })).out).toBe('Success! Uploaded policy: other\n');
    expect((await cli(['policy', 'read', 'app'])).out).toBe('path "secret/data/app/*" {\n  capabilities = ["read"]\n}\n');
    expect((await cli(['policy', 'list'])).out.split('\n')).toEqual(expect.arrayContaining(['app', 'other', 'default']));
    expect((await cli(['policy', 'delete', 'other'])).out).toBe('Success! Deleted policy: other\n');
    expect(await cli(['policy', 'read', 'other'])).toMatchObject({ code: 2, err: 'No policy named: other\n' });
  });

  it('token create|lookup|renew|revoke, and login with a token', async () => {
    await cli(['policy', 'write', 'reader', '-'], { input: 'path "secret/data/*" { capabilities = ["read"] }' });
    const token = (await cli(['token', 'create', '-policy=reader', '-ttl=1h', '-field=token'])).out.trim();
    expect(token).toMatch(/^hvs\./);
    const lookup = await cli(['token', 'lookup', token]);
    expect(lookup.out).toMatch(/^policies\s+\[default reader\]$/m);
    expect((await cli(['token', 'lookup', '-field=policies'], { env: { VAULT_TOKEN: token } })).out).toBe('[default reader]\n');
    const renewed = await cli(['token', 'renew', '-increment=2h', '-format=json', token]);
    expect(JSON.parse(renewed.out).auth.lease_duration).toBe(7200);

    const login = await cli(['login', 'token=-'], { input: `${token}\n`, env: { VAULT_TOKEN: undefined } });
    expect(login.out).toContain('Success! You are now authenticated.');
    expect(login.out).toMatch(new RegExp(`^token\\s+${token.replace(/\./g, '\\.')}$`, 'm'));
    expect((await cli(['read', '-field=data', 'secret/data/app/db'], { env: { VAULT_TOKEN: token } })).code).toBe(0);
    const denied = await cli(['kv', 'put', 'secret/app/db', 'x=y'], { env: { VAULT_TOKEN: token } });
    expect(denied.code).toBe(2);
    expect(denied.err).toContain('Code: 403');

    expect((await cli(['token', 'revoke', token])).out).toBe('Success! Revoked token (if it existed)\n');
    expect((await cli(['token', 'lookup', token])).code).toBe(2);
    expect((await cli(['login', token])).code).toBe(2);
  });

  it('answers -h and --help on every command with its usage, flags and an example, without asking the server', async () => {
    const commands = [
      ['read'], ['write'], ['list'], ['delete'], ['login'], ['status'],
      ['kv', 'get'], ['kv', 'put'], ['kv', 'patch'], ['kv', 'list'], ['kv', 'delete'], ['kv', 'undelete'], ['kv', 'destroy'],
      ['kv', 'metadata', 'get'], ['kv', 'metadata', 'put'], ['kv', 'metadata', 'delete'],
      ['secrets', 'enable'], ['secrets', 'disable'], ['secrets', 'list'], ['secrets', 'tune'],
      ['auth', 'enable'], ['auth', 'disable'], ['auth', 'list'],
      ['policy', 'write'], ['policy', 'read'], ['policy', 'list'], ['policy', 'delete'],
      ['token', 'create'], ['token', 'lookup'], ['token', 'renew'], ['token', 'revoke'],
      ['operator', 'init'], ['operator', 'unseal'], ['operator', 'seal'],
      ['operator', 'raft', 'join'], ['operator', 'raft', 'list-peers'], ['operator', 'raft', 'remove-peer'],
      ['operator', 'raft', 'snapshot', 'save'], ['operator', 'raft', 'snapshot', 'restore'], ['operator', 'raft', 'autopilot', 'state'],
      ['operator', 'replication', 'status'], ['operator', 'replication', 'reindex'],
    ];
    // A closed address: help must not need the server.
    const offline = { VAULT_ADDR: 'http://127.0.0.1:9', VAULT_TOKEN: undefined };
    for (const [i, words] of commands.entries()) {
      const flag = i % 2 === 0 ? '-h' : '--help';
      const r = await run([...words, 'some/path', flag], { env: offline });
      expect({ words, code: r.code, err: r.err }).toEqual({ words, code: 0, err: '' });
      expect(r.out).toContain(`Usage: strongroom ${words.join(' ')}`);
      expect(r.out).toContain('Example:');
      expect(r.out).toContain('-address=ADDR');
    }
    expect((await run(['kv', 'put', '-h'], { env: offline })).out).toContain('-cas=N');
    expect((await run(['token', 'create', '--help'], { env: offline })).out).toContain('-policy=NAME');
    expect((await run(['kv', 'get', '-h'], { env: offline })).out).toContain('-format=table|json|yaml');
    const group = await run(['kv'], { env: offline });
    expect(group).toMatchObject({ code: 1, out: expect.stringContaining('metadata get') });
    expect((await run(['server', '--help'])).out).toContain('Usage: strongroom server');
    // A mistyped flag is refused, not ignored.
    expect(await run(['kv', 'get', '-feild=password', 'secret/app/db'], { env: offline })).toMatchObject({
      code: 1, err: expect.stringContaining('flag provided but not defined: -feild'),
    });
  }, 180_000);

  it('runs the README\'s client examples as written', async () => {
    const lines = readmeClientExamples();
    expect(lines.length).toBeGreaterThan(8);
    writeFileSync(join(server.dir, 'password.txt'), 'from-readme');
    writeFileSync(join(server.dir, 'app-read.hcl'), 'path "secret/data/app/*" { capabilities = ["read"] }\n');
    for (const line of lines) {
      const r = await sh(line, server.dir, server.env);
      expect({ line, code: r.code }).toEqual({ line, code: 0 });
    }
  }, 120_000);

  it('operator raft list-peers, autopilot state and snapshot save and restore', async () => {
    const peers = await cli(['operator', 'raft', 'list-peers']);
    expect(peers.out).toMatch(/^Node\s+Address\s+State\s+Voter$/m);
    expect(peers.out).toMatch(/\sleader\s+true$/m);
    expect((await cli(['operator', 'raft', 'autopilot', 'state'])).out).toMatch(/^Healthy:\s+true$/m);
    const file = join(server.dir, 'dev.snap');
    const saved = await cli(['operator', 'raft', 'snapshot', 'save', file]);
    expect(saved).toMatchObject({ code: 0, err: '', out: `Snapshot saved to ${file} (${statSync(file).size} bytes)\n` });
    await cli(['kv', 'put', 'secret/after-snapshot', 'a=b']);
    const restored = await cli(['operator', 'raft', 'snapshot', 'restore', file]);
    expect(restored).toMatchObject({ code: 0, err: '' });
    const deadline = Date.now() + 30_000;
    let after = await cli(['kv', 'get', 'secret/after-snapshot']);
    while (after.code !== 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      after = await cli(['kv', 'get', 'secret/after-snapshot']);
    }
    expect(after.code).toBe(2);
  }, 90_000);
});

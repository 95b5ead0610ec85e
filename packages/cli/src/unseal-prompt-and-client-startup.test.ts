import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './test-support/cli-runner';
import { useDevServer } from './test-support/dev-server-fixture';
import { startOnTerminal } from './test-support/terminal';

/**
 * Loaded with `node -r`: fails the command if it loads the server's code (the API, core, the
 * cluster, Raft or an engine), whether through require or import.
 */
const NO_SERVER_PRELOAD = `
const Module = require('node:module');
const SERVER = /[\\\\/]packages[\\\\/](api|core|cluster|raft|engines)[\\\\/]/;
const original = Module._load;
Module._load = function (request, parent, isMain) {
  let file = request;
  try { file = Module._resolveFilename(request, parent, isMain); } catch {}
  if (SERVER.test(file)) throw new Error('a client command loaded the server: ' + request);
  return original.apply(this, arguments);
};
process.on('exit', () => {
  const loaded = Object.keys(require.cache).filter((f) => SERVER.test(f));
  if (loaded.length > 0) {
    process.stderr.write('a client command loaded the server: ' + loaded[0] + '\\n');
    process.exitCode = 99;
  }
});
`;

describe('operator unseal on a terminal, and client commands without the server', () => {
  const server = useDevServer();


  it('runs client commands without loading the server\'s code; server does load it', async () => {
    const preload = join(server.dir, 'no-server.js');
    writeFileSync(preload, NO_SERVER_PRELOAD);
    const guarded = (args: string[], input?: string) => run(args, { env: server.env, nodeArgs: ['-r', preload], ...(input !== undefined ? { input } : {}) });
    for (const [args, input] of [
      [['status']], [['kv', 'put', 'secret/guarded', 'a=b']], [['kv', 'get', '-format=yaml', 'secret/guarded']],
      [['write', 'secret/data/guarded', '-'], '{"data": {"c": "d"}}'], [['read', '-format=json', 'secret/data/guarded']],
      [['secrets', 'list']], [['policy', 'list']], [['token', 'lookup']], [['login', server.dev.rootToken]],
      [['operator', 'raft', 'list-peers']], [['operator', 'replication', 'status']], [['kv', 'put', '-h']],
    ] as Array<[string[], string?]>) {
      const r = await guarded(args, input);
      expect({ args, code: r.code, err: r.err }).toEqual({ args, code: 0, err: '' });
    }
    // The guard itself works: the server command trips it.
    const serverCommand = await guarded(['server', '--help']);
    expect(serverCommand.code).not.toBe(0);
    expect(serverCommand.err).toContain('a client command loaded the server');
  }, 120_000);

  // script(1) is in Debian's bsdutils, an essential package: always there, so never skipped.
  it('asks for the unseal key without echo on a terminal (a pseudo-terminal made by script)', async () => {
    expect((await run(['operator', 'seal'], { env: server.env })).out).toBe('Success! Strongroom is sealed.\n');
    expect((await run(['status'], { env: server.env })).code).toBe(2);
    // script(1) runs the command on a pseudo-terminal and relays our pipe to it as the keyboard.
    const { proc, screen, exited } = startOnTerminal(['operator', 'unseal'], server.env);
    const deadline = Date.now() + 30_000;
    while (!screen().includes('Unseal Key (will be hidden): ') && Date.now() < deadline && proc.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    expect(screen()).toContain('Unseal Key (will be hidden): ');
    proc.stdin.write(`${server.dev.unsealKey}\r`);
    const deadline2 = Date.now() + 30_000;
    while (!/Sealed\s+false/.test(screen()) && Date.now() < deadline2 && proc.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    proc.stdin.end();
    expect(await exited).toBe(0);
    expect(screen()).toMatch(/Sealed\s+false/);
    // What was typed never reached the screen.
    expect(screen()).not.toContain(server.dev.unsealKey);
    expect((await run(['status'], { env: server.env })).code).toBe(0);
  }, 120_000);

  it('reads the unseal key from stdin when stdin is not a terminal, and says what is missing when it is empty', async () => {
    await run(['operator', 'seal'], { env: server.env });
    const none = await run(['operator', 'unseal'], { env: server.env });
    expect(none.code).toBe(1);
    expect(none.err).toContain('no unseal key');
    const piped = await run(['operator', 'unseal'], { env: server.env, input: `${server.dev.unsealKey}\n` });
    expect(piped).toMatchObject({ code: 0, err: '' });
    expect(piped.out).toMatch(/^Sealed\s+false$/m);
    expect(piped.out).not.toContain(server.dev.unsealKey);
  }, 60_000);
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBootstrapScript, runTopologyScript } from './scripts';

/** Bad command lines get exit code 2 and a message naming the argument; nothing is started. */

function sink(): { stream: NodeJS.WritableStream; text: () => string } {
  let text = '';
  return { stream: { write: (t: string) => { text += t; return true; } } as unknown as NodeJS.WritableStream, text: () => text };
}

test.each([
  [[], /missing command/],
  [['start', '--dir', '/tmp/x'], /unknown command "start"/],
  [['up'], /--dir is required/],
  [['up', '--dir'], /--dir needs a value/],
  [['up', '--dir', '/tmp/x', '--base-port', '80'], /--base-port must be a whole number from 1024 to 65000/],
  [['status', '--dir', '/tmp/x', '--base-port', '28200'], /unexpected argument "--base-port"/],
])('topology %j exits 2', async (argv, message) => {
  const out = sink();
  const err = sink();
  expect(await runTopologyScript(argv, out.stream, err.stream)).toBe(2);
  expect(err.text()).toMatch(message);
  expect(err.text()).toContain('usage: scripts/topology');
});

test('bootstrap without its directories exits 2 naming them', async () => {
  const err = sink();
  expect(await runBootstrapScript(['--topology', 'deploy/topology.json'], sink().stream, err.stream)).toBe(2);
  expect(err.text()).toMatch(/--topology, --operator-dir and --seal-token-dir are required/);
});

test('status and down of a directory with no topology say so; status exits 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-no-topology-'));
  try {
    const out = sink();
    expect(await runTopologyScript(['status', '--dir', dir], out.stream, sink().stream)).toBe(1);
    expect(await runTopologyScript(['down', '--dir', dir], out.stream, sink().stream)).toBe(0);
    expect(out.text()).toContain(`no topology in ${dir}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

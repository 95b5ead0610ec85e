import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * A `docker` for hosts without a Docker engine: it knows only `compose -f F [-p P] kill -s SIG
 * svc...` and `compose -f F [-p P] start svc...`, and does them to the local topology in
 * `$FAKE_DOCKER_TOPOLOGY` (service = node of its state file) with the topology's own kill and
 * start, which is what those commands do to a compose deployment's containers. Each call's argv is
 * appended to `$FAKE_DOCKER_CALLS` as one JSON line. Runs the BUILT cli (`tsc -b` first).
 */

const CLI_DIST = resolve(__dirname, '../../../dist/index.js');

const SCRIPT = `
'use strict';
const { appendFileSync } = require('node:fs');
const { readTopologyTarget, startNode } = require(${JSON.stringify(CLI_DIST)});

const dir = process.env.FAKE_DOCKER_TOPOLOGY;
const argv = process.argv.slice(2);
appendFileSync(process.env.FAKE_DOCKER_CALLS, JSON.stringify(argv) + '\\n');

function refuse(message) {
  process.stderr.write('unknown docker command: ' + message + '\\n');
  process.exit(125);
}

async function main() {
  if (argv[0] !== 'compose' || argv[1] !== '-f' || !argv[2]) refuse('expected compose -f FILE');
  let i = 3;
  if (argv[i] === '-p') {
    if (!argv[i + 1]) refuse('-p needs a name');
    i += 2;
  }
  const [command, ...rest] = argv.slice(i);
  if (command === 'kill') {
    if (rest[0] !== '-s' || !rest[1] || rest.length < 3) refuse('expected kill -s SIGNAL SERVICE...');
    const target = readTopologyTarget(dir);
    const nodes = [...target.pair, target.performance].filter(Boolean).flatMap((c) => c.nodes);
    for (const service of rest.slice(2)) {
      const node = nodes.find((n) => n.name === service);
      if (!node) throw new Error('No such service: ' + service);
      // Like the engine for a SIGKILL: back once the process is gone.
      await node.kill(rest[1]);
    }
  } else if (command === 'start') {
    if (rest.length === 0) refuse('expected start SERVICE...');
    for (const service of rest) startNode(dir, service);
  } else {
    refuse(String(command));
  }
}

main().catch((err) => {
  process.stderr.write('Error response from daemon: ' + err.message + '\\nsecond line\\n');
  process.exit(1);
});
`;

/** Writes `docker` into `binDir`, to be put first on PATH. */
export function installFakeDocker(binDir: string): string {
  mkdirSync(binDir, { recursive: true });
  const file = join(binDir, 'docker');
  writeFileSync(file, `#!${process.execPath}\n${SCRIPT}`);
  chmodSync(file, 0o755);
  return file;
}

/** The argv of every call so far, in order. */
export function fakeDockerCalls(file: string): string[][] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as string[]);
}

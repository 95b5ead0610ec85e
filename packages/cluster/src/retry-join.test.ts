import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@strongroom/base';
import { RetryJoin, type JoinState, type LeaderTls, type RetryJoinLeader } from './retry-join';

interface Line { level: string; msg: string; fields?: Record<string, unknown> }

function harness(leaders: RetryJoinLeader[], outcome: (leader: string) => 'fail' | 'pend') {
  const clock = new FakeClock();
  const lines: Line[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, ...(fields ? { fields } : {}) });
  const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const attempts: Array<{ at: number; leader: string; tls: LeaderTls }> = [];
  let state: JoinState = 'new';
  const loop = new RetryJoin({
    leaders, clock, logger,
    state: async () => state,
    join: async (leader, tls) => {
      attempts.push({ at: clock.now() - start, leader, tls });
      if (outcome(leader) === 'fail') throw new Error(`connect ECONNREFUSED for ${leader}`);
      state = 'pending';
    },
  });
  const start = clock.now();
  return { clock, lines, attempts, loop, setState: (s: JoinState) => { state = s; } };
}

test('tries each leader in turn, then waits longer after each failed round, up to 30 s, logging the leader and the cause', async () => {
  const h = harness([{ leaderApiAddr: 'http://10.0.0.1:8200' }, { leaderApiAddr: 'http://10.0.0.2:8200' }], () => 'fail');
  h.loop.start();
  await h.clock.advance(200_000);
  await h.loop.stop();
  const rounds = h.attempts.filter((a) => a.leader === 'http://10.0.0.1:8200').map((a) => a.at);
  expect(rounds.slice(0, 7)).toEqual([0, 2_000, 6_000, 14_000, 30_000, 60_000, 90_000]);
  expect(h.attempts.slice(0, 2).map((a) => a.leader)).toEqual(['http://10.0.0.1:8200', 'http://10.0.0.2:8200']);
  const failures = h.lines.filter((l) => l.level === 'warn');
  expect(failures[1]).toEqual({
    level: 'warn', msg: 'retry_join: could not join through this leader',
    fields: { leader_api_addr: 'http://10.0.0.2:8200', err: 'connect ECONNREFUSED for http://10.0.0.2:8200' },
  });
  expect(failures).toHaveLength(h.attempts.length);
});

test('moves on from a leader that fails to the next, and stops trying while the join is pending', async () => {
  const h = harness([{ leaderApiAddr: 'http://bogus:1' }, { leaderApiAddr: 'http://leader:8200' }], (l) => (l === 'http://bogus:1' ? 'fail' : 'pend'));
  h.loop.start();
  await h.clock.advance(60_000);
  expect(h.attempts.map((a) => a.leader)).toEqual(['http://bogus:1', 'http://leader:8200']);
  // The operator's unseal failed (wrong keys): the node is new again and the loop starts over.
  h.setState('new');
  await h.clock.advance(2_000);
  expect(h.attempts.map((a) => a.leader)).toEqual(['http://bogus:1', 'http://leader:8200', 'http://bogus:1', 'http://leader:8200']);
  h.setState('member');
  await h.clock.advance(60_000);
  expect(h.attempts).toHaveLength(4);
  expect(h.lines.at(-1)?.msg).toBe('retry_join: this node belongs to a cluster; nothing to join');
  await h.loop.stop();
});

test('a member never tries, and a stopped loop tries no more', async () => {
  const member = harness([{ leaderApiAddr: 'http://a:1' }], () => 'fail');
  member.setState('member');
  member.loop.start();
  await member.clock.advance(60_000);
  expect(member.attempts).toEqual([]);

  const stopped = harness([{ leaderApiAddr: 'http://a:1' }], () => 'fail');
  stopped.loop.start();
  await stopped.clock.advance(1);
  await stopped.loop.stop();
  await stopped.clock.advance(120_000);
  expect(stopped.attempts).toHaveLength(1);
});

/** File reads finish on real time, outside what the fake clock settles. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(done()).toBe(true);
}

test('reads the TLS files at each attempt and names an unreadable one without its content', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-retry-join-'));
  try {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'CA ONE');
    const h = harness([{ leaderApiAddr: 'https://a:8200', leaderCaCertFile: ca, leaderTlsServername: 'node1' }], () => 'fail');
    h.loop.start();
    await h.clock.advance(1);
    await until(() => h.attempts.length === 1 && h.lines.some((l) => l.msg.includes('trying again')));
    writeFileSync(ca, 'CA TWO');
    await h.clock.advance(2_000);
    await until(() => h.lines.filter((l) => l.msg.includes('trying again')).length === 2);
    expect(h.attempts.map((a) => a.tls)).toEqual([{ ca: 'CA ONE', servername: 'node1' }, { ca: 'CA TWO', servername: 'node1' }]);
    rmSync(ca);
    await h.clock.advance(4_000);
    await until(() => h.lines.filter((l) => l.msg.includes('trying again')).length === 3);
    await h.loop.stop();
    expect(h.attempts).toHaveLength(2);
    expect(h.lines.filter((l) => l.level === 'warn').at(-1)?.fields).toEqual({
      leader_api_addr: 'https://a:8200', err: `cannot read the leader_ca_cert_file file "${ca}": ENOENT`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

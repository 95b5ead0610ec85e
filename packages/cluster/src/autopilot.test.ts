import type { Logger } from '@strongroom/core';
import { Autopilot, type MemberView } from './autopilot';

const CONFIG = { stabilizationMs: 10_000, lastContactMs: 2_000, maxTrailingLogs: 1000 };

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push(`${level} ${String(fields?.['node_id'] ?? '')} ${msg}`);
  return { lines, debug: () => {}, info: log('info'), warn: log('warn'), error: log('error') };
}

const leader: MemberView = { id: 'a', self: true, voter: true, nonVoter: false, answered: false, contactMs: 0, trailing: 0, echo: undefined };

function member(id: string, over: Partial<MemberView> = {}): MemberView {
  return { id, self: false, voter: true, nonVoter: false, answered: true, contactMs: 100, trailing: 0, echo: { ageMs: 100, sealed: false }, ...over };
}

function learner(id: string, over: Partial<MemberView> = {}): MemberView {
  return member(id, { voter: false, ...over });
}

describe('autopilot', () => {
  test('a member just added has not answered the leader: unhealthy, never promoted, however fresh its contact count', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    const fresh = learner('c', { answered: false, contactMs: 0, echo: undefined });
    for (let now = 0; now <= 60_000; now += 500) {
      const { members, promote } = pilot.assess([leader, member('b'), fresh], now);
      expect(promote).toBeNull();
      expect(members.get('c')).toMatchObject({ healthy: false, healthySince: undefined });
      expect(members.get('c')?.reason).toMatch(/has not answered the leader.*cluster_addr/);
    }
  });

  test('a healthy learner is promoted once it has stayed healthy for the stabilization time, not before', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    const members = (now: number) => pilot.assess([leader, member('b'), learner('c')], now);
    expect(members(1_000)).toMatchObject({ promote: null });
    expect(members(1_000).members.get('c')).toMatchObject({ healthy: true, healthySince: 1_000, reason: expect.stringMatching(/server_stabilization_time \(10s\)/) });
    expect(members(10_999).promote).toBeNull();
    expect(members(11_000).promote).toBe('c');
  });

  test('any break in health starts the stabilization time over', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    pilot.assess([leader, learner('c')], 0);
    // Silent past the contact threshold for a moment at 8 s.
    expect(pilot.assess([leader, learner('c', { contactMs: 2_500 })], 8_000).members.get('c')).toMatchObject({ healthy: false, reason: expect.stringMatching(/last_contact_threshold/) });
    expect(pilot.assess([leader, learner('c')], 8_500).promote).toBeNull();
    expect(pilot.assess([leader, learner('c')], 18_499).promote).toBeNull();
    expect(pilot.assess([leader, learner('c')], 18_500).promote).toBe('c');
  });

  test('a sealed member, one that sent no seal status lately, and one whose log trails too far are unhealthy', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    const views = [
      leader,
      learner('sealed', { echo: { ageMs: 100, sealed: true } }),
      learner('silent', { echo: { ageMs: 4_001, sealed: false } }),
      learner('never', { echo: undefined }),
      learner('behind', { trailing: 1001 }),
    ];
    for (const now of [0, 20_000, 40_000]) {
      const { members, promote } = pilot.assess(views, now);
      expect(promote).toBeNull();
      expect(Object.fromEntries([...members].filter(([id]) => id !== 'a').map(([id, h]) => [id, h.healthy]))).toEqual({ sealed: false, silent: false, never: false, behind: false });
      expect(members.get('sealed')?.reason).toMatch(/sealed/);
      expect(members.get('silent')?.reason).toMatch(/seal status/);
      expect(members.get('behind')?.reason).toMatch(/max_trailing_logs/);
    }
  });

  test('a non-voter by request is healthy but never promoted', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    pilot.assess([leader, learner('n', { nonVoter: true })], 0);
    const { members, promote } = pilot.assess([leader, learner('n', { nonVoter: true })], 60_000);
    expect(promote).toBeNull();
    expect(members.get('n')).toMatchObject({ healthy: true, reason: expect.stringMatching(/non-voter/) });
  });

  test('no promotion that would leave the voters without a reachable quorum', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    const gone = { answered: true, contactMs: 30_000 };
    const views = [leader, member('b', gone), member('c', gone), learner('d')];
    pilot.assess(views, 0);
    const { members, promote } = pilot.assess(views, 20_000);
    expect(promote).toBeNull();
    expect(members.get('d')?.reason).toMatch(/reachable quorum/);
    // With one of them back, four voters of which three reach each other are a quorum.
    expect(pilot.assess([leader, member('b'), member('c', gone), learner('d')], 20_500).promote).toBe('d');
  });

  test('removing a voter is allowed only while the voters left include a reachable quorum', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    const gone = { answered: true, contactMs: 30_000 };
    const views = [leader, member('b'), member('c', gone), learner('d', gone)];
    // Without b, the leader alone of {a, c} is no quorum; without c, {a, b} both answer.
    expect(pilot.keepsQuorumWithout(views, 'b')).toBe(false);
    expect(pilot.keepsQuorumWithout(views, 'c')).toBe(true);
    // A learner does not count toward quorum: removing it changes nothing.
    expect(pilot.keepsQuorumWithout(views, 'd')).toBe(true);
  });

  test('one promotion at a time', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    pilot.assess([leader, learner('c'), learner('d')], 0);
    const { members, promote } = pilot.assess([leader, learner('c'), learner('d')], 10_000);
    expect(promote).toBe('c');
    expect(members.get('d')?.reason).toMatch(/another promotion/);
  });

  test('each change of reason is logged once, not on every look', () => {
    const log = recorder();
    const pilot = new Autopilot(CONFIG, log);
    const fresh = learner('c', { answered: false, contactMs: 0, echo: undefined });
    for (let now = 0; now < 5_000; now += 500) pilot.assess([leader, member('b'), fresh], now);
    pilot.assess([leader, member('b'), fresh], 5_000, { quiet: true });
    for (let now = 5_500; now < 20_000; now += 500) pilot.assess([leader, member('b'), learner('c')], now);
    expect(log.lines).toEqual([
      expect.stringMatching(/^warn c autopilot: has not answered the leader/),
      expect.stringMatching(/^info c autopilot: healthy, waiting out server_stabilization_time/),
      expect.stringMatching(/^info c autopilot: member is healthy$/),
    ]);
  });

  test('a new leader judges afresh: nobody is healthy until it has answered this leader', () => {
    const pilot = new Autopilot(CONFIG, recorder());
    pilot.assess([leader, member('b')], 0);
    pilot.reset();
    // Just after a failover the lost node's contact count is fresh, but it never answered.
    const { members } = pilot.assess([leader, member('b', { answered: false, contactMs: 0 })], 1_000);
    expect(members.get('b')).toMatchObject({ healthy: false, healthySince: undefined });
  });
});

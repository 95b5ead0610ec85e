import { Cluster } from '../sim/test-support/cluster';

/*
 * n3 holds uncommitted entries from a deposed leader, including one at exactly the index where
 * the new leader later snapshots, but of another term. When the snapshot arrives n3 must drop
 * its whole log: keeping the entries after the snapshot index would keep entries that conflict
 * with the leader's (and that the snapshot's index does not tell n3 to overwrite).
 */
test('the follower drops its log, installs the snapshot and then holds exactly the leader\'s entries', () => {
  const ids = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const cluster = new Cluster({ ids, seed: 21 });
  const old = cluster.waitForLeader();
  const follower = ids.find((id) => id !== old)!;
  const rest = ids.filter((id) => id !== old && id !== follower);
  // The old leader keeps only `follower`: a minority that cannot commit.
  cluster.network.partition([old, follower], rest);
  for (let i = 0; i < 12; i++) cluster.propose(old, `stale-${i}`);
  cluster.tick(2);
  const staleTerm = cluster.core(old).status().term;
  expect(cluster.core(follower).status().lastIndex).toBeGreaterThanOrEqual(13);

  // The majority elects a leader and commits a few entries of a newer term.
  cluster.tickUntil(() => rest.some((id) => cluster.core(id).status().role === 'leader'), 60, 'a majority leader');
  const leader = rest.find((id) => cluster.core(id).status().role === 'leader')!;
  for (let i = 0; i < 3; i++) cluster.propose(leader, `fresh-${i}`);
  cluster.tick(3);
  const snap = cluster.compact(leader)!;
  expect(snap.term).toBeGreaterThan(staleTerm);
  // The precondition: at the snapshot's index the follower holds an entry of the old term.
  expect(cluster.core(follower).logTerm(snap.index)).toBe(staleTerm);
  expect(cluster.core(follower).status().lastIndex).toBeGreaterThan(snap.index);

  const installedBefore = cluster.node(follower).snapshotsInstalled;
  cluster.network.heal();
  cluster.tickUntil(() => cluster.node(follower).snapshotsInstalled > installedBefore, 40, 'the snapshot installed');
  const f = cluster.core(follower);
  // Right after install the follower holds nothing above the snapshot from the old term.
  for (let i = snap.index + 1; i <= f.status().lastIndex; i++) expect(f.logTerm(i)).not.toBe(staleTerm);
  cluster.tick(5);
  const l = cluster.core(leader).status();
  expect(f.status()).toMatchObject({ firstIndex: snap.index + 1, lastIndex: l.lastIndex, commit: l.commit });
  for (let i = snap.index + 1; i <= l.lastIndex; i++) expect(f.logTerm(i)).toBe(cluster.core(leader).logTerm(i));
  cluster.checkLogs();
});

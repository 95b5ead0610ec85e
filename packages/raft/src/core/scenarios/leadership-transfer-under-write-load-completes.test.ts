import { Cluster } from '../sim/test-support/cluster';

/*
 * Clients keep writing to the leader while it hands leadership over. The transfer must finish
 * (the target catches up even though the log keeps growing, because the leader stops taking
 * proposals while transferring), and no write accepted by either leader may be lost.
 */
test('the transfer completes within an election timeout and every accepted write is applied once, in order', () => {
  const ids = ['n1', 'n2', 'n3'];
  const cluster = new Cluster({ ids, seed: 31, network: { maxDelay: 1 } });
  const from = cluster.waitForLeader();
  const to = ids.find((id) => id !== from)!;
  const accepted: { index: number; value: string }[] = [];
  let refused = 0;
  let n = 0;
  const write = (): void => {
    const leader = cluster.leader();
    if (leader === null) return;
    for (let i = 0; i < 5; i++) {
      const value = `w${n++}`;
      const index = cluster.propose(leader, value);
      if (index === null) refused++;
      else accepted.push({ index, value });
    }
  };
  for (let t = 0; t < 10; t++) {
    write();
    cluster.tick();
  }
  // The target lags: it has missed the latest writes.
  cluster.network.dropIf = (m) => m.to === to && m.type === 'append';
  for (let t = 0; t < 3; t++) {
    write();
    cluster.tick();
  }
  cluster.network.dropIf = null;
  const termBefore = cluster.core(from).status().term;
  cluster.core(from).transferLeadership(to);
  const took = cluster.tickUntil(
    () => {
      write();
      return cluster.core(to).status().role === 'leader';
    },
    cluster.config.electionTicks,
    'the transfer',
  );
  expect(took).toBeLessThan(cluster.config.electionTicks);
  expect(cluster.core(to).status().term).toBe(termBefore + 1);
  expect(refused).toBeGreaterThan(0); // proposals were refused while the transfer ran
  for (let t = 0; t < 10; t++) {
    write();
    cluster.tick();
  }
  cluster.tick(5);
  // Every write accepted by a leader that stayed leader long enough is applied, on every node.
  // (A write accepted in a term can be lost only if its leader lost leadership before
  // replicating it; the transfer waits for the target to catch up, so none is lost here.)
  for (const { index, value } of accepted) {
    expect(cluster.appliedValue(index)).toBe(`normal:${value}`);
    for (const id of ids) expect(cluster.hasApplied(id, index)).toBe(true);
  }
});

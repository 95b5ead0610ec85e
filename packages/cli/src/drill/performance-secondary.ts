import { canaryPath } from './canary-load';
import { call, must, poll } from '../node-api';
import { PERF, replicationStatus } from './replication-ops';
import type { StepLog } from './steps';
import type { DrillCluster, DrillNode } from './target';

/**
 * The performance secondary after a failover: its state as found, pointed at the new primary
 * when it does not stream from it, and a canary written on the new primary read back there.
 */

export interface PerformanceReport {
  name: string;
  state_before: string | null;
  state_after_failover: string | null;
  action: 'none' | 'update-primary' | null;
  /** How the secondary token for update-primary came: sealed to the secondary's public key (it needs no call to the new primary's API) or wrapped. */
  token_kind?: 'public-key' | 'wrapped';
  state: string | null;
  canary_read: boolean;
}

/** Whether the new primary's performance status shows the secondary connected. */
async function connectedTo(primaryAddr: string, secondaryId: string | undefined): Promise<boolean> {
  const p = await replicationStatus(primaryAddr, 'performance').catch(() => null);
  const peers = (p?.secondaries ?? []) as Array<{ node_id?: string; connection_status?: string }>;
  return peers.some((s) => s.connection_status === 'connected' && (secondaryId === undefined || s.node_id === secondaryId));
}

/** A secondary token for `id` on the new primary: sealed to the secondary's public key when it makes one (it need not reach the primary's API), else wrapped. */
async function secondaryToken(primaryAddr: string, rootToken: string, perf: DrillNode, perfToken: string, id: string): Promise<{ token: string; kind: 'public-key' | 'wrapped' }> {
  const generated = await call(perf.apiAddr, 'POST', `${PERF}/secondary/generate-public-key`, { token: perfToken, body: {} }).catch(() => null);
  const publicKey = generated?.status === 200 ? generated.json?.data?.secondary_public_key as string | undefined : undefined;
  const issued = await must('issuing a performance secondary token on the new primary', primaryAddr, 'POST', `${PERF}/primary/secondary-token`, {
    token: rootToken, body: { id, ...(publicKey ? { secondary_public_key: publicKey } : {}) },
  });
  return publicKey ? { token: issued.json.data?.token as string, kind: 'public-key' } : { token: issued.json.wrap_info?.token as string, kind: 'wrapped' };
}

export async function followNewPrimary(
  log: StepLog, perf: DrillCluster, perfToken: string, stateBefore: string | null,
  newPrimary: DrillNode, rootToken: string, canarySeq: number | null,
): Promise<PerformanceReport> {
  const node = perf.nodes[0] as DrillNode;
  const report: PerformanceReport = {
    name: perf.name, state_before: stateBefore, state_after_failover: null, action: null, state: null, canary_read: false,
  };
  await log.run('performance secondary: follow the new primary', async () => {
    const found = await replicationStatus(node.apiAddr, 'performance');
    report.state_after_failover = found.state ?? found.mode;
    const id = found.secondary_id as string | undefined;
    if (found.state === 'stream-wals' && await connectedTo(newPrimary.apiAddr, id)) {
      report.action = 'none';
    } else {
      const issued = await secondaryToken(newPrimary.apiAddr, rootToken, node, perfToken, id ?? perf.name);
      await must('update-primary on the performance secondary', node.apiAddr, 'POST', `${PERF}/secondary/update-primary`, { token: perfToken, body: { token: issued.token } });
      report.action = 'update-primary';
      report.token_kind = issued.kind;
    }
    await poll('the performance secondary to stream from the new primary', 3 * 60_000, async () => {
      const st = await replicationStatus(node.apiAddr, 'performance');
      return st.state === 'stream-wals' && await connectedTo(newPrimary.apiAddr, id) ? true : undefined;
    }, 250);
    report.state = 'stream-wals';
  }, () => `found ${report.state_after_failover}; ${report.action === 'none' ? 'already following' : `update-primary with a ${report.token_kind} token`}`);
  if (canarySeq !== null) {
    await log.run('performance secondary: canary read', async () => {
      await poll(`canary-${canarySeq} to read on the performance secondary`, 2 * 60_000, async () => {
        const r = await call(node.apiAddr, 'GET', canaryPath(canarySeq), { token: perfToken });
        return r.status === 200 && r.json?.data?.data?.seq === canarySeq ? true : undefined;
      }, 250);
      report.canary_read = true;
    }, () => `canary-${canarySeq}`);
  }
  return report;
}

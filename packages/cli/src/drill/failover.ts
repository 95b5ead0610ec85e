import { CanaryLoad, CANARY_MOUNT, type Ack } from './canary-load';
import { must, poll, sleep } from '../node-api';
import {
  activeNode, answeringNode, caughtUp, DR, drOperationToken, replicationStatus, streamingSecondary, unsealed,
} from './replication-ops';
import { StepLog, seconds, type Progress, type StepResult } from './steps';
import type { DrillCluster, DrillNode, DrillTarget } from './target';
import { verifyCanaries } from './verify-canaries';

/**
 * One failover of the DR pair, from the cluster that is primary to its DR secondary, with a
 * canary load across it, and the old primary made the new one's DR secondary afterwards.
 */

export type FailoverMode = 'planned' | 'unplanned';

export interface DrillContext {
  target: DrillTarget;
  progress: Progress;
  loadSeconds: number;
  concurrency: number;
  /** The last DR operation token made on each cluster (a cluster keeps one), deleted at the end. */
  operationTokens: Map<DrillCluster, string>;
}

export interface FailoverReport {
  mode: FailoverMode;
  from: string;
  to: string;
  ok: boolean;
  error?: string;
  rpo_writes_lost: number | null;
  rto_seconds: number | null;
  /** Every write the load had acknowledged, on either side of the failover. */
  canaries_acknowledged: number;
  /** Of those, the ones the old primary acknowledged: what the failover could lose. */
  canaries_acknowledged_before_failure: number;
  canaries_verified: number;
  /** The highest seq the old primary acknowledged, and the highest of those the promoted cluster holds. */
  last_acknowledged_seq: number | null;
  last_seq_on_promoted: number | null;
  /** The first few acknowledged seqs not found (or found with another nonce) on the promoted cluster. */
  missing_seqs: number[];
  load_write_failures: number;
  old_primary: { came_back_as: string | null; now: string | null };
  steps: StepResult[];
}

/** The new primary's active node and the highest seq written, for what runs after the failover. */
export interface FailoverOutcome {
  report: FailoverReport;
  newActive: DrillNode | null;
  /** The last seq the load took (a later load goes on from the next). */
  lastSeq: number;
  /** A canary the new primary acknowledged, for a read on the performance secondary. */
  canaryOnNew: number | null;
}

const MINUTE = 60_000;

async function ensureCanaryMount(addr: string, token: string): Promise<void> {
  const mounts = await must('listing the mounts', addr, 'GET', 'sys/mounts', { token });
  const listed = mounts.json.data ?? mounts.json;
  if (listed[`${CANARY_MOUNT}/`]) return;
  await must(`mounting KV v2 at ${CANARY_MOUNT}/ for the canaries`, addr, 'POST', `sys/mounts/${CANARY_MOUNT}`, { token, body: { type: 'kv', options: { version: '2' } } });
}

/**
 * After a failure between the primary's loss and a promotion, the clusters have no primary: the
 * old one serves again, as it was before the drill (restarted after a kill; promoted back after a
 * demote, which Vault's guide calls for too).
 */
async function rollBack(log: StepLog, from: DrillCluster, mode: FailoverMode, keyShares: string[], ctx: DrillContext): Promise<string> {
  return log.run('roll back: the old primary serves again', async () => {
    if (mode === 'unplanned') {
      for (const n of from.nodes) await n.start();
      for (const n of from.nodes) await unsealed(n, keyShares, 2 * MINUTE);
    } else {
      const n = await answeringNode(from);
      const opToken = await drOperationToken(n.apiAddr, keyShares);
      ctx.operationTokens.set(from, opToken);
      await must('promoting the demoted primary back', n.apiAddr, 'POST', `${DR}/secondary/promote`, { body: { dr_operation_token: opToken } });
    }
    await activeNode(from, 2 * MINUTE);
    return `DR primary again (${mode === 'unplanned' ? 'restarted' : 'promoted back'} after the failed failover)`;
  }, (now) => now);
}

function maxSeq(acks: Ack[]): number | null {
  return acks.length === 0 ? null : acks.reduce((m, a) => Math.max(m, a.seq), 0);
}

export async function runFailover(ctx: DrillContext, from: DrillCluster, to: DrillCluster, mode: FailoverMode, firstSeq: number, section: string): Promise<FailoverOutcome> {
  const { rootToken: token, keyShares } = ctx.target.credentials;
  const log = new StepLog(ctx.progress, section);
  const load = new CanaryLoad(token, ctx.concurrency, firstSeq);
  const report: FailoverReport = {
    mode, from: from.name, to: to.name, ok: false, rpo_writes_lost: null, rto_seconds: null,
    canaries_acknowledged: 0, canaries_acknowledged_before_failure: 0, canaries_verified: 0,
    last_acknowledged_seq: null, last_seq_on_promoted: null, missing_seqs: [], load_write_failures: 0,
    old_primary: { came_back_as: null, now: null }, steps: log.steps,
  };
  let newActive: DrillNode | null = null;
  let canaryOnNew: number | null = null;
  /** Set once the primary is demoted or killed: a failure before the promotion then rolls back to it. */
  let primaryLost = false;
  try {
    const oldActive = await log.run('pre-check', async () => {
      const active = await activeNode(from, MINUTE);
      const p = await replicationStatus(active.apiAddr, 'dr');
      if (p.mode !== 'primary' || p.state !== 'running') throw new Error(`the ${from.name} cluster is not a running DR primary (mode ${p.mode}, state ${p.state})`);
      await ensureCanaryMount(active.apiAddr, token);
      const lag = await poll(`the ${to.name} cluster's last_remote_wal to come within 10 of the primary's last_wal`, 2 * MINUTE, async () => {
        const { status: s } = await streamingSecondary(to, 10_000);
        const now = await replicationStatus(active.apiAddr, 'dr');
        const behind = (now.last_wal as number) - (s.last_remote_wal as number);
        return behind <= 10 ? { behind, lastWal: now.last_wal as number } : undefined;
      }, 250);
      return { active, lag };
    }, (v) => `primary ${v.active.name} running; ${to.name} streaming, ${v.lag.behind} WALs behind last_wal ${v.lag.lastWal}`);

    load.point(oldActive.active.apiAddr);
    await log.run('canary load', async () => {
      load.start();
      await sleep(ctx.loadSeconds * 1000);
      // A planned failover stops the writers before it demotes: what the primary acknowledged
      // is then all it will ever have, and the catch-up below waits for exactly that.
      if (mode === 'planned') await load.stop();
      return load.acks.length;
    }, (n) => `${n} canaries acknowledged`);

    if (mode === 'planned') {
      await log.run('secondary catch-up', () => caughtUp(from, to, 3 * MINUTE), (v) => `last_remote_wal ${v.lastRemoteWal} >= last_wal ${v.lastWal}`);
    }

    let failureAt = 0;
    if (mode === 'planned') {
      await log.run('failure: demote the primary', async () => {
        failureAt = Date.now();
        primaryLost = true;
        await must('demoting the primary', oldActive.active.apiAddr, 'POST', `${DR}/primary/demote`, { token, body: {} });
      });
    } else {
      await log.run('failure: SIGKILL every primary node', async () => {
        failureAt = Date.now();
        primaryLost = true;
        await Promise.all(from.nodes.map((n) => n.kill('SIGKILL')));
      }, () => `${from.nodes.length} nodes killed with the load running`);
    }

    const promoteAt = await log.run('DR operation token', async () => {
      const n = await answeringNode(to);
      ctx.operationTokens.set(to, await drOperationToken(n.apiAddr, keyShares));
      return n;
    }, (n) => `made on ${n.name} from ${keyShares.length} key shares`);

    newActive = await log.run('promote', async () => {
      await must('promoting the DR secondary', promoteAt.apiAddr, 'POST', `${DR}/secondary/promote`, { body: { dr_operation_token: ctx.operationTokens.get(to) } });
      return activeNode(to, 2 * MINUTE);
    }, (n) => `${to.name} promoted; active node ${n.name}`);
    const promoted = newActive;

    const firstAck = await log.run('first write on the new primary', async () => {
      load.point(promoted.apiAddr);
      load.start();
      const ack = await poll('a canary write acknowledged by the new primary', 2 * MINUTE, async () => load.firstAckOn(promoted.apiAddr, failureAt), 20);
      await load.stop();
      return ack;
    }, (a) => `canary-${a.seq}`);
    report.rto_seconds = seconds(firstAck.at - failureAt);
    canaryOnNew = firstAck.seq;

    await log.run('verify canaries', async () => {
      const acks = [...load.acks].sort((a, b) => a.seq - b.seq);
      const before = acks.filter((a) => a.addr !== promoted.apiAddr);
      const missing = await verifyCanaries(promoted.apiAddr, token, acks, ctx.concurrency);
      const lost = new Set(missing.map((a) => a.seq));
      report.canaries_acknowledged = acks.length;
      report.canaries_acknowledged_before_failure = before.length;
      report.canaries_verified = acks.length - missing.length;
      report.rpo_writes_lost = missing.length;
      report.missing_seqs = missing.slice(0, 20).map((a) => a.seq);
      report.last_acknowledged_seq = maxSeq(before);
      report.last_seq_on_promoted = maxSeq(before.filter((a) => !lost.has(a.seq)));
      report.load_write_failures = load.failures;
    }, () => `${report.canaries_verified} of ${report.canaries_acknowledged} found; RPO ${report.rpo_writes_lost} writes`);

    if (mode === 'unplanned') {
      await log.run('old primary: restart', async () => {
        for (const n of from.nodes) await n.start();
        for (const n of from.nodes) await unsealed(n, keyShares, 2 * MINUTE);
      }, () => `${from.nodes.length} nodes started`);
      await log.run('old primary: demote', async () => {
        const active = await activeNode(from, 2 * MINUTE);
        report.old_primary.came_back_as = (await replicationStatus(active.apiAddr, 'dr')).mode as string;
        if (report.old_primary.came_back_as === 'primary') {
          await must('demoting the old primary', active.apiAddr, 'POST', `${DR}/primary/demote`, { token, body: {} });
        }
      }, () => `it came back as a DR ${report.old_primary.came_back_as}${report.old_primary.came_back_as === 'primary' ? ' (a second primary): demoted' : ''}`);
    }

    const followerId = await log.run('old primary: update-primary', async () => {
      const id = `${from.name}-${Date.now()}`;
      const issued = await must('issuing a DR secondary token on the new primary', promoted.apiAddr, 'POST', `${DR}/primary/secondary-token`, {
        token, body: { id },
      });
      const secondaryToken = issued.json.wrap_info?.token as string;
      const n = await answeringNode(from);
      const opToken = await drOperationToken(n.apiAddr, keyShares);
      ctx.operationTokens.set(from, opToken);
      await must('update-primary on the old primary', n.apiAddr, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, token: secondaryToken } });
      return id;
    }, (id) => `with a DR operation token from its key shares; secondary id ${id}`);

    await log.run('old primary: streaming', () => caughtUp(to, from, 3 * MINUTE, followerId), (v) => `last_remote_wal ${v.lastRemoteWal} >= last_wal ${v.lastWal}`);
    report.old_primary.now = `DR secondary of ${to.name}`;
    report.ok = true;
  } catch (err) {
    report.error = (err as Error).message;
    await load.stop();
    if (primaryLost && newActive === null) {
      await rollBack(log, from, mode, keyShares, ctx).then(
        (now) => { report.old_primary.now = now; },
        () => undefined,
      );
    }
    // Stopped before the check: what was acknowledged is still told, unverified.
    if (report.rpo_writes_lost === null) {
      report.canaries_acknowledged = load.acks.length;
      report.load_write_failures = load.failures;
    }
  }
  return { report, newActive, lastSeq: load.nextSeq - 1, canaryOnNew };
}

